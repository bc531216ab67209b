/** What compression needs to know of one provider's request format. */
export interface RequestFormat {
  /** Why the request demands structured output (response compression is then skipped), or null. */
  structuredOutput(body: Record<string, unknown>): string | null;
  /** The text of the latest user turn (tool results left out): what smart detect reads. */
  latestUserText(body: Record<string, unknown>): string;
  /** A new body with `instruction` in the format's system slot; the input is not mutated. */
  withInstruction(body: Record<string, unknown>, instruction: string): Record<string, unknown>;
  /** The pieces of input the model reads, each counted (and memoised) on its own. */
  inputParts(body: Record<string, unknown>): unknown[];
  /** Rewrites the text of every tool result, in conversation order (see ToolResultMapper). */
  mapToolResults: ToolResultMapper;
  /** A new body with `f` applied to the user's and system prompt text (never tool results or assistant turns). */
  mapPromptTexts(body: Record<string, unknown>, f: (text: string) => string): Record<string, unknown>;
}

/**
 * Calls `transform` on the text of each tool result, in conversation order, with a
 * reference that names the result (its tool call id); returns a new body with the
 * returned texts, sharing every untouched message with the input.
 */
export type ToolResultMapper = (
  body: Record<string, unknown>,
  transform: (text: string, ref: string) => string,
) => Record<string, unknown>;

export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Text of a content value that is a string or an array of parts with `text`. */
export function textOf(content: unknown, skipTypes: readonly string[] = []): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((p) => isRecord(p) && typeof p.text === "string" && !skipTypes.includes(String(p.type)))
    .map((p) => (p as { text: string }).text)
    .join("\n");
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
