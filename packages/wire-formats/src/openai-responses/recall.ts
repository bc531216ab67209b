import type { ReportedUsage } from "../adapter.ts";
import { isRecord, stringOf } from "../json.ts";
import {
  count,
  eventText,
  isNoUsage,
  NO_USAGE,
  parseArguments,
  records,
  reportedOf,
  SSE_KEEP_ALIVE,
  type UsageNames,
  usageWith,
} from "../openai-chat/recall.ts";
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

// Recall in the Responses API: terse_recall is one more `function` tool, a call is a
// `function_call` output item, and its answer a `function_call_output` input item. A
// stream numbers its events (`sequence_number`) and its output items (`output_index`):
// a continuation's are carried on from what the client has seen, and its final
// `response.completed` carries every round's visible output under the first response's
// id. A call item's events are held until the response ends: only then is it known
// whether a terse_recall call is among the calls, and with it whether the turn ends here.

type Json = Record<string, unknown>;

/** Output items the client runs itself: held in a stream, and dropped with a round that goes on. */
const CLIENT_CALLS = new Set([
  "function_call",
  "custom_tool_call",
  "local_shell_call",
  "shell_call",
  "apply_patch_call",
  "computer_call",
]);

/** The events that open a response: a continuation's are not sent (the client's response is open). */
const OPENING = new Set(["response.created", "response.queued", "response.in_progress"]);
/** The events that end a response, each carrying it whole. */
const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);

/** The declaration, the same object in every request. */
const RECALL_TOOL: Json = frozenDeclaration({
  type: "function",
  name: RECALL_TOOL_NAME,
  description: RECALL_TOOL_DESCRIPTION,
  parameters: recallToolParameters(),
  strict: false,
});

const isRecallItem = (item: Json): boolean => item.type === "function_call" && item.name === RECALL_TOOL_NAME;
const isCallItem = (item: Json): boolean => typeof item.type === "string" && CLIENT_CALLS.has(item.type);
/** The model's turn as the next round's input carries it: text, reasoning and terse_recall calls. */
const isTurnItem = (item: Json): boolean => item.type === "message" || item.type === "reasoning" || isRecallItem(item);

const RESPONSES_USAGE: UsageNames = { input: "input_tokens", output: "output_tokens", details: "input_tokens_details" };

/** The text of the output's messages, as the SDKs' `output_text` gives it. */
const outputText = (output: Json[]): string =>
  output
    .filter((item) => item.type === "message")
    .flatMap((item) => records(item.content))
    .map((part) => (part.type === "output_text" ? (stringOf(part.text) ?? "") : ""))
    .join("");

const takesTool = (body: Json): boolean => !records(declaredTools(body)).some((tool) => tool.name === RECALL_TOOL_NAME);

export const responsesRecall: RecallFormat = {
  takesTool,

  withTool: (body) => (takesTool(body) ? withToolLast(body, RECALL_TOOL) : body),

  calls: (answer) =>
    records(answer.output)
      .filter(isRecallItem)
      .map((item) => ({ id: stringOf(item.call_id) ?? "", args: parseArguments(item.arguments) })),

  continueWith(request, answer, results) {
    const input = typeof request.input === "string" ? [{ role: "user", content: request.input }] : request.input;
    const turn = records(answer.output).filter(isTurnItem);
    const outputs = results.map((r) => ({ type: "function_call_output", call_id: r.call.id, output: r.text }));
    return { ...request, input: [...(Array.isArray(input) ? input : []), ...turn, ...outputs] };
  },

  withoutRecall(answer) {
    const output = records(answer.output);
    if (!output.some(isRecallItem)) return answer;
    return { ...answer, output: output.filter((item) => !isRecallItem(item)) };
  },

  merge(earlier, last, usage) {
    const first = earlier[0] ?? last;
    // Earlier rounds' calls were terse_recall's, or the client's dropped with the round (made again if still wanted).
    const shown = earlier.flatMap((answer) => records(answer.output).filter((item) => !isCallItem(item)));
    const output = [...shown, ...records(last.output)];
    return {
      ...last,
      id: first.id,
      created_at: first.created_at,
      output,
      ...(typeof last.output_text === "string" ? { output_text: outputText(output) } : {}),
      usage: usageWith(RESPONSES_USAGE, last.usage, usage),
    };
  },

  stream: () => new ResponsesRecallStream(),
};

/** Where the client's stream is: its next sequence number and output index, and this round's items' indexes in it. */
interface Cursor {
  sequence: number | undefined;
  output: number;
  /** Upstream output index → the client's, for the items the client has been sent. */
  indexes: Map<number, number>;
}

interface HeldItem {
  recall: boolean;
  events: { raw: string; data: Json }[];
}

/** One streamed round: its items' held events, and its end. */
class ResponsesRound {
  readonly held = new Map<number, HeldItem>();
  /** Finished items by upstream index (the answer, should the stream end without its response). */
  readonly done = new Map<number, Json>();
  /** The response the terminal event carried. */
  response: Json | undefined;
  /** The terminal event, held when the turn calls terse_recall: what comes after it waits too. */
  terminal: { raw: string; data: Json } | undefined;
  readonly tail: string[] = [];

  callsRecall(): boolean {
    return [...this.held.values()].some((item) => item.recall);
  }

  /** The round's output items with their upstream indexes. */
  items(): [number, Json][] {
    return this.response ? [...records(this.response.output).entries()] : [...this.done.entries()];
  }

