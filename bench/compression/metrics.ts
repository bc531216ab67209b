// The figures of the compression benchmark, each a small pure function.
import { countExactTokens } from "@terse/compression";

export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

export const tokensOf = (parts: readonly unknown[]): number =>
  parts.reduce<number>((n, p) => n + countExactTokens(p), 0);

/** How many leading parts two requests share (the prompt cache's prefix, at message granularity). */
export function sharedParts(a: readonly string[], b: readonly string[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

export const sumOf = (xs: readonly number[]): number => xs.reduce((n, x) => n + x, 0);

/** Exact tokens of each part (its JSON text), the first `shared` carried over from the previous request's counts. */
export function partCounts(texts: readonly string[], shared: number, previous: readonly number[]): number[] {
  return texts.map((t, k) => (k < shared ? (previous[k] as number) : countExactTokens(t)));
}

/** A request's input cost with caching modelled from its parts' counts: the part shared with the previous request at 10%. */
export function cachedCost(counts: readonly number[], shared: number): number {
  const sharedTokens = sumOf(counts.slice(0, shared));
  return 0.1 * sharedTokens + (sumOf(counts) - sharedTokens);
}
