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
}

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
