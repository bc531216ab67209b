import { type Entry, type Line, lineFrom, lookAlikeRun, newlinesIn, SIMILAR_RUN, skim } from "./collapsed-lines.ts";
import { repeatable } from "./kinds.ts";
import { namingChars } from "./recall-handles.ts";
import type { CutContext } from "./shorten.ts";
import { cutIndex } from "./span-index.ts";
import { cutMiddle, omitted } from "./truncate.ts";

// Line-oriented output (build logs, test runs, file views, grep hits) shortened the way a
// reader skims it: the first screen (the command and its set-up), the last screen (the
// verdict), and from the middle the lines that say something went wrong. Long runs of
// look-alike lines keep their first and last line (collapsed-lines.ts).
//
// The work is linear and small however long the text: the head and the tail are read
// line by line from the ends only as far as they keep, the middle is searched once for
// error lines and counted by its newlines, never split into lines.

/** Lines a reader of a log looks for; they survive the cut of the middle. */
const SIGNAL =
  /\b(?:errors?|fail(?:ed|ure|ures|s)?|exception|fatal|panic(?:ked)?|traceback|warn(?:ing)?|assert(?:ion)?(?:error)?|denied|refused|not found|cannot|unable to|undefined|segmentation fault|timed? ?out)\b|✗|✘|❌|FAIL|ERR!/i;
const SIGNAL_SEARCH = new RegExp(SIGNAL.source, "gi");
/** A kept signal line longer than this is cut: the message is at its start. */
const SIGNAL_LINE_CHARS = 400;

/** The first of `items` that fit `budget` characters (at least one). */
function take<T>(items: Iterable<T>, sizeOf: (item: T) => number, budget: number): T[] {
  const kept: T[] = [];
  let used = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (used + size > budget && kept.length > 0) break;
    kept.push(item);
    used += size;
  }
  return kept;
}

const lineSize = (l: Line) => l.end - l.start + 1;

/**
 * The error lines of text[from, to] in order, as a reader of the collapsed text would
 * see them: of a run of look-alike lines only the first and last show.
 */
function* signalLines(text: string, from: number, to: number): Generator<Line> {
  let scannedTo = from;
  SIGNAL_SEARCH.lastIndex = from;
  for (let m = SIGNAL_SEARCH.exec(text); m !== null && m.index < to; m = SIGNAL_SEARCH.exec(text)) {
    const start = Math.max(scannedTo, text.lastIndexOf("\n", m.index) + 1);
    const hit = lineFrom(text, start, to);
    // The run before `scannedTo` was measured already; a run found again there was short.
    const run = lookAlikeRun(text, hit, scannedTo, to);
    if (run.count < SIMILAR_RUN) {
      yield hit;
      scannedTo = hit.end + 1;
    } else {
      for (const l of [run.first, run.last]) if (SIGNAL.test(text.slice(l.start, l.end))) yield l;
      scannedTo = run.last.end + 1;
    }
    SIGNAL_SEARCH.lastIndex = scannedTo;
  }
}

/**
 * A long line-oriented text within the level's budget: head, tail, and the middle's
 * signal lines, each stretch that went replaced by one marker line counting its lines.
 */
export function shortenLines(text: string, context: CutContext): string {
  const { limits, command, shown } = context;
  const whole = limits.keepHead + limits.keepTail + limits.keepSignals;
  // The collapsed text, read from the start until it is certainly longer than the budget.
  const forward = skim(text, 0, text.length, whole + 1);
  if (forward.complete) {
    const collapsed = forward.entries.map((e) => e.text);
    // The runs' middles went: their names are listed after the first, as a cut's are.
    const runs = forward.entries.filter((e) => e.collapsed);
    const index = cutIndex(
      runs.map((e) => text.slice(e.start, e.end)),
      collapsed,
      limits.keepNames,
      shown,
    );
    if (index && runs[0]) collapsed.splice(forward.entries.indexOf(runs[0]) + 1, 0, index);
    sayHowToSeeAgain(collapsed, command);
    return collapsed.join("\n");
  }
  const head = take(forward.entries, (e) => e.text.length + 1, limits.keepHead);
  const midStart = (head.at(-1)?.end ?? -1) + 1;
  const tail =
    midStart <= text.length ? skim(text, midStart, text.length, limits.keepTail, true).entries.reverse() : [];
  const midEnd = (tail[0]?.start ?? text.length + 1) - 1;
  const signals = take(signalLines(text, midStart, midEnd), lineSize, limits.keepSignals);

  const out: string[] = [];
  // What went, in the text's order (names are listed by first appearance): the stretches
  // between kept lines and the long kept lines a cut shortened.
  const gone: string[] = [];
  let firstMarker = -1;
  const keep = (line: string, cap: number) => {
    if (line.length <= cap) return out.push(line);
    gone.push(line);
    // A long line cut is a cut too: the index stands after it when it comes first.
    if (firstMarker < 0) firstMarker = out.length;
    return out.push(cutMiddle(line, Math.floor(cap * 0.7), Math.floor(cap * 0.3)));
  };
  const naming = namingChars(text.length);
  const gap = (from: number, to: number) => {
    if (from > to) return;
    const marker = omitted(`${newlinesIn(text, from, to) + 1} lines`);
    // A gap no longer than its marker, named as recall names it, stays: cut, it would cost
    // more than it saves (a separator line between two error lines).
    if (to - from <= marker.length + naming) return out.push(text.slice(from, to));
    if (firstMarker < 0) firstMarker = out.length;
    gone.push(text.slice(from, to));
    return out.push(marker);
  };
  // A run's middle collapsed in the head or the tail went too.
  const keepEntry = (e: Entry, cap: number) => {
    if (!e.collapsed) return keep(e.text, cap);
    gone.push(text.slice(e.start, e.end));
    if (firstMarker < 0) firstMarker = out.length;
    return out.push(e.text);
  };
  const lineCap = Math.max(limits.keepHead, limits.keepTail);
  for (const e of head) keepEntry(e, lineCap);
  let at = midStart;
  for (const s of signals) {
    gap(at, s.start - 1);
    keep(text.slice(s.start, s.end), SIGNAL_LINE_CHARS);
    at = s.end + 1;
  }
  gap(at, midEnd);
  for (const e of tail) keepEntry(e, lineCap);
  // The names of what went, beside the first cut.
  const index = cutIndex(gone, out, limits.keepNames, shown);
  if (index && firstMarker >= 0) out.splice(firstMarker + 1, 0, index);
  sayHowToSeeAgain(out, command);
  return out.join("\n");
}

/** The first cut's marker says how to see it all again, where the command is short enough to repeat. */
function sayHowToSeeAgain(out: string[], command: string | undefined): void {
  const again = repeatable(command);
  const first = again === undefined ? -1 : out.findIndex((l) => l.startsWith("[terse: ") && l.endsWith(" omitted]"));
  if (first >= 0) out[first] = `${out[first]?.slice(0, -1)}; \`${again}\` shows all]`;
}
