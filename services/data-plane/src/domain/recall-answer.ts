import type { RecallCall } from "@terse/wire-formats";

// What terse answers one terse_recall call with: the part of the original asked for (a
// range of lines, or the lines that hold a name the cut's index listed), or a sentence
// saying why there is none. Always a tool result the model can read, never an error to
// the client: a recall that cannot be answered is the model's to work around.

const HANDLE = /^[0-9a-f]{12}$/;
const LINES = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/;
/** Ends each result of the last recall round a request may make (RECALL_MAX_ROUNDS). */
export const LAST_RECALL_NOTE =
  "\n[terse: that was the last recall this answer may make; answer from what you have, or recall again in a later turn]";
/** A longer `match` is no name from an index: the model pasted a line. */
const MAX_MATCH_CHARS = 200;

export interface RecallAsk {
  handle: string;
  /** 1-based, inclusive; undefined: the whole text. */
  from?: number;
  to?: number;
  /** Only the lines holding this text (case-sensitive), each after its line number. */
  match?: string;
}

/** The call's arguments read, or the tool result that says what is wrong with them. */
export function readRecallCall(call: RecallCall): RecallAsk | string {
  const handle = typeof call.args.handle === "string" ? call.args.handle.trim().toLowerCase() : "";
  if (!HANDLE.test(handle)) {
    return "terse_recall: `handle` must be the 12 hex digits after `recall` in a [terse: ...] marker.";
  }
  const match = readMatch(call.args.match);
  if (match === null) return `terse_recall: \`match\` must be a name or text of 1-${MAX_MATCH_CHARS} characters.`;
  const lines = call.args.lines;
  if (lines === undefined || lines === null || lines === "") return { handle, ...match };
  const m = LINES.exec(String(lines));
  const from = m ? Number(m[1]) : Number.NaN;
  const to = m?.[2] !== undefined ? Number(m[2]) : from;
  if (!m || from < 1 || to < from)
    return `terse_recall: \`lines\` must look like 120-480 (first-last, from 1); got ${JSON.stringify(String(lines).slice(0, 40))}.`;
  return { handle, from, to, ...match };
}

/** `{match}` from the argument, {} when it is left out, null when it is no usable text. */
function readMatch(value: unknown): { match?: string } | null {
  if (value === undefined || value === null || value === "") return {};
  if (typeof value !== "string") return null;
  const match = value.trim();
  return match.length > 0 && match.length <= MAX_MATCH_CHARS ? { match } : null;
}

/** The tool result for `ask` given the original (null: none kept), at most `maxChars` long. */
export function recallAnswer(ask: RecallAsk, original: string | null, maxChars: number): string {
  if (original === null) {
    return `terse_recall: nothing is kept under ${ask.handle} (unknown, or expired after an hour unused). Run the command or read the file again if you need it.`;
  }
  const lines = original.split("\n");
  const from = Math.min(ask.from ?? 1, lines.length);
  const to = Math.min(ask.to ?? lines.length, lines.length);
  if (ask.match !== undefined) return matchingLines(ask, lines, from, to, ask.match, maxChars);
  let text = "";
  let last = from - 1;
  for (let n = from; n <= to; n++) {
    const line = lines[n - 1] as string;
    if (text.length + line.length + 1 > maxChars && n > from) break;
    text += n === from ? line : `\n${line}`;
    last = n;
  }
  if (text.length > maxChars) text = text.slice(0, maxChars); // one line longer than the page
  const more =
    last < to ? `\n[terse: lines ${last + 1}-${to} follow; recall ${ask.handle} lines ${last + 1}-${to}]` : "";
  return `${text}${more}`;
}

/**
 * The lines from-to holding `match`, each as `N: line` (the number is what the model asks
 * for next, with the lines around it), paged like a range: the note at the end says from
 * which line to ask again.
 */
function matchingLines(ask: RecallAsk, lines: string[], from: number, to: number, match: string, maxChars: number) {
  let text = "";
  for (let n = from; n <= to; n++) {
    const line = lines[n - 1] as string;
    if (!line.includes(match)) continue;
    const numbered = `${n}: ${line}`;
    if (text.length + numbered.length + 1 > maxChars && text !== "") {
      const again = `recall ${ask.handle} lines ${n}-${to} match ${JSON.stringify(match)}`;
      return `${text}\n[terse: more lines from ${n} on hold it; ${again}]`;
    }
    text += text === "" ? numbered.slice(0, maxChars) : `\n${numbered}`;
  }
  const where = from === 1 && to === lines.length ? "" : ` ${from}-${to}`;
  return text || `terse_recall: no line of ${ask.handle}${where} holds ${JSON.stringify(match)}.`;
}
