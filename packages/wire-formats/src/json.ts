/** A plain JSON object (not an array, not null). */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The value when it is a string, else undefined. */
export const stringOf = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The caller's query string without `?`, as parameters (for a provider that adds its own). */
export function paramsOf(query: string): URLSearchParams {
  return new URLSearchParams(query.startsWith("?") ? query.slice(1) : query);
}

/**
 * `{ ...record, [key]: value }`, for a key the record may not have. V8 (Node 20) gives the
 * result of an object spread followed by a property the source lacks a hidden class of
 * its own, every time: on the hot path that is a new map per request, and every later
 * read of such an object misses its inline caches (docs/benchmarks.md). Copied into an
 * empty object instead, objects of one shape share one.
 */
export function withField<T extends Record<string, unknown>>(record: T, key: string, value: unknown): T {
  // Object.assign would set a `__proto__` field (JSON.parse makes it an own one, a
  // caller's to send) as the copy's prototype, dropping it from the body and lending its
  // fields to every read; a spread copies it as the field it is.
  const out: Record<string, unknown> = Object.hasOwn(record, "__proto__") ? { ...record } : Object.assign({}, record);
  out[key] = value;
  return out as T;
}
