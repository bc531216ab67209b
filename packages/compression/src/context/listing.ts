import { repeatable } from "./kinds.ts";
import type { CutContext } from "./shorten.ts";
import { cutIndex } from "./span-index.ts";
import { omittedThroughout } from "./truncate.ts";

// A listing (grep hits, find, ls) shortened so that every distinct path stays: the paths
// are what the agent goes on to open. Repeated lines go, `ls -l` keeps the names, a grep
// hit keeps its path, line number and the start of its text; past the budget, the hits of
// one file become its path and line numbers, and the names of the text cut are listed.
// What went is from all over the listing, so one marker at its end says all of it.

const GREP_HIT = /^(\.?\/?[\w.@+-]+(?:\/[\w.@+-]+)*):(\d+)([:-])(.*)$/;
const LS_LONG = /^[dlcbps-][rwxsStT-]{9}[.@+]?\s+(?:\S+\s+){7}(.+)$/;
/** Characters of a grep hit's text kept at first, and when the budget is short. */
const HIT_TEXT = 160;

export function shortenListing(text: string, context: CutContext): string {
  const { limits, command, shown } = context;
  const budget = limits.keepHead + limits.keepTail + limits.keepSignals;
  const seen = new Set<string>();
  const lines: string[] = [];
  const gone: string[] = [];
  let dropped = 0;
  let longListed = 0;
  let clipped = 0;
  for (const raw of text.split("\n")) {
    const ls = LS_LONG.exec(raw);
    if (ls) longListed++;
    let line = ls ? (ls[1] ?? raw) : raw;
    const hit = GREP_HIT.exec(line);
    if (hit && (hit[4] ?? "").length > HIT_TEXT) {
      gone.push(line);
      clipped++;
      line = `${hit[1]}:${hit[2]}${hit[3]}${(hit[4] ?? "").slice(0, HIT_TEXT)}…`;
    }
    if (seen.has(line)) {
      dropped++;
      continue;
    }
    seen.add(line);
    lines.push(line);
  }
  let out = lines;
  if (lines.join("\n").length > budget) out = byFile(lines, gone);
  const what: string[] = [];
  if (longListed > 0) what.push(`the mode, owner, size and date of ${longListed} long-listed files`);
  if (dropped > 0) what.push(`${dropped} repeated lines`);
  if (out !== lines) what.push("the text of the hits");
  else if (clipped > 0) what.push(`the rest of ${clipped} long hits`);
  const note = what.length > 0 ? [omittedThroughout(what.join(", "), repeatable(command))] : [];
  const index = cutIndex(gone, out, limits.keepNames, shown);
  return [...out, ...note, ...(index ? [index] : [])].join("\n");
}

/** Hits grouped by file: each path once, with the line numbers of its hits; other lines as they are. */
function byFile(lines: string[], gone: string[]): string[] {
  const out: string[] = [];
  const at = new Map<string, number>();
  for (const line of lines) {
    const hit = GREP_HIT.exec(line);
    if (!hit) {
      out.push(line);
      continue;
    }
    gone.push(hit[4] ?? "");
    const path = hit[1] ?? "";
    const k = at.get(path);
    if (k === undefined) {
      at.set(path, out.length);
      out.push(`${path}:${hit[2]}`);
    } else out[k] += `,${hit[2]}`;
  }
  return out;
}
