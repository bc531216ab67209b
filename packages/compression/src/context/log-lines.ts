import type { ContextLimits } from "./levels.ts";
import { spanIndex } from "./span-index.ts";
import { cutMiddle, omitted } from "./truncate.ts";

// Line-oriented output (build logs, test runs, file views, grep hits) shortened the way a
// reader skims it: the first screen (the command and its set-up), the last screen (the
// verdict), and from the middle the lines that say something went wrong. Long runs of
// lines that differ only in their numbers (progress, "compiling module_17 ... ok") keep
// their first and last line.

/** Lines a reader of a log looks for; they survive the cut of the middle. */
const SIGNAL =
  /\b(?:errors?|fail(?:ed|ure|ures|s)?|exception|fatal|panic(?:ked)?|traceback|warn(?:ing)?|assert(?:ion)?(?:error)?|denied|refused|not found|cannot|unable to|undefined|segmentation fault|timed? ?out)\b|✗|✘|❌|FAIL|ERR!/i;
/** From this many consecutive look-alike lines, only the first and last stay. */
const SIMILAR_RUN = 5;
/** A kept signal line longer than this is cut: the message is at its start. */
const SIGNAL_LINE_CHARS = 400;

/**
 * A line with its numbers and hashes masked: lines of one shape are one kind of event.
 * A line without a digit has neither (a hash has digits but for one in 10^4), and most
 * lines of a log are worth the quick test.
 */
function shapeOf(line: string): string {
  if (!/\d/.test(line)) return line;
  return line.replace(/\b[0-9a-f]{7,}\b/gi, "#").replace(/\d+/g, "0");
}

/** Runs of SIMILAR_RUN or more look-alike lines reduced to their first and last line. */
function collapseSimilarRuns(lines: string[]): string[] {
  const shapes = lines.map(shapeOf);
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? "";
    const shape = shapes[i];
    let j = i + 1;
    while (j < lines.length && line.trim() !== "" && shapes[j] === shape) j++;
    const run = j - i;
    if (run >= SIMILAR_RUN) {
      out.push(line, omitted(`${run - 2} similar lines`), lines[j - 1] ?? "");
    } else {
      for (let k = i; k < j; k++) out.push(lines[k] ?? "");
    }
    i = j;
  }
  return out;
}

/** The first of `indices` whose lines fit `budget` characters (at least one). */
function takeLines(lines: string[], indices: Iterable<number>, budget: number): number[] {
  const kept: number[] = [];
  let used = 0;
  for (const i of indices) {
    const size = (lines[i] ?? "").length + 1;
    if (used + size > budget && kept.length > 0) break;
    kept.push(i);
    used += size;
  }
  return kept;
}

function* range(from: number, to: number, step = 1): Generator<number> {
  for (let i = from; step > 0 ? i < to : i > to; i += step) yield i;
}

/**
 * A long line-oriented text within the level's budget: head, tail, and the middle's
 * signal lines, each stretch that went replaced by one marker line.
 */
export function shortenLines(text: string, limits: ContextLimits): string {
  const lines = collapseSimilarRuns(text.split("\n"));
  const collapsed = lines.join("\n");
  if (collapsed.length <= limits.keepHead + limits.keepTail + limits.keepSignals) return collapsed;
  const head = takeLines(lines, range(0, lines.length), limits.keepHead);
  const headEnd = (head.at(-1) ?? -1) + 1;
  const tail = takeLines(lines, range(lines.length - 1, headEnd - 1, -1), limits.keepTail);
  const tailStart = tail.at(-1) ?? lines.length;
  const middle = range(headEnd, tailStart);
  const signals = takeLines(
    lines,
    [...middle].filter((i) => SIGNAL.test(lines[i] ?? "")),
    limits.keepSignals,
  );
  const signalSet = new Set(signals);
  const keep = new Set([...head, ...tail, ...signals]);
  const out: string[] = [];
  const gone: string[] = [];
  let firstMarker = -1;
  let gap = 0;
  const closeGap = () => {
    if (gap === 0) return;
    if (firstMarker < 0) firstMarker = out.length;
    out.push(omitted(`${gap} lines`));
    gap = 0;
  };
  for (let i = 0; i < lines.length; i++) {
    if (!keep.has(i)) {
      gone.push(lines[i] ?? "");
      gap++;
      continue;
    }
    closeGap();
    const line = lines[i] ?? "";
    const cap = signalSet.has(i) ? SIGNAL_LINE_CHARS : Math.max(limits.keepHead, limits.keepTail);
    if (line.length > cap) {
      gone.push(line); // what the cut takes out of it is indexed too
      out.push(cutMiddle(line, Math.floor(cap * 0.7), Math.floor(cap * 0.3)));
    } else {
      out.push(line);
    }
  }
  closeGap();
  // The names of what went, beside the first cut.
  const index = spanIndex(gone.join("\n"), out.join("\n"), limits.keepNames);
  if (index && firstMarker >= 0) out.splice(firstMarker + 1, 0, index);
  return out.join("\n");
}
