import type { ReportedUsage } from "../adapter.ts";
import { isRecord, stringOf } from "../json.ts";
import {
  declaredTools,
  frozenDeclaration,
  RECALL_TOOL_DESCRIPTION,
  RECALL_TOOL_NAME,
  type RecallCall,
  type RecallFormat,
  type RecallStream,
  recallToolParameters,
  withToolLast,
} from "../recall.ts";
import { closedRequestReason } from "./closed-request.ts";
import { geminiFormat } from "./request-view.ts";

// Recall in Gemini generateContent: terse_recall is declared in a tool object of its own,
// last in `tools`; a call is a `functionCall` part of the model's content, its answer a
// `functionResponse` part of the next user turn. A stream is a sequence of whole
// GenerateContentResponse chunks: parts come spread over them, and the last chunk's
// usageMetadata is the total.

type Json = Record<string, unknown>;

/** The declaration, the same object in every request. */
const RECALL_TOOL: Json = frozenDeclaration({
  functionDeclarations: [
    { name: RECALL_TOOL_NAME, description: RECALL_TOOL_DESCRIPTION, parameters: inCapitals(recallToolParameters()) },
  ],
});

/**
 * Gemini's `parameters` is its own Schema (an OpenAPI subset) whose types are an enum
 * spelt in capitals (OBJECT, STRING): the form every API version and model accepts.
 */
function inCapitals(schema: Json): Json {
  const out: Json = { ...schema };
  if (typeof out.type === "string") out.type = out.type.toUpperCase();
  if (isRecord(out.properties)) {
    out.properties = Object.fromEntries(
      Object.entries(out.properties).map(([name, sub]) => [name, isRecord(sub) ? inCapitals(sub) : sub]),
    );
  }
  return out;
}

const declares = (tool: unknown): boolean =>
  isRecord(tool) &&
  Array.isArray(tool.functionDeclarations) &&
  tool.functionDeclarations.some((d) => isRecord(d) && d.name === RECALL_TOOL_NAME);

const isCall = (part: Json): boolean => isRecord(part.functionCall);
const isRecallCall = (part: Json): boolean =>
  isRecord(part.functionCall) && part.functionCall.name === RECALL_TOOL_NAME;

const candidateOf = (answer: Json): Json | undefined =>
  Array.isArray(answer.candidates) && isRecord(answer.candidates[0]) ? answer.candidates[0] : undefined;

function partsOf(answer: Json): Json[] {
  const content = candidateOf(answer)?.content;
  return isRecord(content) && Array.isArray(content.parts) ? content.parts.filter(isRecord) : [];
}

function callOf(part: Json): RecallCall {
  const call = isRecord(part.functionCall) ? part.functionCall : {};
  return { id: stringOf(call.id) ?? "", args: isRecord(call.args) ? call.args : {} };
}

/**
 * `parts` less the ones `drop` picks. Gemini signs the first functionCall part of a turn
 * (thoughtSignature) and refuses a turn whose calls lost it: a dropped call's signature
 * moves to the first call kept, if that has none.
 */
function dropParts(parts: Json[], drop: (part: Json) => boolean): Json[] {
  const kept = parts.filter((p) => !drop(p));
  const signature = parts.find((p) => drop(p) && isCall(p) && p.thoughtSignature !== undefined)?.thoughtSignature;
  const first = kept.findIndex(isCall);
  const firstCall = kept[first];
  if (signature !== undefined && firstCall && firstCall.thoughtSignature === undefined) {
    kept[first] = { ...firstCall, thoughtSignature: signature };
  }
  return kept;
}

/**
 * `answer` with its first candidate's parts replaced. A content left without parts gets
 * one empty text part, as Gemini itself sends: @google/genai's chat takes a response
 * with no parts for an invalid one and leaves the turn out of its history.
 */
function withParts(answer: Json, parts: Json[]): Json {
  const candidate = candidateOf(answer);
  if (!candidate) return answer;
  const content = isRecord(candidate.content) ? candidate.content : { role: "model" };
  const rest = Array.isArray(answer.candidates) ? answer.candidates.slice(1) : [];
  const kept = parts.length > 0 ? parts : [{ text: "" }];
  return { ...answer, candidates: [{ ...candidate, content: { ...content, parts: kept } }, ...rest] };
}

