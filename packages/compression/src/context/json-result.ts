import type { ContextLimits } from "./levels.ts";
import { shortenLines } from "./log-lines.ts";
import { spanIndex } from "./span-index.ts";
import { cutMiddle } from "./truncate.ts";

// A JSON tool result (an API response, `gh ... --json`, a dump) shortened by its
// structure rather than by characters: every key stays, long arrays keep their first
// items and say how many went, long strings keep their head and tail. What is left is
// still valid JSON, so the agent can read it as the tool returned it. A string that is
// most of the result (the body of an issue or a PR, a log inside an API response) is
// the content itself and is shortened as text, with the whole budget.

/** Larger texts are not parsed: parsing is the cost, and a head/tail cut does as well there. */
const MAX_PARSE_CHARS = 2_000_000;

/** Of the level's name budget, the share one cut string or array may use: a result can hold many. */
const JSON_NAMES_SHARE = 0.5;

/** A string holding more than this share of the result is its main content. */
const MAIN_STRING_SHARE = 0.5;

function shortenValue(value: unknown, limits: ContextLimits, main: string | undefined): unknown {
  if (typeof value === "string") {
    if (value.length <= limits.jsonStringChars) return value;
    if (value === main) return shortenLines(value, limits);
    const cut = cutMiddle(value, Math.floor(limits.jsonStringChars * 0.6), Math.floor(limits.jsonStringChars * 0.4));
    // The names the cut took out, within a share of the budget like the string's own.
    const index = spanIndex(value, cut, Math.floor(limits.keepNames * JSON_NAMES_SHARE), false);
    return index ? `${cut}\n${index}` : cut;
  }
  if (Array.isArray(value)) {
    const kept = value.slice(0, limits.jsonArrayItems).map((v) => shortenValue(v, limits, main));
    const more = value.length - kept.length;
    if (more === 0) return kept;
    const index = spanIndex(
      itemsText(value.slice(kept.length)),
      JSON.stringify(kept),
      Math.floor(limits.keepNames * JSON_NAMES_SHARE),
      false,
    );
    return [...kept, `[terse: ${more} more items omitted]`, ...(index ? [index] : [])];
  }
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = shortenValue(v, limits, main);
    return out;
  }
  return value;
}

/**
 * The JSON text of the items with each object of the array on a line of its own (a
 * newline for the comma between two objects: the same length and the same names): the
 * name index reads a line once, and a long array repeats most of its items.
 */
function itemsText(items: unknown[]): string {
  return JSON.stringify(items).replaceAll("},{", "}\n{");
}

/** The indentation the text was written with ("" for compact JSON). */
function indentOf(text: string): string {
  const m = /^[[{]\s*\n([ \t]+)\S/.exec(text);
  return m?.[1] ?? "";
}

/** The JSON text shortened by structure, or null when the text is not one JSON value. */
export function shortenJson(text: string, limits: ContextLimits): string | null {
  const trimmed = text.trim();
  const first = trimmed[0];
  if ((first !== "{" && first !== "[") || trimmed.length > MAX_PARSE_CHARS) return null;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return null;
  }
  const main = longestString(value);
  const isMain = main !== undefined && main.length > trimmed.length * MAIN_STRING_SHARE;
  return JSON.stringify(shortenValue(value, limits, isMain ? main : undefined), null, indentOf(trimmed));
}

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
