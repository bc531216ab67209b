import { isRecord } from "./json.ts";
import { actionOf, answers, ObservationReader, type TextAction } from "./observation.ts";
import { commandOf } from "./tool-command.ts";

// How compression sees a request of each wire format (each adapter's `view`): its system
// slot, its tool results, its prompt text, and the rules of tool-call pairing that a
// compressed request must still satisfy.

/** Opens terse's response instruction, so a format can tell it from a caller's system text. */
export const TERSE_INSTRUCTION_TAG = "[terse]";

/**
 * A format's rules for tool calls and their results, as its API enforces them: the
 * broken rules, empty when the request is valid (the benchmark and the tests run every
 * compressed request through it).
 */
export type PairingCheck = (body: Record<string, unknown>) => string[];

/** What compression needs to know of one wire format's request. */
export interface RequestFormat {
  /** Why the request demands structured output (response compression is then skipped), or null. */
  structuredOutput(body: Record<string, unknown>): string | null;
  /** The text of the latest user turn (tool results left out): what smart detect reads. */
  latestUserText(body: Record<string, unknown>): string;
  /** A new body with `instruction` in the format's system slot; the input is not mutated. */
  withInstruction(body: Record<string, unknown>, instruction: string): Record<string, unknown>;
  /** The pieces of input the model reads, each counted (and memoised) on its own. */
  inputParts(body: Record<string, unknown>): unknown[];
  /** How the text of every tool result is rewritten, in conversation order (see ToolResultMapper). */
  toolResults: ToolResultMapper;
  /** A new body with `f` applied to the user's and system prompt text (never tool results or assistant turns). */
  mapPromptTexts(body: Record<string, unknown>, f: (text: string) => string): Record<string, unknown>;
  /**
   * The newest turn of an agent's session: what the previous request of the session did
   * not hold (the latest model turn and everything after it), as input parts (the same
   * objects inputParts gives, so their token counts are shared). Undefined when the
   * request holds no earlier turn of its own session (its first request). The rest of
   * the request is the prefix a provider's prompt cache can hold from the previous one.
   */
  newestTurn(body: Record<string, unknown>): unknown[] | undefined;
  /**
   * How the provider caches a prompt's prefix: by itself ("automatic": OpenAI, Gemini's
   * implicit cache), or only up to where the request marks it ("marked": Anthropic's
   * cache_control).
   */
  readonly promptCache: "automatic" | "marked";
}

/**
 * The items from the latest model turn on: the last run of items `isModelTurn` holds for
 * (a turn of several items, such as a Responses reasoning item and its tool calls, is
 * one turn), or undefined when there is none.
 */
export function fromLastModelTurn(
  items: readonly unknown[],
  isModelTurn: (item: unknown) => boolean,
): unknown[] | undefined {
  let i = items.length - 1;
  while (i >= 0 && !isModelTurn(items[i])) i--;
  if (i < 0) return undefined;
  while (i > 0 && isModelTurn(items[i - 1])) i--;
  return items.slice(i);
}

/**
 * A format's walk over the items of a request (its messages, contents or input items)
 * that calls `transform` on the text of each tool result, and on the output of each
 * text-protocol observation (observation.ts), in conversation order, with a reference
 * that names the result (its tool call id, or `#` and the item's index) and the shell
 * command that produced it where the call says (its `command` argument, or the fenced
 * block of a text-protocol action).
 *
 * It goes item by item, and a walker can be forked, because an agent resends its whole
 * history every turn: compression continues a session's next request from where its last
 * one ended, and walks only the items that are new (packages/compression, the trail).
 */
export interface ToolResultMapper {
  /** The request's items, in conversation order (the body's own array, or one made for a string input). */
  items(body: Record<string, unknown>): unknown[];
  /** The body with `items` for its items: a new body, or the body itself where a format keeps it when none changed. */
  withItems(body: Record<string, unknown>, items: unknown[], original: unknown[]): Record<string, unknown>;
  /** A walker at the start of a conversation. */
  walker(): ItemWalker;
}

/** Walks a request's items in order, remembering what a later item depends on (the agent's actions). */
export interface ItemWalker {
  /**
   * Item `index` with its results passed through `transform`: a new item, or the same
   * object when nothing changed. Without `transform` the item is only stepped over (its
   * results are known from an earlier request) and comes back as it is.
   */
  map(item: unknown, index: number, transform?: ResultTransform): unknown;
  /** A walker in the same state that goes on independently. */
  fork(): ItemWalker;
}