const withoutRecall = (answer: Json): Json => withParts(answer, dropParts(partsOf(answer), isRecallCall));

const count = (v: unknown): number => (typeof v === "number" ? v : 0);

/** usageMetadata with the earlier rounds' usage added (output to candidates: the reader adds thoughts to it). */
function withPrior(meta: Json, prior: ReportedUsage): Json {
  const cached = count(meta.cachedContentTokenCount) + prior.cacheRead;
  return {
    ...meta,
    promptTokenCount: count(meta.promptTokenCount) + prior.input,
    candidatesTokenCount: count(meta.candidatesTokenCount) + prior.output,
    totalTokenCount: count(meta.totalTokenCount) + prior.input + prior.output,
    ...(cached > 0 ? { cachedContentTokenCount: cached } : {}),
  };
}

/**
 * Not beside the caller's own terse_recall, nor beside a JSON response: Gemini refuses
 * function declarations there (400 "Function calling with a response mime type:
 * 'application/json' is unsupported"; such a request is a router's side call, not the
 * session's turns), nor in a request that takes no tools at all (closed-request.ts).
 */
const takesTool = (body: Json, model: string | undefined): boolean =>
  !declaredTools(body).some(declares) && !geminiFormat.structuredOutput(body) && !closedRequestReason(body, model);

export const geminiRecall: RecallFormat = {
  takesTool,

  // A tool object of its own: the caller's declarations stay byte for byte as sent.
  withTool: (body) => (takesTool(body, undefined) ? withToolLast(body, RECALL_TOOL) : body),

  calls: (answer) => partsOf(answer).filter(isRecallCall).map(callOf),

  continueWith(request, answer, results) {
    const turn = dropParts(partsOf(answer), (p) => isCall(p) && !isRecallCall(p));
    const answers = results.map((r) => ({
      functionResponse: {
        ...(r.call.id ? { id: r.call.id } : {}),
        name: RECALL_TOOL_NAME,
        response: { content: r.text },
      },
    }));
    const contents = Array.isArray(request.contents) ? request.contents : [];
    return {
      ...request,
      contents: [...contents, { role: "model", parts: turn }, { role: "user", parts: answers }],
    };
  },

  withoutRecall,

  merge(earlier, last, usage) {
    // Earlier rounds' client calls were never run (the model was asked again without them).
    const before = earlier.flatMap((a) => partsOf(a).filter((p) => !isCall(p)));
    const final = withoutRecall(last);
    const merged = withParts(final, [...before, ...partsOf(final)]);
    const first = earlier[0] ?? last;
    const thoughts = [...earlier, last].reduce(
      (n, a) => n + count(isRecord(a.usageMetadata) ? a.usageMetadata.thoughtsTokenCount : 0),
      0,
    );
    return {
      ...merged,
      ...(first.responseId !== undefined ? { responseId: first.responseId } : {}),
      usageMetadata: {
        promptTokenCount: usage.input,
        candidatesTokenCount: usage.output - thoughts,
        ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
        ...(usage.cacheRead > 0 ? { cachedContentTokenCount: usage.cacheRead } : {}),
        totalTokenCount: usage.input + usage.output,
      },
    };
  },

  stream: () => new GeminiRecallStream(),
};

const sse = (data: Json): string => `data: ${JSON.stringify(data)}\n\n`;

/**
 * From the first chunk carrying a functionCall part, the round's chunks are held (in
 * order) until it ends; the others are relayed at once. Text the model wrote beside a
 * recall call, in the chunks held, reaches the client at the start of the continuation.
 */
class GeminiRecallStream implements RecallStream {
  // A blank line: every SSE reader skips it. Not an SSE comment: @google/genai before 2.x
  // (1.30, which Gemini CLI 0.61 bundles) only takes `data:` lines from the front of its
  // buffer, so a comment there stays and every event after it piles up behind it.
  readonly keepAlive = "\n\n";

  private prior: ReportedUsage | undefined;
  /** The client's response id (its first chunk's): continuations carry it on. */
  private responseId: string | undefined;
  /** What the previous round wrote beside its recall call, sent before the continuation. */
  private carried = "";

