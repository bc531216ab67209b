// Whether a JSON text survives JSON.parse and JSON.stringify with every value it holds.
// It need not: a number is a double (an id above 2^53, a snowflake, comes back as another
// number; `1e2` as `100`, `-0` as `0`), a repeated key keeps its last value only, and an
// object's integer-like keys ("2", "10") come back first and in ascending order whatever
// order the tool wrote them in. An agent that reads a changed id acts on the wrong thing,
// so a JSON result shortened by its structure (json-result.ts) must round-trip exactly.
//
// One pass over the text, no backtracking, and the keys of each open object in a set:
// linear in the text. It reads valid JSON (JSON.parse has accepted it) and decides no
// validity of its own.

/** The largest key JSON.parse puts before the others (an array index: up to 2^32 - 2). */
const MAX_INDEX_KEY = 4_294_967_294;
const INDEX_KEY = /^(?:0|[1-9]\d{0,9})$/;

/** An open object: its keys so far, the last integer-like one, and whether another kind came. */
interface OpenObject {
  keys: Set<string>;
  lastIndex: number;
  namedKey: boolean;
}

/**
 * True when JSON.stringify(JSON.parse(`json`)) holds the same numbers, keys and key order as
 * `json` (strings are compared as values: an escape's spelling may change, `\u00e9` to `é`),
 * and nothing in it is nested deeper than `maxDepth` (a recursive walk of the value
 * overflows the stack some thousands of levels down).
 */
export function roundTrips(json: string, maxDepth: number): boolean {
  // One entry per open bracket: an object's state, or null for an array.
  const open: (OpenObject | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '"') {
      const end = stringEnd(json, i);
      const top = open.at(-1);
      if (expectKey && top) {
        if (!keyKeepsItsPlace(top, keyOf(json.slice(i, end + 1)))) return false;
        expectKey = false;
      }
      i = end;
    } else if (c === "{" || c === "[") {
      open.push(c === "{" ? { keys: new Set(), lastIndex: -1, namedKey: false } : null);
      if (open.length > maxDepth) return false;
      expectKey = c === "{";
    } else if (c === "}" || c === "]") {
      open.pop();
      expectKey = false;
    } else if (c === ",") {
      expectKey = Boolean(open.at(-1));
    } else if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) {
      const end = numberEnd(json, i);
      const literal = json.slice(i, end);
      if (String(Number(literal)) !== literal) return false;
      i = end - 1;
    }
  }
  return true;
}

/** The index of the quote that closes the string opening at `start`. */
function stringEnd(json: string, start: number): number {
  let i = start + 1;
  while (i < json.length && json[i] !== '"') i += json[i] === "\\" ? 2 : 1;
  return i;
}

/** The index just past the number literal starting at `start`. */
function numberEnd(json: string, start: number): number {
  let i = start + 1;
  while (i < json.length && /[0-9eE.+-]/.test(json[i] as string)) i++;
  return i;
}

/** A key as JSON.parse reads it: escapes decoded only where there are any. */
const keyOf = (quoted: string): string =>
  quoted.includes("\\") ? (JSON.parse(quoted) as string) : quoted.slice(1, -1);

/** Records `key` in `object`; false when it repeats a key, or JSON.parse would move it. */
function keyKeepsItsPlace(object: OpenObject, key: string): boolean {
  if (object.keys.has(key)) return false;
  object.keys.add(key);
  if (INDEX_KEY.test(key) && Number(key) <= MAX_INDEX_KEY) {
    // Parsed, integer-like keys come first, in ascending order: written so, they stay.
    if (object.namedKey || Number(key) < object.lastIndex) return false;
    object.lastIndex = Number(key);
  } else object.namedKey = true;
  return true;
}
