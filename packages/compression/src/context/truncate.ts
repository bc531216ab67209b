import type { ContextLimits } from "./levels.ts";

/**
 * A long tool result cut to its head and tail, at line boundaries where there are any
 * near the cut, with a marker saying how much went. Depends on the text alone, so the
 * same result is always cut the same way (prefix stability).
 */
export function truncateResult(text: string, limits: ContextLimits): string {
  if (text.length <= limits.truncateAbove) return text;
  const headEnd = lineBoundaryBefore(text, limits.keepHead);
  const tailStart = lineBoundaryAfter(text, text.length - limits.keepTail);
  const cut = text.slice(headEnd, tailStart);
  const lines = countLines(cut);
  const head = text.slice(0, headEnd);
  // The marker stands on a line of its own.
  const open = head.endsWith("\n") ? "" : "\n";
  const marker = `${open}[terse: ${lines} lines (${cut.length} characters) omitted from the middle of this output]\n`;
  return `${head}${marker}${text.slice(tailStart)}`;
}

/** The end of the last whole line before `at`, if one ends within 20% of it; else `at`. */
function lineBoundaryBefore(text: string, at: number): number {
  const nl = text.lastIndexOf("\n", at);
  return nl > at * 0.8 ? nl + 1 : at;
}

function lineBoundaryAfter(text: string, at: number): number {
  const nl = text.indexOf("\n", at);
  return nl >= 0 && nl - at < (text.length - at) * 0.2 ? nl + 1 : at;
}

function countLines(s: string): number {
  let n = 1;
  for (let i = s.indexOf("\n"); i >= 0; i = s.indexOf("\n", i + 1)) n++;
  return n;
}
