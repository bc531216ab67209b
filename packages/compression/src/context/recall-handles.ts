// Recall handles in cut markers (issue 18). Every cut of a tool result names the handle
// its original is kept under, and, where the cut is whole lines of the original, which
// lines: `[terse: 361 lines (12000 characters) omitted; recall 3f2a9c0d1b7e lines 120-480]`.
// The model passes both to the terse_recall tool to read the cut part back.
//
// Shorteners (shorten.ts and its kinds, dedupe.ts) know nothing of recall: the lines are
// found afterwards by aligning the shortened text's kept lines with the original's, in
// order. A kept line that was changed (cut inside, or re-serialised JSON) aligns with
// nothing, which only widens the range the next marker names: a range may cover some
// shown lines, never miss cut ones.

/** The handle of a text: 12 hex digits of its content digest (dedupe.ts's SHA-1, base64), so the same output has one handle. */
export function recallHandleOf(digestBase64: string): string {
  return Buffer.from(digestBase64, "base64").toString("hex", 0, 6);
}

const MARKER = "[terse: ";
/** The index of what a cut left out is a note, not a cut: it names no range. */
const NOTE = "[terse: the omitted part mentions: ";
/** How many later occurrences of a line are tried for the one whose next line matches too. */
const CANDIDATES = 32;

const isCutLine = (line: string) => line.startsWith(MARKER) && line.endsWith("]") && !line.startsWith(NOTE);

/** `compressed` with every cut marker naming `handle`, and the original's lines (1-based) each whole-line cut stands for. */
export function nameRecallHandles(original: string, compressed: string, handle: string): string {
  const lines = compressed.split("\n");
  const ranges = cutRanges(original.split("\n"), lines);
  for (let k = 0; k < lines.length; k++) {
    const line = lines[k] as string;
    const range = ranges.get(k);
    if (isCutLine(line)) lines[k] = `${line.slice(0, -1)}; recall ${handle}${range ? ` lines ${range}` : ""}]`;
    else if (line.includes(MARKER)) lines[k] = nameInlineMarkers(line, handle);
  }
  return lines.join("\n");
}

/** Markers inside a line (a cut within one long line, an item of a JSON array) name the handle alone. */
function nameInlineMarkers(line: string, handle: string): string {
  return line.replace(
    /\[terse: ([^\]]*?) omitted\]/g,
    (_m, what: string) => `[terse: ${what} omitted; recall ${handle}]`,
  );
}

/** For each cut marker line of `kept` (by index), the range `a-b` of `original`'s lines it stands for, where one is known. */
function cutRanges(original: readonly string[], kept: readonly string[]): Map<number, string> {
  const where = positionsOf(original);
  const ranges = new Map<number, string>();
  let pending: number[] = [];
  let next = 0; // the first original line not yet matched
  const close = (upTo: number) => {
    if (upTo > next) for (const k of pending) ranges.set(k, `${next + 1}-${upTo}`);
    pending = [];
  };
  for (let k = 0; k < kept.length; k++) {
    const line = kept[k] as string;
    if (isCutLine(line)) {
      pending.push(k);
      continue;
    }
    if (line.startsWith(MARKER)) continue;
    const after = following(kept, k);
    const at = find(where.get(line), next, (p) => after === undefined || original[p + 1] === after);
    if (at === undefined) continue;
    close(at);
    next = at + 1;
  }
  close(original.length);
  return ranges;
}

/** The next kept line after `k` that is not a marker, if any. */
function following(kept: readonly string[], k: number): string | undefined {
  for (let i = k + 1; i < kept.length; i++) {
    const line = kept[i] as string;
    if (!line.startsWith(MARKER)) return line;
  }
  return undefined;
}

function positionsOf(lines: readonly string[]): Map<string, number[]> {
  const where = new Map<string, number[]>();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const at = where.get(line);
    if (at) at.push(i);
    else where.set(line, [i]);
  }
  return where;
}

/** The first position at or after `from` that `fits`, among the next few; else the first at or after `from`. */
function find(positions: number[] | undefined, from: number, fits: (p: number) => boolean): number | undefined {
  if (!positions) return undefined;
  let lo = 0;
  let hi = positions.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((positions[mid] as number) < from) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < positions.length && i < lo + CANDIDATES; i++) {
    if (fits(positions[i] as number)) return positions[i];
  }
  return positions[lo];
}
