// The parts of a text that input compression must leave byte-identical: fenced and
// inline code, indented code lines, URLs, file paths, numbers, quoted strings, and JSON
// objects or arrays (balanced brackets). Everything between them is prose.

export interface Segment {
  text: string;
  protected: boolean;
}

const PATTERNS: RegExp[] = [
  // Material to be worked on (a paragraph to edit, sentences to extract from): from
  // where the user introduces it to the end of the text, every word of it is data.
  /(?:\b(?:the following|below)\b|:[ \t]*\n)[\s\S]*$/gi,
  /```[\s\S]*?(?:```|$)/g, // fenced code, an unclosed fence runs to the end
  /`[^`\n]+`/g, // inline code
  /^(?: {4}|\t).*$/gm, // indented code lines
  // Each pattern whose first part repeats starts only where a run of its characters starts
  // (a lookbehind, not \b): tried from inside a run, it would scan to the run's end at every
  // character, and 40 KB of "a.a.a." took seconds.
  /(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*:\/\/[^\s<>"'`]+/gi, // URLs
  /(?<![\w'])"(?:[^"\\\n]|\\.)*"|(?<![\w])'(?:[^'\\\n]|\\.)+'(?![\w])|“[^”\n]*”/g, // quoted strings
  /(?:~|\.{1,2})?(?:\/[\w.@+-]+)+\/?|(?<![\w.-])[\w.-]+(?:\/[\w.@+-]+)+|\b[\w-]+\.(?:ts|js|py|go|rs|java|rb|c|h|cpp|json|yaml|yml|toml|md|txt|sh|sql|css|html)\b/g, // paths and file names
  /\b\d[\d.,:_%/-]*\b|\$\d[\d.,]*/g, // numbers, versions, dates, money
];

/**
 * [start, end) ranges of balanced {...} / [...] spans (JSON and the like), the outermost
 * only; a bracket of either kind closes either. One pass with a stack of the open
 * brackets: a scan from each open bracket to its close went to the end of the text for
 * every one never closed, and a message of 40,000 "[" held the event loop for seconds.
 */
function bracketRanges(text: string): [number, number][] {
  const ranges: [number, number][] = [];
  const open: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "{" || c === "[") open.push(i);
    else if ((c === "}" || c === "]") && open.length > 0) {
      const start = open.pop() as number;
      // The spans closed inside this one are in it: only the outermost is kept.
      while ((ranges.at(-1)?.[0] ?? -1) > start) ranges.pop();
      ranges.push([start, i + 1]);
    }
  }
  return ranges;
}

function protectedRanges(text: string): [number, number][] {
  const ranges = bracketRanges(text);
  for (const pattern of PATTERNS) {
    for (const m of text.matchAll(pattern)) if (m[0].length > 0) ranges.push([m.index, m.index + m[0].length]);
  }
  ranges.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const r of ranges) {
    const last = merged.at(-1);
    if (last && r[0] <= last[1]) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  return merged;
}

/** The text as alternating prose and protected segments; joined, they give the text back. */
export function segment(text: string): Segment[] {
  const out: Segment[] = [];
  let at = 0;
  for (const [start, end] of protectedRanges(text)) {
    if (start > at) out.push({ text: text.slice(at, start), protected: false });
    out.push({ text: text.slice(start, end), protected: true });
    at = end;
  }
  if (at < text.length) out.push({ text: text.slice(at), protected: false });
  return out;
}