  // The round's state.
  private chunks: Json[] = [];
  private held: { raw: string; data: Json }[] = [];

  push(raw: string, data: unknown): string {
    if (!isRecord(data)) return raw;
    this.chunks.push(data);
    this.responseId ??= stringOf(data.responseId);
    if (this.held.length > 0 || partsOf(data).some(isCall)) {
      this.held.push({ raw, data });
      return "";
    }
    const out = this.carried + this.continued(raw, data);
    this.carried = "";
    return out;
  }

  end(): { calls: RecallCall[]; answer: Json; release: string } {
    const calls = this.chunks.flatMap((c) => partsOf(c).filter(isRecallCall)).map(callOf);
    let release = this.carried;
    for (const { raw, data } of this.held) {
      const chunk = calls.length > 0 ? this.stripped(data) : data;
      if (chunk) release += this.continued(chunk === data ? raw : undefined, chunk);
    }
    return { calls, answer: this.answer(), release };
  }

  nextRound(prior: ReportedUsage): void {
    this.prior = prior;
    this.carried += this.besideCalls();
    this.chunks = [];
    this.held = [];
  }

  /** A held chunk without its recall calls; undefined when nothing is left worth sending. */
  private stripped(chunk: Json): Json | undefined {
    const parts = partsOf(chunk);
    if (!parts.some(isRecallCall)) return chunk;
    const kept = dropParts(parts, isRecallCall);
    if (kept.length === 0 && candidateOf(chunk)?.finishReason === undefined) return undefined;
    return withParts(chunk, kept);
  }

  /** The held chunks' text and thoughts as one chunk, "" when they hold none. */
  private besideCalls(): string {
    const parts = this.held
      .flatMap((c) => partsOf(c.data))
      .filter((p) => !isCall(p) && (stringOf(p.text) ?? "") !== "");
    if (parts.length === 0) return "";
    const chunk: Json = { candidates: [{ content: { role: "model", parts }, index: 0 }] };
    if (this.responseId !== undefined) chunk.responseId = this.responseId;
    return sse(chunk);
  }

  /** The chunk as the client sees it: the earlier rounds' usage added, the client's response id. */
  private continued(raw: string | undefined, chunk: Json): string {
    const foreignId = chunk.responseId !== undefined && chunk.responseId !== this.responseId;
    if (raw !== undefined && !this.prior && !foreignId) return raw;
    const out: Json = { ...chunk };
    if (foreignId) out.responseId = this.responseId;
    if (this.prior && isRecord(chunk.usageMetadata)) out.usageMetadata = withPrior(chunk.usageMetadata, this.prior);
    return sse(out);
  }

  /** The round's answer as one GenerateContentResponse: its parts in order, the last chunk's usage. */
  private answer(): Json {
    const parts = mergeText(this.chunks.flatMap(partsOf));
    const last = this.chunks.at(-1) ?? {};
    const finish = this.chunks.map((c) => candidateOf(c)?.finishReason).findLast((f) => f !== undefined);
    const usage = this.chunks.map((c) => c.usageMetadata).findLast(isRecord);
    const candidate: Json = { ...candidateOf(last), content: { role: "model", parts } };
    if (finish !== undefined) candidate.finishReason = finish;
    const answer: Json = { ...last, candidates: [candidate] };
    if (usage) answer.usageMetadata = usage;
    return answer;
  }
}

/**
 * Adjacent text pieces joined into one part, as a whole answer has them. Only plain
 * pieces (text, and the same `thought` flag): a signed part keeps its place.
 */
function mergeText(parts: Json[]): Json[] {
  const plain = (p: Json) => typeof p.text === "string" && Object.keys(p).every((k) => k === "text" || k === "thought");
  const out: Json[] = [];
  for (const part of parts) {
    const prev = out.at(-1);
    if (prev && plain(prev) && plain(part) && prev.thought === part.thought) {
      out[out.length - 1] = { ...prev, text: `${String(prev.text)}${String(part.text)}` };
    } else {
      out.push(part);
    }
  }
  return out;
}