  answer(): Json {
    return this.response ?? { output: [...this.done.entries()].sort(([a], [b]) => a - b).map(([, item]) => item) };
  }
}

/** The items the client has been sent, in its order. */
const sentItems = (items: [number, Json][], indexes: Map<number, number>): Json[] =>
  items
    .filter(([index]) => indexes.has(index))
    .sort(([a], [b]) => (indexes.get(a) ?? 0) - (indexes.get(b) ?? 0))
    .map(([, item]) => item);

class ResponsesRecallStream implements RecallStream {
  readonly keepAlive = SSE_KEEP_ALIVE;
  private prior = NO_USAGE;
  private continued = false;
  /** The first round's response id and time, which the client's response keeps. */
  private opening: { id: unknown; created_at: unknown } | undefined;
  private cursor: Cursor = { sequence: undefined, output: 0, indexes: new Map() };
  /** Output items the client was sent in earlier rounds, in its order. */
  private shown: Json[] = [];
  private round = new ResponsesRound();

  push(raw: string, data: unknown): string {
    const round = this.round;
    if (round.terminal) {
      round.tail.push(raw);
      return "";
    }
    if (!isRecord(data) || typeof data.type !== "string") return raw;
    if (isRecord(data.response)) this.opening ??= { id: data.response.id, created_at: data.response.created_at };
    if (this.continued && OPENING.has(data.type)) return "";
    if (TERMINAL.has(data.type)) return this.terminal(raw, data);
    if (typeof data.output_index !== "number") return this.sent(raw, data, this.cursor);
    const index = data.output_index;
    const item = isRecord(data.item) ? data.item : undefined;
    if (data.type === "response.output_item.added" && item && isCallItem(item))
      round.held.set(index, { recall: isRecallItem(item), events: [] });
    if (data.type === "response.output_item.done" && item) round.done.set(index, item);
    const held = round.held.get(index);
    if (!held) return this.sent(raw, data, this.cursor, index);
    held.events.push({ raw, data });
    return "";
  }

  end(): { calls: RecallCall[]; answer: Json; release: string } {
    const round = this.round;
    // Released only if the answer ends here: the stream's own cursor stays where the client is.
    const cursor = { ...this.cursor, indexes: new Map(this.cursor.indexes) };
    let release = this.releaseCalls(cursor);
    if (round.terminal)
      release += this.terminalEvent(round.terminal.raw, round.terminal.data, cursor) + round.tail.join("");
    const answer = round.answer();
    return { calls: responsesRecall.calls(answer), answer, release };
  }

  nextRound(prior: ReportedUsage): void {
    this.shown.push(...sentItems(this.round.items(), this.cursor.indexes));
    this.cursor.indexes = new Map();
    this.prior = prior;
    this.continued = true;
    this.round = new ResponsesRound();
  }

  private terminal(raw: string, data: Json): string {
    const round = this.round;
    round.response = isRecord(data.response) ? data.response : undefined;
    if (round.callsRecall()) {
      round.terminal = { raw, data };
      return "";
    }
    const out = this.releaseCalls(this.cursor) + this.terminalEvent(raw, data, this.cursor);
    round.held.clear();
    return out;
  }

  /** The held call items' events less terse_recall's, numbered on from `cursor`. */
  private releaseCalls(cursor: Cursor): string {
    let out = "";
    const held = [...this.round.held.entries()].sort(([a], [b]) => a - b);
    for (const [index, item] of held) {
      if (item.recall) continue;
      for (const { raw, data } of item.events) out += this.sent(raw, data, cursor, index);
    }
    return out;
  }

  /** The terminal event with the client's whole output, the first response's id and every round's usage. */
  private terminalEvent(raw: string, data: Json, cursor: Cursor): string {
    const response = isRecord(data.response) ? data.response : undefined;
    if (!response) return this.sent(raw, data, cursor);
    const output = records(response.output);
    const visible = [...this.shown, ...sentItems([...output.entries()], cursor.indexes)];
    let next = response;
    if (visible.length !== output.length || visible.some((item, i) => item !== output[i]))
      next = { ...next, output: visible };
    const opening = this.opening;
    if (this.continued && opening && (next.id !== opening.id || next.created_at !== opening.created_at))
      next = { ...next, id: opening.id, created_at: opening.created_at };
    if (isRecord(next.usage) && !isNoUsage(this.prior))
      next = {
        ...next,
        usage: usageWith(RESPONSES_USAGE, next.usage, addUsage(reportedOf(RESPONSES_USAGE, next.usage), this.prior)),
      };
    return this.sent(raw, data, cursor, undefined, next === response ? data : { ...data, response: next });
  }

  /** One event as the client gets it: its sequence number (and its item's output index) carried on from `cursor`. */
  private sent(raw: string, original: Json, cursor: Cursor, index?: number, data: Json = original): string {
    let next = data;
    const sequence = cursor.sequence ?? count(original.sequence_number);
    cursor.sequence = sequence + 1;
    if (typeof next.sequence_number === "number" && next.sequence_number !== sequence)
      next = { ...next, sequence_number: sequence };
    if (index !== undefined) {
      let clientIndex = cursor.indexes.get(index);
      if (clientIndex === undefined) {
        clientIndex = cursor.output++;
        cursor.indexes.set(index, clientIndex);
      }
      if (next.output_index !== clientIndex) next = { ...next, output_index: clientIndex };
    }
    return eventText(raw, original, next);
  }
}
