import type { ReportedUsage } from "./adapter.ts";
import { withField } from "./json.ts";

// Recall (issue 18): every cut context compression makes names a handle, and the model
// can fetch the original back with one tool, `terse_recall`, which terse adds to the
// request and answers itself. What differs per wire format (where tools are declared,
// how a call and its result are written, how a stream is continued) is each adapter's
// RecallFormat; the loop that answers the calls is the data plane's.

export const RECALL_TOOL_NAME = "terse_recall";

/**
 * The tool's one-line description. Part of every request of a session with recall on,
 * at the front of the provider's cache: never change it casually (every live session's
 * cache would be written anew once). Every session pays for its tokens, most of them
 * sessions that never recall (docs/compression.md counts it in the cost): it says what
 * the model needs and no more.
 */
export const RECALL_TOOL_DESCRIPTION =
  "Read back text terse cut from a tool result; the cut's marker `[terse: ... recall HANDLE lines A-B]` gives both.";

/** The tool's parameters as JSON Schema (every format's declaration holds this object). */
export const RECALL_TOOL_PARAMETERS = {
  type: "object",
  properties: {
    handle: { type: "string" },
    lines: { type: "string", description: "A-B; all when left out" },
    match: { type: "string", description: "Only the lines holding this text" },
  },
  required: ["handle"],
} as const;

/** One call of terse_recall in an answer. */
export interface RecallCall {
  /** The call's id as the answer gives it ("" where the format has none: Gemini). */
  id: string;
  /** The arguments the model wrote, parsed; {} when they were not a JSON object. */
  args: Record<string, unknown>;
}

/** What terse answers one call with: the text of the tool result. */
export interface RecallResult {
  call: RecallCall;
  text: string;
}

/**
 * One wire format's side of recall. Every function is pure: inputs are never mutated.
 * "Answer" is a whole answer as the format's JSON response body (a stream's answer is
 * rebuilt into that shape by its RecallStream).
 */
export interface RecallFormat {
  /**
   * Whether terse_recall can be declared in this request (to `model`, when known): not
   * when the caller declares a tool of that name (its calls are the caller's), nor where
   * the format or the model takes no tool here. Asked before compressing: where the
   * model cannot call the tool, the cuts' markers name no handle.
   */
  takesTool(body: Record<string, unknown>, model: string | undefined): boolean;
  /**
   * The request with terse_recall declared last among its tools, the same bytes in
   * every request (prefix stability). A request that does not take the tool (takesTool,
   * the model aside) is returned as it is.
   */
  withTool(body: Record<string, unknown>): Record<string, unknown>;
  /** The terse_recall calls in an answer, in order; [] when it makes none. */
  calls(answer: Record<string, unknown>): RecallCall[];
  /**
   * The next round's request: `request`, then the model's turn from `answer` (its text,
   * reasoning and terse_recall calls, none of the client's own calls: those were not
   * run, and the model makes them again if it still wants them), then one tool result
   * per call.
   */
  continueWith(
    request: Record<string, unknown>,
    answer: Record<string, unknown>,
    results: readonly RecallResult[],
  ): Record<string, unknown>;
  /**
   * `answer` without its terse_recall calls, for when no round is left: the client's
   * own calls stay; when none stays, the stop reason is the ordinary end of a turn.
   */
  withoutRecall(answer: Record<string, unknown>): Record<string, unknown>;
  /**
   * The one answer the client gets after recall rounds: the earlier rounds' content
   * without their terse_recall calls (text the model wrote before calling), then the
   * last answer's, under the first answer's id, with `usage` (every round's sum) as
   * its usage.
   */
  merge(
    earlier: readonly Record<string, unknown>[],
    last: Record<string, unknown>,
    usage: ReportedUsage,
  ): Record<string, unknown>;
  /** A relay for one streamed answer across its recall rounds. */
  stream(): RecallStream;
}

/**
 * Relays one streamed answer across recall rounds so the client sees one stream: text
 * as it comes, nothing of a terse_recall call, and each continuation carrying on where
 * the client's stream is (its opening events dropped; indexes, ids and sequence numbers
 * continued; its usage with the earlier rounds' added).
 *
 * Tool-call events are held until the round's answer ends (a terse_recall call may come
 * after a client's call in the same turn); everything else is relayed at once.
 */
export interface RecallStream {
  /**
   * One upstream event: `raw` is its text with its terminating blank line, `data` its
   * parsed `data:` JSON (undefined for a comment, `[DONE]` or anything not JSON).
   * Returns what to send the client now ("" to send nothing yet).
   */
  push(raw: string, data: unknown): string;
  /**
   * The round's upstream stream ended. `calls`: its terse_recall calls ([] when none).
   * `answer`: the round's answer rebuilt whole (for continueWith). `release`: what to send
   * the client if the answer ends here: the held events, less any terse_recall call,
   * and with an ordinary end of turn where no client call is left.
   */
  end(): { calls: RecallCall[]; answer: Record<string, unknown>; release: string };
  /**
   * The next upstream stream continues the client's: called before its first push.
   * `prior`: usage of the rounds so far, added to what the client is told.
   */
  nextRound(prior: ReportedUsage): void;
  /** An event to send while terse waits on a round (the provider's ping, or an SSE comment). */
  readonly keepAlive: string;
}

/** The tool's parameters as a plain (mutable) JSON Schema object, for a format to declare them in its own way. */
export const recallToolParameters = (): Record<string, unknown> =>
  structuredClone(RECALL_TOOL_PARAMETERS) as Record<string, unknown>;

/**
 * A format's terse_recall declaration, made once and frozen to the leaves: every request
 * of every session carries this one object (building it per request cost a structured
 * clone on the hot path), and nothing may change it in one request for all.
 */
export function frozenDeclaration<T extends object>(value: T): T {
  for (const v of Object.values(value)) if (typeof v === "object" && v !== null) frozenDeclaration(v);
  return Object.freeze(value);
}

/** The tools a request declares ([] when it declares none). */
export const declaredTools = (body: Record<string, unknown>): unknown[] =>
  Array.isArray(body.tools) ? body.tools : [];

/** The request with `tool` declared last among its tools (the caller's stay as sent, in front). */
export const withToolLast = (body: Record<string, unknown>, tool: unknown): Record<string, unknown> =>
  withField(body, "tools", [...declaredTools(body), tool]);

/** Usage summed over rounds. */
export function addUsage(a: ReportedUsage, b: ReportedUsage): ReportedUsage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
  };
}