export type ResultTransform = (text: string, ref: string, command?: string) => string;

/** The body with every tool result's text passed through `transform` (a new body, sharing every untouched item). */
export function mapToolResults(
  mapper: ToolResultMapper,
  body: Record<string, unknown>,
  transform: ResultTransform,
): Record<string, unknown> {
  const walker = mapper.walker();
  const items = mapper.items(body);
  return mapper.withItems(
    body,
    items.map((item, i) => walker.map(item, i, transform)),
    items,
  );
}

/**
 * The agent's actions as a mapper walks the conversation: tool calls by id, and the
 * text-protocol action of the latest assistant message (its command blocks, the last one
 * the action), which only the user message right after it can answer.
 */
export class Actions {
  private readonly byId: Map<string, string>;
  private action: TextAction | undefined;
  /**
   * The commands of the latest assistant message's calls that have no id, by tool name in
   * the order made ("" where a call has none): Gemini's calls need no id, and a response
   * without one answers the call of its name in the same place.
   */
  private byName: Map<string, string[]> | undefined;
  /** The user message's texts so far: the text after an XML-protocol tool's heading is its output. */
  private readonly texts = new ObservationReader();

  constructor(from?: Actions) {
    this.byId = new Map(from?.byId);
    this.action = from?.action;
    if (from?.byName) this.byName = new Map([...from.byName].map(([name, commands]) => [name, [...commands]]));
  }

  /** An assistant message: its text (for a text-protocol action) and its tool calls. */
  assistant(text: string, calls: { id: unknown; name: unknown; input: unknown }[]): void {
    this.action = actionOf(text);
    // Made only for a turn that has id-less calls: most walks never need it.
    this.byName = undefined;
    for (const c of calls) {
      const name = typeof c.name === "string" ? c.name : undefined;
      const command = commandOf(c.input, name);
      if (typeof c.id === "string") {
        if (command !== undefined) this.byId.set(c.id, command);
      } else if (name !== undefined) {
        this.byName ??= new Map();
        this.byName.set(name, [...(this.byName.get(name) ?? []), command ?? ""]);
      }
    }
  }

  commandOf(id: string): string | undefined {
    return this.byId.get(id);
  }

  /** The command of the next result of tool `name` that has no id: its call's, taken in order. */
  commandOfNext(name: string): string | undefined {
    return this.byName?.get(name)?.shift() || undefined;
  }

  /** A user message starts, holding `texts` texts: a template of one text must be its only text. */
  userMessage(texts: number): void {
    this.texts.message(texts);
  }

  /**
   * A user message's text (each of its texts in order) with the output of an observation
   * transformed (tags kept); any other text unchanged.
   */
  observation(text: string, ref: string, transform: ResultTransform): string {
    const o = this.texts.read(text);
    if (!o || !answers(o, this.action)) {
      // A heading that answers no call: the text after it is read for itself.
      if (o?.outputFollows) this.texts.reset();
      return text;
    }
    if (o.outputFollows) return text;
    const command = o.command ?? this.action?.shell;
    const next = transform(o.output, ref, command === "" ? undefined : command);
    return next === o.output ? text : o.open + next + o.close;
  }

  /** A user message ends the latest action's turn: a later message cannot answer it. */
  answered(): void {
    this.action = undefined;
    this.byName = undefined;
    this.texts.reset();
  }
}

export { isRecord };

/** Text of a content value that is a string or an array of parts with `text`. */
export function textOf(content: unknown, skipTypes: readonly string[] = []): string {
  if (typeof content === "string") return content;
  return textsOf(content, skipTypes).join("\n");
}

/** The texts of a content value: the string, or the `text` of each part that has one. */
export function textsOf(content: unknown, skipTypes: readonly string[] = []): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  return content
    .filter((p) => isRecord(p) && typeof p.text === "string" && !skipTypes.includes(String(p.type)))
    .map((p) => (p as { text: string }).text);
}

/**
 * Applies `f` to a content value that is a string, or to each text part of an array of
 * parts; returns the same value (identity) when nothing changed.
 */
export function mapTextContent(content: unknown, f: (text: string) => string): unknown {
  if (typeof content === "string") {
    const next = f(content);
    return next === content ? content : next;
  }
  if (!Array.isArray(content)) return content;
  let touched = false;
  const parts = content.map((p) => {
    if (!isRecord(p) || p.type !== "text" || typeof p.text !== "string") return p;
    const next = f(p.text);
    if (next === p.text) return p;
    touched = true;
    return { ...p, text: next };
  });
  return touched ? parts : content;
}
