/** A plain JSON object (not an array, not null). */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The value when it is a string, else undefined. */
export const stringOf = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The caller's query string without `?`, as parameters (for a provider that adds its own). */
export function paramsOf(query: string): URLSearchParams {
  return new URLSearchParams(query.startsWith("?") ? query.slice(1) : query);
}
