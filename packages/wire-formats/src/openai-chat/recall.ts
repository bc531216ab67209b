import type { ReportedUsage } from "../adapter.ts";
import { isRecord, stringOf } from "../json.ts";
import {
  addUsage,
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

// Recall in chat completions: terse_recall is one more `function` tool, its calls are
// `tool_calls` of the assistant's message, and each is answered by a `tool` message. In
// a stream, tool-call deltas are held until the finish chunk: only then is it known
// whether a terse_recall call is among them, and with it whether the turn ends here.

type Json = Record<string, unknown>;

export const records = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isRecord) : []);
export const count = (v: unknown): number => (typeof v === "number" ? v : 0);

/** What terse sends while it waits on a round: an SSE comment, which every SSE parser skips. */
export const SSE_KEEP_ALIVE = ": keep-alive\n\n";

export const NO_USAGE: ReportedUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

export const isNoUsage = (u: ReportedUsage): boolean =>
  u.input === 0 && u.output === 0 && u.cacheRead === 0 && u.cacheWrite === 0;

/** A call's arguments parsed; {} when they are not a JSON object (cut short, or not JSON). */
export function parseArguments(text: unknown): Json {
  if (typeof text !== "string") return {};
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : {};
  } catch {
    return {};
  }
}

/**
 * One SSE event to send: `raw` as the upstream sent it while its data is `original`
 * (the client gets the provider's own bytes), else `raw` with `data` in place of its
 * data and its other lines (`event:`, `id:`) kept.
 */
export function eventText(raw: string, original: Json, data: Json): string {
  if (data === original) return raw;
  const lines: string[] = [];
  let placed = false;
  for (const line of raw.split(/\r?\n/)) {
    if (line === "") continue;
    if (!line.startsWith("data:")) lines.push(line);
    else if (!placed) {
      lines.push(`data: ${JSON.stringify(data)}`);
      placed = true;
    }
  }
  if (!placed) lines.push(`data: ${JSON.stringify(data)}`);
  return `${lines.join("\n")}\n\n`;
}

/** The tool as chat completions declares it; built anew each time, the same bytes every time. */
/** The declaration, the same object in every request. */
const RECALL_TOOL: Json = frozenDeclaration({
  type: "function",
  function: { name: RECALL_TOOL_NAME, description: RECALL_TOOL_DESCRIPTION, parameters: recallToolParameters() },
});

/** A tool declaration or a tool call of terse_recall (both name their function in `function.name`). */
const isRecall = (entry: Json): boolean => isRecord(entry.function) && entry.function.name === RECALL_TOOL_NAME;

const firstChoice = (answer: Json): Json | undefined => records(answer.choices)[0];

function messageOf(answer: Json): Json {
  const message = firstChoice(answer)?.message;
  return isRecord(message) ? message : {};
}

function recallCall(call: Json): RecallCall {
  const fn = isRecord(call.function) ? call.function : {};
  return { id: stringOf(call.id) ?? "", args: parseArguments(fn.arguments) };
}

/**
 * How an OpenAI usage object names its counts: chat completions' prompt/completion
 * tokens, the Responses API's input/output tokens; cache reads in their details either way.
 */
export interface UsageNames {
  input: string;
  output: string;
  details: string;
}

const CHAT_USAGE: UsageNames = {
  input: "prompt_tokens",
  output: "completion_tokens",
  details: "prompt_tokens_details",
};

/** A usage object whose counts are `u` (its other details kept). */
export function usageWith(names: UsageNames, base: unknown, u: ReportedUsage): Json {
  const usage = isRecord(base) ? base : {};
  const details = isRecord(usage[names.details]) ? (usage[names.details] as Json) : undefined;
  return {
    ...usage,
    [names.input]: u.input,
    [names.output]: u.output,
    total_tokens: u.input + u.output,
    ...(details || u.cacheRead > 0 ? { [names.details]: { ...details, cached_tokens: u.cacheRead } } : {}),
  };
}

/** The counts of a usage object (OpenAI writes no cache writes: its cache costs nothing to fill). */
export function reportedOf(names: UsageNames, usage: Json): ReportedUsage {
  const details = isRecord(usage[names.details]) ? (usage[names.details] as Json) : {};
  return {
    input: count(usage[names.input]),
    output: count(usage[names.output]),
    cacheRead: count(details.cached_tokens),
    cacheWrite: 0,
  };
}

/** A choice without its terse_recall calls; with none of the client's left, an ordinary end of turn. */
function choiceWithoutRecall(choice: Json): Json {
  const message = isRecord(choice.message) ? choice.message : undefined;
  if (!message || !records(message.tool_calls).some(isRecall)) return choice;
  const { tool_calls, ...rest } = message;
  const kept = records(tool_calls).filter((call) => !isRecall(call));
  if (kept.length > 0) return { ...choice, message: { ...rest, tool_calls: kept } };
  const finish_reason = choice.finish_reason === "tool_calls" ? "stop" : choice.finish_reason;
  return { ...choice, message: { ...rest, content: rest.content ?? "" }, finish_reason };
}

