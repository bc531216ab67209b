import { createHash } from "node:crypto";
import { lineKey } from "./line-key.ts";
import { namesIn } from "./names.ts";

// What the conversation already shows, so that a later tool result can point at it
// instead of repeating it: whole results (the same command output again, a file read
// again unchanged) and single lines (a file view that overlaps an earlier view, a test
// run repeated with a few lines changed). Only the LATER copy is ever replaced and only
// by what came before it, never the other way round: prefix stability.

/** Lines shorter than this (blank, a lone brace) are too common to prove a repeat. */
const MIN_LINE_CHARS = 12;
/** A run must repeat at least this many real lines to be replaced. */
const MIN_RUN_LINES = 3;

/** Texts from this long have their digest remembered: an agent resends each one every turn. */
const REMEMBER_DIGEST_FROM = 16_384;
/** Characters of remembered texts in all: a few long sessions' worth. */
const REMEMBERED_DIGEST_CHARS = 16_000_000;
const rememberedDigests = new Map<string, { text: string; hash: string }>();
let rememberedChars = 0;

const sha1 = (text: string): string => createHash("sha1").update(text).digest("base64");

/** Cheap to compute, and only a candidate: the text itself is compared before its digest is reused. */
function fingerprint(text: string): string {
  const third = Math.floor(text.length / 3);
  return `${text.length}\u0000${text.slice(0, 64)}\u0000${text.slice(third, third + 64)}\u0000${text.slice(-64)}`;
}

/**
 * The content digest of a text. A long one seen before is found by its fingerprint and
 * confirmed by comparing the texts (a memory compare, several times faster than hashing
 * a megabyte again); a wrong digest is never possible, only a cache miss.
 */
export function digest(text: string): string {
  if (text.length < REMEMBER_DIGEST_FROM) return sha1(text);
  const key = fingerprint(text);
  const known = rememberedDigests.get(key);
  if (known && known.text === text) return known.hash;
  const hash = sha1(text);
  if (known) rememberedChars -= known.text.length;
  rememberedDigests.delete(key);
  rememberedDigests.set(key, { text, hash });
  rememberedChars += text.length;
  for (const [oldKey, old] of rememberedDigests) {
    if (rememberedChars <= REMEMBERED_DIGEST_CHARS) break;
    rememberedDigests.delete(oldKey);
    rememberedChars -= old.text.length;
  }
  return hash;
}

/** Characters of the texts whose digests are remembered. */
export const digestedChars = (): number => rememberedChars;

/** Forgets the remembered digests: benchmarks start each replayed session cold. */
export function forgetDigests(): void {
  rememberedDigests.clear();
  rememberedChars = 0;
}

const isMarker = (line: string) => line.startsWith("[terse: ");

/** The end of the line starting at `start`: its newline, or the end of the text. */
function lineEnd(text: string, start: number): number {
  const nl = text.indexOf("\n", start);
  return nl < 0 ? text.length : nl;
}

export class SeenContent {
  private readonly results = new Map<string, string>();
  private readonly lines = new Map<string, string>();
  /** The lineKey of every line in `lines`: most lines of a new result are none of them, and are told so without a copy. */
  private readonly lineKeys = new Set<number>();

  /** The reference of an earlier result with exactly this text, if any. */
  earlierCopy(hash: string): string | undefined {
    return this.results.get(hash);
  }

  /**
   * The text with every run of lines that an earlier result already shows (at least
   * `minRunChars` characters) replaced by one line naming that result. Read line by line
   * in place: a long result that repeats nothing is never split into an array.
   */
  replaceRepeatedRuns(text: string, minRunChars: number): string {
    if (this.lines.size === 0) return text;
    const out: string[] = [];
    let copiedTo = 0;
    for (let start = 0; start <= text.length; ) {
      const run = this.runAt(text, start);
      if (run !== undefined && run.chars >= minRunChars) {
        out.push(text.slice(copiedTo, start), `[terse: ${run.lines} lines as in tool result ${run.ref} above]`);
        copiedTo = run.end;
        start = run.end + 1;
      } else {
        start = lineEnd(text, start) + 1;
      }
    }
    return out.length === 0 ? text : out.join("") + text.slice(copiedTo);
  }

  /**
   * Every name the results so far show as the agent sees them (their markers and indexes
   * included): a later cut's index leaves them out, since the conversation shows them
   * already (span-index.ts).
   */
  readonly names = new Set<string>();
  /** Characters of the texts remembered: what the lines and names held here are cut from (the memory it holds). */
  chars = 0;

  /** Records the text as the agent now sees it under `ref` (the whole, each line, and its names). */
  remember(hash: string, visible: string, ref: string): void {
    this.chars += visible.length;
    namesIn(visible, this.names);
    if (!this.results.has(hash)) this.results.set(hash, ref);
    for (const line of visible.split("\n")) {
      if (line.trim().length < MIN_LINE_CHARS || isMarker(line) || this.lines.has(line)) continue;
      this.lines.set(line, ref);
      this.lineKeys.add(lineKey(line, 0, line.length));
    }
  }

  /**
   * The longest run from offset `start` (a line start) of known lines (short lines
   * allowed between them), ending on a known line: its end (the offset after its last
   * line), lines, size and the result its first line came from; undefined when the run
   * is not MIN_RUN_LINES known lines long.
   */
  private runAt(text: string, start: number): { end: number; lines: number; chars: number; ref: string } | undefined {
    const firstEnd = lineEnd(text, start);
    if (firstEnd - start < MIN_LINE_CHARS || !this.lineKeys.has(lineKey(text, start, firstEnd))) return undefined;
    const ref = this.lines.get(text.slice(start, firstEnd));
    if (ref === undefined) return undefined;
    let end = start;
    let known = 0;
    let lines = 0;
    let chars = 0;
    let pendingLines = 0;
    let pendingChars = 0;
    for (let from = start; from <= text.length; ) {
      const to = lineEnd(text, from);
      const line = text.slice(from, to);
      from = to + 1;
      if (line.trim().length < MIN_LINE_CHARS) {
        pendingLines++;
        pendingChars += line.length + 1;
        continue;
      }
      if (!this.lines.has(line)) break;
      known++;
      lines += pendingLines + 1;
      chars += pendingChars + line.length + 1;
      pendingLines = 0;
      pendingChars = 0;
      end = to;
    }
    return known >= MIN_RUN_LINES ? { end, lines, chars, ref } : undefined;
  }
}
