import { namingChars } from "./recall-handles.ts";
import { omitted } from "./truncate.ts";

// The lines of a text as a reader skims them, read from either end: a long run of lines
// that differ only in their numbers (progress, "compiling module_17 ... ok") is one kind
// of event and shows as its first line, a marker and its last line (where the marker,
// named as recall names it, is shorter than the lines it stands for). Reading from an end
// only as far as a budget keeps the work of cutting a 1 MB log to the few kilobytes it
// keeps: the middle is never split into lines.

/** From this many consecutive look-alike lines, only the first and last stay. */
export const SIMILAR_RUN = 5;

/** A line of the text: [start, end), `end` at its newline or the end of the range. */
export interface Line {
  start: number;
  end: number;
}

/** A line of the skimmed text and the stretch of the original it stands for. */
export interface Entry extends Line {
  text: string;
  /** The marker of a run's middle: the stretch is lines the text no longer shows. */
  collapsed?: true;
}

/**
 * A line with its numbers and hashes masked: lines of one shape are one kind of event.
 * A line without a digit has neither (a hash has digits but for one in 10^4), and most
 * lines of a log are worth the quick test.
 */
export function shapeOf(line: string): string {
  if (!/\d/.test(line)) return line;
  return line.replace(/\b[0-9a-f]{7,}\b/gi, "#").replace(/\d+/g, "0");
}

/** The line starting at `start` (a line start), within a range ending at `to`. */
export function lineFrom(text: string, start: number, to: number): Line {
  const nl = text.indexOf("\n", start);
  return { start, end: nl < 0 || nl > to ? to : nl };
}

/** The line ending at `end` (a newline or the range's end), within a range starting at `from`. */
export function lineTo(text: string, end: number, from: number): Line {
  const nl = end > from ? text.lastIndexOf("\n", end - 1) : -1;
  return { start: nl < from ? from : nl + 1, end };
}

/** Newlines in text[from, to): a stretch of whole lines has one more line than that. */
export function newlinesIn(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf("\n", from); i >= 0 && i < to; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

/** The next line from `l` towards the end (or, `backward`, the start) of [from, to]. */
function step(text: string, l: Line, from: number, to: number, backward: boolean): Line | undefined {
  if (backward) return l.start > from ? lineTo(text, l.start - 1, from) : undefined;
  return l.end < to ? lineFrom(text, l.end + 1, to) : undefined;
}

/** A blank line is a run of its own: it has no shape to share. */
const shapeOrBlank = (line: string): string | undefined => (line.trim() === "" ? undefined : shapeOf(line));

/**
 * The maximal run of look-alike lines around `line` within [from, to], as its first and
 * last line and its length. Only the error lines found in a log's middle need this.
 */
export function lookAlikeRun(
  text: string,
  line: Line,
  from: number,
  to: number,
): { first: Line; last: Line; count: number } {
  const shape = shapeOrBlank(text.slice(line.start, line.end));
  let first = line;
  let last = line;
  let count = 1;
  if (shape === undefined) return { first, last, count };
  for (
    let l = step(text, first, from, to, true);
    l && shapeOf(text.slice(l.start, l.end)) === shape;
    l = step(text, l, from, to, true)
  ) {
    first = l;
    count++;
  }
  for (
    let l = step(text, last, from, to, false);
    l && shapeOf(text.slice(l.start, l.end)) === shape;
    l = step(text, l, from, to, false)
  ) {
    last = l;
    count++;
  }
  return { first, last, count };
}

/**
 * The skimmed lines of text[from, to] (`from` a line start, `to` a line end) from the
 * start or, `backward`, from the end, as many as show `budget` characters (each with its
 * newline; at least one), in reading order from that end; `complete` when that is all
 * of them. Look-alike runs are the same whichever end they are read from, and each
 * line's shape is computed once.
 */
export function skim(
  text: string,
  from: number,
  to: number,
  budget: number,
  backward = false,
): { entries: Entry[]; complete: boolean } {
  const entries: Entry[] = [];
  let used = 0;
  const fits = (shown: string): boolean => {
    const size = shown.length + 1;
    if (used + size > budget && entries.length > 0) return false;
    used += size;
    return true;
  };
  const naming = namingChars(text.length);
  let line = backward ? lineTo(text, to, from) : lineFrom(text, from, to);
  let own = text.slice(line.start, line.end);
  let shape = shapeOrBlank(own);
  for (;;) {
    // The run that starts here: its lines while fewer than SIMILAR_RUN, then only its far end.
    const run: Entry[] = [{ ...line, text: own }];
    let far = line;
    let farText = own;
    let count = 1;
    let next = step(text, line, from, to, backward);
    let nextText = "";
    let nextShape: string | undefined;
    while (next !== undefined) {
      nextText = text.slice(next.start, next.end);
      nextShape = shapeOrBlank(nextText);
      if (shape === undefined || nextShape !== shape) break;
      far = next;
      farText = nextText;
      if (++count < SIMILAR_RUN) run.push({ ...next, text: nextText });
      next = step(text, next, from, to, backward);
    }
    if (count >= SIMILAR_RUN) {
      const [first, last] = backward ? [far, line] : [line, far];
      const marker = omitted(`${count - 2} similar lines`);
      if (last.start - first.end - 2 > marker.length + naming) {
        run.length = 0;
        run.push(
          { ...line, text: own },
          { start: first.end + 1, end: last.start - 1, text: marker, collapsed: true },
          { ...far, text: farText },
        );
      } else {
        // A run of short lines stays whole: its marker, named as recall names it, would cost more than it saves.
        for (let l = step(text, run.at(-1) as Line, from, to, backward); l; l = step(text, l, from, to, backward)) {
          run.push({ ...l, text: text.slice(l.start, l.end) });
          if (l.start === far.start) break;
        }
      }
    }
    for (const e of run) {
      if (!fits(e.text)) return { entries, complete: false };
      entries.push(e);
    }
    if (next === undefined) return { entries, complete: used <= budget };
    line = next;
    own = nextText;
    shape = nextShape;
  }
}