const takesTool = (body: Json): boolean => !records(declaredTools(body)).some(isRecall);

export const chatRecall: RecallFormat = {
  takesTool,

  withTool: (body) => (takesTool(body) ? withToolLast(body, RECALL_TOOL) : body),

  calls: (answer) => records(messageOf(answer).tool_calls).filter(isRecall).map(recallCall),

  continueWith(request, answer, results) {
    const message = messageOf(answer);
    const turn: Json = {
      role: "assistant",
      content: message.content ?? null,
      // Servers that think aloud in chat completions (DeepSeek's, vLLM's) want it back within a turn.
      ...(typeof message.reasoning_content === "string" ? { reasoning_content: message.reasoning_content } : {}),
      tool_calls: records(message.tool_calls).filter(isRecall),
    };
    const answers = results.map((r) => ({ role: "tool", tool_call_id: r.call.id, content: r.text }));
    const messages = Array.isArray(request.messages) ? request.messages : [];
    return { ...request, messages: [...messages, turn, ...answers] };
  },

  withoutRecall(answer) {
    const choices = Array.isArray(answer.choices) ? answer.choices : [];
    if (!records(choices).some((c) => choiceWithoutRecall(c) !== c)) return answer;
    return { ...answer, choices: choices.map((c) => (isRecord(c) ? choiceWithoutRecall(c) : c)) };
  },

  merge(earlier, last, usage) {
    const first = earlier[0] ?? last;
    const texts = [...earlier, last].map((answer) => stringOf(messageOf(answer).content));
    const content = texts.some((t) => t !== undefined) ? texts.join("") : null;
    const [choice, ...others] = records(last.choices);
    const merged = choice
      ? { ...choice, message: { ...messageOf(last), content } }
      : { index: 0, message: { role: "assistant", content }, finish_reason: "stop" };
    return {
      ...last,
      id: first.id,
      created: first.created,
      choices: [merged, ...others],
      usage: usageWith(CHAT_USAGE, last.usage, usage),
    };
  },

  stream: () => new ChatRecallStream(),
};

/** A held event: its upstream text and data, and the data to send for it. */
interface Held {
  raw: string;
  original: Json;
  chunk: Json;
}

/** One choice chunk with its first choice replaced. */
function withChoice(chunk: Json, choice: Json): Json {
  const [, ...others] = Array.isArray(chunk.choices) ? chunk.choices : [];
  return { ...chunk, choices: [choice, ...others] };
}

/** A delta that says something (a role, text); `content: null` or "" alone says nothing. */
const saysSomething = (delta: Json): boolean =>
  Object.values(delta).some((v) => v !== null && v !== undefined && v !== "");

/** One streamed round: the answer its chunks build, and what of it is held back. */
class ChatRound {
  id: unknown;
  created: unknown;
  model: unknown;
  content: string | null = null;
  finishReason: unknown = null;
  usage: Json | undefined;
  /** The calls as their deltas build them, by their index. */
  readonly calls = new Map<number, { id: string; name: string; arguments: string }>();
  /** Tool-call chunks (their tool_calls only), until the finish. */
  held: Held[] = [];
  /** The finish chunk, held when the turn calls terse_recall: what comes after it waits too. */
  finish: Held | undefined;
  /** Events after a held finish (the usage chunk, [DONE]), as they would be sent. */
  readonly tail: string[] = [];

  note(chunk: Json): void {
    this.id ??= chunk.id;
    this.created ??= chunk.created;
    this.model ??= chunk.model;
    if (isRecord(chunk.usage)) this.usage = chunk.usage;
    const choice = records(chunk.choices)[0];
    if (!choice) return;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    if (typeof delta.content === "string") this.content = (this.content ?? "") + delta.content;
    for (const call of records(delta.tool_calls)) {
      const index = count(call.index);
      const fn = isRecord(call.function) ? call.function : {};
      const known = this.calls.get(index) ?? { id: "", name: "", arguments: "" };
      this.calls.set(index, {
        id: stringOf(call.id) ?? known.id,
        name: stringOf(fn.name) ?? known.name,
        arguments: known.arguments + (stringOf(fn.arguments) ?? ""),
      });
    }
    if (choice.finish_reason != null) this.finishReason = choice.finish_reason;
  }

  callsRecall(): boolean {
    return [...this.calls.values()].some((call) => call.name === RECALL_TOOL_NAME);
  }

  /** The client's calls' indexes, renumbered in order from 0 (terse_recall's taken out). */
  clientIndexes(): Map<number, number> {
    const kept = [...this.calls.entries()].filter(([, call]) => call.name !== RECALL_TOOL_NAME);
    return new Map(
      kept
        .map(([index]) => index)
        .sort((a, b) => a - b)
        .map((index, i) => [index, i]),
    );
  }

  answer(): Json {
    const tool_calls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, c]) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
    const message = { role: "assistant", content: this.content, ...(tool_calls.length > 0 ? { tool_calls } : {}) };
    return {
      id: this.id,
      object: "chat.completion",
      created: this.created,
      model: this.model,
      choices: [{ index: 0, message, finish_reason: this.finishReason }],
      ...(this.usage ? { usage: this.usage } : {}),
    };
  }
}

