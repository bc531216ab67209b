/**
 * A text cut to its first `keepHead` and last `keepTail` characters, at line boundaries
 * where one is near the cut, with a marker saying how much went. Depends on the text
 * alone, so the same text is always cut the same way (prefix stability). The fallback
 * for content that has no lines to choose between (a minified blob, one huge line).
 */
export function cutMiddle(text: string, keepHead: number, keepTail: number): string {
  if (text.length <= keepHead + keepTail) return text;
  const headEnd = lineBoundaryBefore(text, keepHead);
  const tailStart = lineBoundaryAfter(text, text.length - keepTail);
  const cut = text.slice(headEnd, tailStart);
  const head = text.slice(0, headEnd);
  const lines = countLines(cut);
  // The marker stands on a line of its own where the text has lines.
  const open = head.endsWith("\n") || !text.includes("\n") ? "" : "\n";
  const what = lines > 1 ? `${lines} lines (${cut.length} characters)` : `${cut.length} characters`;
  const close = text.includes("\n") ? "\n" : "";
  return `${head}${open}${omitted(what)}${close}${text.slice(tailStart)}`;
}

/** The one wording of every cut, so an agent (and a test) recognises it. */
export function omitted(what: string): string {
  return `[terse: ${what} omitted]`;
}

/**
 * The wording of a cut of lines from all over the text rather than one run of them (a
 * diff's context lines, every hunk's; a listing's columns, every line's), saying how to
 * see it all where the command is short enough to repeat. Recall names no lines for it
 * (recall-handles.ts): no one range of the original is what it stands for.
 */
export function omittedThroughout(what: string, again?: string): string {
  return `[terse: ${what} omitted throughout${again === undefined ? "" : `; \`${again}\` shows all`}]`;
}

/** Whether a marker line is one of omittedThroughout's. */
export const isOmittedThroughout = (line: string): boolean => /^\[terse: [^\]]*? omitted throughout[;\]]/.test(line);

/** The end of the last whole line before `at`, if one ends within 20% of it; else `at`. */
function lineBoundaryBefore(text: string, at: number): number {
  const nl = text.lastIndexOf("\n", at);
  return nl > at * 0.8 ? nl + 1 : at;
}

function lineBoundaryAfter(text: string, at: number): number {
  const nl = text.indexOf("\n", at);
  return nl >= 0 && nl - at < (text.length - at) * 0.2 ? nl + 1 : at;
}

export function countLines(s: string): number {
  let n = 1;
  for (let i = s.indexOf("\n"); i >= 0; i = s.indexOf("\n", i + 1)) n++;
  return n;
}
