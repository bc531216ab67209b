import { roundTrips } from "./json-round-trip.ts";
import type { ContextLimits } from "./levels.ts";
import { shortenLines } from "./log-lines.ts";
import type { CutContext } from "./shorten.ts";
import { INDEX_NOTE, indexBudget, spanIndex } from "./span-index.ts";
import { cutMiddle } from "./truncate.ts";

// A JSON tool result (an API response, `gh ... --json`, a dump) shortened by its
// structure rather than by characters: every key stays, long arrays keep their first
// items and say how many went, long strings keep their head and tail. What is left is
// still valid JSON, so the agent can read it as the tool returned it. A string that is
// most of the result (the body of an issue or a PR, a log inside an API response) is
// the content itself and is shortened as text, with the whole budget. The names of all
// that went are listed once, beside the first cut (one index for the whole result: a name
// every item repeats is listed once, and the budget follows the size of all that went).

/** Larger texts are not parsed: parsing is the cost, and a head/tail cut does as well there. */
const MAX_PARSE_CHARS = 2_000_000;

/**
 * Deeper JSON is not walked (the walks here recurse, and thousands of levels overflow the
 * stack); it is cut as text. serde_json's default limit: no API response comes near it.
 */
const MAX_DEPTH = 128;

/** A string holding more than this share of the result is its main content. */
const MAIN_STRING_SHARE = 0.5;

/** The main string shortened as the output it is, or undefined where its kind spares it. */
export type ShortenMain = (main: string) => string | undefined;

/** One shortening pass: where the index goes (at the first cut, then spent), and the main string's cut, made once. */
interface Pass {
  main: string | undefined;
  shortenMain: ShortenMain;
  /** The names the conversation showed before the result: no index lists them again. */
  shown: ReadonlySet<string> | undefined;
  mainShortened?: string;
  index?: string;
}

/** The index beside a cut, the first time: an array item after the marker, a line after a cut string. */
function spendIndex(pass: Pass): string | undefined {
  const index = pass.index;
  pass.index = undefined;
  return index;
}

function shortenValue(value: unknown, limits: ContextLimits, pass: Pass): unknown {
  if (typeof value === "string") {
    if (value.length <= limits.jsonStringChars) return value;
    let cut: string;
    if (value === pass.main) {
      cut = pass.mainShortened ??= pass.shortenMain(value) ?? value;
      if (cut === value) return value;
    } else cut = cutMiddle(value, Math.floor(limits.jsonStringChars * 0.6), Math.floor(limits.jsonStringChars * 0.4));
    const index = spendIndex(pass);
    return index ? `${cut}\n${index}` : cut;
  }
  if (Array.isArray(value)) {
    const more = value.length - limits.jsonArrayItems;
    if (more <= 0 || costsNoMore(value, more)) return value.map((v) => shortenValue(v, limits, pass));
    const kept = value.slice(0, limits.jsonArrayItems).map((v) => shortenValue(v, limits, pass));
    const index = spendIndex(pass);
    return [...kept, omittedItems(more), ...(index ? [index] : [])];
  }
  if (typeof value === "object" && value !== null) {
    // fromEntries defines each key, where assigning `out["__proto__"]` would set the prototype and lose the key.
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shortenValue(v, limits, pass)]));
  }
  return value;
}

/** The marker in place of an array's last `more` items. */
const omittedItems = (more: number): string => `[terse: ${more} more items omitted]`;

/** Items past which the last few are not weighed against their marker: they cost more than it. */
const FEW_ITEMS = 3;

/** Whether the array's last `more` items, written out, are no longer than the marker that would say they went. */
function costsNoMore(value: unknown[], more: number): boolean {
  if (more > FEW_ITEMS) return false;
  let chars = 0;
  for (let i = value.length - more; i < value.length; i++) chars += (JSON.stringify(value[i])?.length ?? 4) + 1;
  return chars <= omittedItems(more).length + 2;
}

/** The indentation the text was written with ("" for compact JSON). */
function indentOf(text: string): string {
  const m = /^[[{]\s*\n([ \t]+)\S/.exec(text);
  return m?.[1] ?? "";
}

/**
 * The JSON text shortened by structure, its main string by `shortenMain`, with the index of
 * what went beside its first cut, or null when the text is not one JSON value. Where what
 * is around the main string is still longer than the level shortens to, it is cut as lines,
 * and the index follows as its last line. Null too where writing the parsed value out again
 * would change what the tool returned, or it is nested too deep to walk (json-round-trip.ts):
 * such a result is cut as text, so what is kept of it is as the tool wrote it.
 */
export function shortenJson(text: string, context: CutContext, shortenMain: ShortenMain): string | null {
  const { limits, shown } = context;
  const trimmed = text.trim();
  const first = trimmed[0];
  if ((first !== "{" && first !== "[") || trimmed.length > MAX_PARSE_CHARS) return null;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return null;
  }
  if (!roundTrips(trimmed, MAX_DEPTH)) return null;
  const longest = longestString(value);
  const pass: Pass = {
    main: longest !== undefined && longest.length > trimmed.length * MAIN_STRING_SHARE ? longest : undefined,
    shortenMain,
    shown,
  };
  const shortened = (index?: string) =>
    JSON.stringify(shortenValue(value, limits, Object.assign(pass, { index })), null, indentOf(trimmed));
  const plain = shortened();
  // One budget for the whole result: the main string, shortened as its kind within that
  // kind's budget, listed its names already; only what is around it may still be too long
  // (cut as lines, the JSON would not be JSON any more).
  const mainIndex = indexChars(pass.mainShortened);
  const around = plain.length - (pass.mainShortened === undefined ? 0 : JSON.stringify(pass.mainShortened).length);
  const out = around > limits.shortenAbove ? shortenLines(plain, context) : plain;
  const budget = indexBudget(limits.keepNames, trimmed.length - out.length) - mainIndex;
  const index = spanIndex(stringsOf(value), unescaped(out), budget, shown);
  if (!index) return out;
  return out === plain ? shortened(index) : `${out}\n${index}`;
}

/**
 * The keys, strings and numbers of a JSON value: what the index reads. Read from the
 * parsed value, not the JSON text, a name that starts a line of a string is itself
 * (`\nsrc/app.py` in the text is `src/app.py`, not `nsrc/app.py`), and a long string's
 * lines are lines, which the index reads once each however often they repeat.
 */
function stringsOf(value: unknown): string[] {
  const into: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === "string") into.push(v);
    else if (typeof v === "number") into.push(String(v));
    else if (Array.isArray(v)) for (const item of v) walk(item);
    else if (typeof v === "object" && v !== null)
      for (const k in v) {
        into.push(k);
        walk((v as Record<string, unknown>)[k]);
      }
  };
  walk(value);
  return into;
}

/** The characters of the index line in `text`, if it has one. */
function indexChars(text: string | undefined): number {
  const at = text?.indexOf(INDEX_NOTE) ?? -1;
  if (text === undefined || at < 0) return 0;
  // A name holds no `]`: the first one after the note closes it.
  const end = text.indexOf("]", at);
  return (end < 0 ? text.length : end + 1) - at;
}

/** JSON text as the index compares it with the value's strings: each escape (`\n`, `\"`, `\u00e9`) a line break. */
const unescaped = (jsonText: string) => jsonText.replace(/\\(?:u[0-9a-fA-F]{4}|.)/g, "\n");

function longestString(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null) return undefined;
  let longest: string | undefined;
  for (const v of Object.values(value)) {
    const s = longestString(v);
    if (s !== undefined && s.length > (longest?.length ?? 0)) longest = s;
  }
  return longest;
}