class ChatRecallStream implements RecallStream {
  readonly keepAlive = SSE_KEEP_ALIVE;
  private prior = NO_USAGE;
  private continued = false;
  /** The first round's chunk id and time, which every chunk the client gets carries. */
  private opening: { id: unknown; created: unknown } | undefined;
  private round = new ChatRound();

  push(raw: string, data: unknown): string {
    const round = this.round;
    if (!isRecord(data)) {
      if (!round.finish) return raw;
      round.tail.push(raw);
      return "";
    }
    this.opening ??= { id: data.id, created: data.created };
    round.note(data);
    const choice = records(data.choices)[0];
    if (round.finish) {
      round.tail.push(this.relayed(raw, data));
      return "";
    }
    return choice ? this.choiceChunk(raw, data, choice) : this.relayed(raw, data);
  }

  end(): { calls: RecallCall[]; answer: Json; release: string } {
    const round = this.round;
    const answer = round.answer();
    let release = this.releaseCalls();
    if (round.finish) {
      const { raw, original, chunk } = round.finish;
      const choice = records(chunk.choices)[0] ?? {};
      const ends = round.clientIndexes().size === 0 && choice.finish_reason === "tool_calls";
      release += this.relayed(raw, original, ends ? withChoice(chunk, { ...choice, finish_reason: "stop" }) : chunk);
      release += round.tail.join("");
    }
    return { calls: chatRecall.calls(answer), answer, release };
  }

  nextRound(prior: ReportedUsage): void {
    this.prior = prior;
    this.continued = true;
    this.round = new ChatRound();
  }

  /** A chunk of the choice: what it says relayed at once, its tool-call deltas held, its finish held when the turn calls terse_recall. */
  private choiceChunk(raw: string, data: Json, choice: Json): string {
    const round = this.round;
    const { tool_calls, ...said } = isRecord(choice.delta) ? choice.delta : {};
    const finish = choice.finish_reason ?? null;
    const hasCalls = Array.isArray(tool_calls);
    if (hasCalls) {
      const onlyCalls = Object.keys(said).length === 0 && finish === null;
      const chunk = onlyCalls ? data : withChoice(data, { ...choice, delta: { tool_calls }, finish_reason: null });
      round.held.push({ raw, original: data, chunk });
    }
    const saying = () =>
      saysSomething(said)
        ? this.relayed(raw, data, withChoice(data, { ...choice, delta: said, finish_reason: null }))
        : "";
    if (finish !== null && round.callsRecall()) {
      round.finish = { raw, original: data, chunk: withChoice(data, { ...choice, delta: {} }) };
      return saying();
    }
    if (finish !== null) {
      const rest = hasCalls ? withChoice(data, { ...choice, delta: said }) : data;
      return this.releaseCalls() + this.relayed(raw, data, rest);
    }
    return hasCalls ? saying() : this.relayed(raw, data);
  }

  /** The held tool-call chunks less terse_recall's calls, the rest renumbered from 0. */
  private releaseCalls(): string {
    const indexes = this.round.clientIndexes();
    let out = "";
    for (const { raw, original, chunk } of this.round.held) {
      const choice = records(chunk.choices)[0] ?? {};
      const delta = isRecord(choice.delta) ? choice.delta : {};
      const calls = records(delta.tool_calls);
      const kept = calls.filter((call) => indexes.has(count(call.index)));
      if (kept.length === 0) continue;
      const renumbered = kept.map((call) => {
        const index = indexes.get(count(call.index));
        return index === call.index ? call : { ...call, index };
      });
      const same = renumbered.length === calls.length && renumbered.every((call, i) => call === calls[i]);
      const sent = same ? chunk : withChoice(chunk, { ...choice, delta: { ...delta, tool_calls: renumbered } });
      out += this.relayed(raw, original, sent);
    }
    this.round.held = [];
    return out;
  }

  /** A chunk as the client gets it: in a continuation, under the first round's id, without a second opening; with earlier rounds' usage added. */
  private relayed(raw: string, original: Json, chunk: Json = original): string {
    let next = chunk;
    if (isRecord(next.usage) && !isNoUsage(this.prior))
      next = {
        ...next,
        usage: usageWith(CHAT_USAGE, next.usage, addUsage(reportedOf(CHAT_USAGE, next.usage), this.prior)),
      };
    if (this.continued) {
      const opening = this.opening ?? { id: next.id, created: next.created };
      if (next.id !== opening.id || next.created !== opening.created)
        next = { ...next, id: opening.id, created: opening.created };
      const choice = records(next.choices)[0];
      const delta = isRecord(choice?.delta) ? choice.delta : undefined;
      if (choice && delta && "role" in delta) {
        const { role: _, ...rest } = delta;
        if (!saysSomething(rest) && choice.finish_reason == null) return "";
        next = withChoice(next, { ...choice, delta: rest });
      }
    }
    return eventText(raw, original, next);
  }
}
