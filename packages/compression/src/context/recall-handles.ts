import { lineKey } from "./line-key.ts";
import { INDEX_NOTE } from "./span-index.ts";
import { isOmittedThroughout } from "./truncate.ts";

// Recall handles in cut markers (issue 18). Every cut of a tool result names the handle
// its original is kept under, and, where the cut is whole lines of the original, which
// lines: `[terse: 361 lines (12000 characters) omitted; recall 3f2a9c0d1b7e lines 120-480]`.
// The model passes both to the terse_recall tool to read the cut part back.
//
// Shorteners (shorten.ts and its kinds, dedupe.ts) know nothing of recall: the lines are
// found afterwards by aligning the shortened text's kept lines with the original's, in
// order. A kept line that was changed (cut inside, or re-serialised JSON) aligns with
// nothing, which only widens the range the next marker names: a range may cover some
// shown lines, never miss cut ones. A cut from all over the text (omittedThroughout: a
// diff's context lines) is no one run of lines and names the handle alone.

/** The handle of a text: 12 hex digits of its content digest (dedupe.ts's SHA-1, base64), so the same output has one handle. */
export function recallHandleOf(digestBase64: string): string {
  return Buffer.from(digestBase64, "base64").toString("hex", 0, 6);
}

/**
 * The most characters that naming a handle and a range adds to a cut marker of a text of
 * `chars` characters (it has fewer lines than characters): what a shortener that knows
 * nothing of recall counts a marker as costing more, so that no cut costs more than it saves.
 */
export function namingChars(chars: number): number {
  return `; recall ${"0".repeat(12)} lines -`.length + 2 * String(chars).length;
}

const MARKER = "[terse: ";
/** How many later occurrences of a line are tried for the one whose next line matches too. */
const CANDIDATES = 32;

/** The index of what a cut left out is a note, not a cut: it names no range. */
const isCutLine = (line: string) => line.startsWith(MARKER) && line.endsWith("]") && !line.startsWith(INDEX_NOTE);

/** `compressed` with every cut marker naming `handle`, and the original's lines (1-based) each whole-line cut stands for. */
export function nameRecallHandles(original: string, compressed: string, handle: string): string {
  const lines = compressed.split("\n");
  const ranges = cutRanges(original, lines);
  for (let k = 0; k < lines.length; k++) {
    const line = lines[k] as string;
    const range = ranges.get(k);
    if (isCutLine(line)) lines[k] = `${line.slice(0, -1)}; recall ${handle}${range ? ` lines ${range}` : ""}]`;
    else if (line.includes(MARKER)) lines[k] = nameInlineMarkers(line, handle);
  }
  return lines.join("\n");
}

/**
 * A marker inside a line: `[terse: ` to its closing `]`, a command it repeats read whole
 * (`` `grep "x[0-9]"` shows all ``), since a command may hold brackets of its own.
 */
const INLINE_MARKER = /\[terse: (?:[^\]`]|`[^`]*`)*\]/g;

/**
 * Markers inside a line (a cut within one long line, an item of a JSON array, a JSON
 * string shortened as a log, whose first marker says how to see it all) name the handle
 * alone. The index of what went is a note, not a cut.
 */
function nameInlineMarkers(line: string, handle: string): string {
  return line.replace(INLINE_MARKER, (marker) =>
    marker.startsWith(INDEX_NOTE) ? marker : `${marker.slice(0, -1)}; recall ${handle}]`,
  );
}

/** An occurrence of a kept line in the original: its line number (0-based) and where it starts. */
interface Occurrence {
  line: number;
  at: number;
}

/** For each cut marker line of `kept` (by index), the range `a-b` of `original`'s lines it stands for, where one is known. */
function cutRanges(original: string, kept: readonly string[]): Map<number, string> {
  const { where, lineCount } = occurrencesOf(original, kept);
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
      if (!isOmittedThroughout(line)) pending.push(k);
      continue;
    }
    if (line.startsWith(MARKER)) continue;
    const after = following(kept, k);
    const found = find(
      where.get(line),
      next,
      (o) => after === undefined || lineAt(original, o.at + line.length + 1, after),
    );
    if (found === undefined) continue;
    close(found.line);
    next = found.line + 1;
  }
  close(lineCount);
  return ranges;
}

/** Whether `text` has the whole line `line` starting at `at`. */
function lineAt(text: string, at: number, line: string): boolean {
  if (!text.startsWith(line, at)) return false;
  const end = at + line.length;
  return end === text.length || text.charCodeAt(end) === 10;
}

/** The next kept line after `k` that is not a marker, if any. */
function following(kept: readonly string[], k: number): string | undefined {
  for (let i = k + 1; i < kept.length; i++) {
    const line = kept[i] as string;
    if (!line.startsWith(MARKER)) return line;
  }
  return undefined;
}

/**
 * Where each kept line occurs in the original, and how many lines the original has. Only
 * the kept lines are looked for (a few hundred against a log's tens of thousands): the
 * original is walked by its newlines, and a line is copied and looked up only when a kept
 * line has its length and its first and last characters.
 */
function occurrencesOf(
  original: string,
  kept: readonly string[],
): { where: Map<string, Occurrence[]>; lineCount: number } {
  const where = new Map<string, Occurrence[]>();
  const keys = new Set<number>();
  for (const line of kept) {
    if (line.startsWith(MARKER) || where.has(line)) continue;
    where.set(line, []);
    keys.add(lineKey(line, 0, line.length));
  }
  let line = 0;
  for (let at = 0; ; line++) {
    const nl = original.indexOf("\n", at);
    const end = nl < 0 ? original.length : nl;
    if (keys.has(lineKey(original, at, end))) where.get(original.slice(at, end))?.push({ line, at });
    if (nl < 0) break;
    at = nl + 1;
  }
  return { where, lineCount: line + 1 };
}

/** The first occurrence at or after line `from` that `fits`, among the next few; else the first at or after `from`. */
function find(found: Occurrence[] | undefined, from: number, fits: (o: Occurrence) => boolean): Occurrence | undefined {
  if (!found) return undefined;
  let lo = 0;
  let hi = found.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((found[mid] as Occurrence).line < from) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < found.length && i < lo + CANDIDATES; i++) {
    if (fits(found[i] as Occurrence)) return found[i];
  }
  return found[lo];
}
