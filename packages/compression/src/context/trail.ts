import type { ToolResultMapper } from "@terse/wire-formats";

// A session's last request, remembered so that its next one is continued from it: an
// agent resends its whole history every turn, and walking it all again (parsing every
// action and observation, comparing and counting every result) made a request's cost
// grow with the session (docs/benchmarks.md, agent sessions). The next request's items
// are compared with this one's (as values: a memory compare of their texts), and the
// ones it shares are answered from here; only the items after them are walked.

export type ItemWalker = ReturnType<ToolResultMapper["walker"]>;

/** One tool result as compressed, with the chain key after it (what the next result's compressed form depends on). */
export interface Step {
  hash: string;
  /** What a later result repeats it by: the digest of its output (compress-context.ts, resultOf). */
  outputHash: string;
  ref: string;
  visible: string;
  key: string;
  /** Set when the result was cut: its recall handle. */
  handle: string | undefined;
}

export interface Trail {
  /** The level, and whether cuts name recall handles: what the compressed forms depend on besides the texts. */
  mode: string;
  /** The request's items as the caller sent them, and what each became (undefined: unchanged). */
  items: unknown[];
  outputs: unknown[];
  /** After each item: how many results so far, the tokens the changed items saved so far, and the characters of its texts so far. */
  resultsAfter: number[];
  savedAfter: number[];
  /**
   * The characters of the texts the items hold (results, messages, tools; charsOfJson): the
   * last is what bounds the memory of trails (sizeOf), whatever part of a request is large.
   */
  charsAfter: number[];
  /** The walker after the last item: where a request that resends them all goes on from. */
  walker: ItemWalker | undefined;
  /** Its results in order, as sent (text, ref, command) and as compressed. */
  texts: string[];
  refs: string[];
  commands: (string | undefined)[];
  steps: Step[];
}

/** Characters of the texts the trail's items hold. */
const sizeOf = (trail: Trail): number => trail.charsAfter.at(-1) ?? 0;

/** The trails of the sessions seen last, newest first; bounded by count and by the characters their results hold. */
const trails: Trail[] = [];
const TRAILS = 64;
const TRAIL_CHARS = 32_000_000;

export function forgetTrails(): void {
  trails.length = 0;
}

/** Characters of the results the remembered trails hold. */
export function trailChars(): number {
  let chars = 0;
  for (const trail of trails) chars += sizeOf(trail);
  return chars;
}

/**
 * The trail whose items the request resends the most of, and how many it resends, where
 * they hold at least one tool result. A trail is tried when the request has its last
 * item, or the one before it (a client may mark its newest message for the prompt cache
 * and move the mark on with the next turn): one cheap compare per trail. The first trail
 * (newest first) the request resends whole is its session's: the search ends there.
 */
export function trailResent(mode: string, items: readonly unknown[]): { trail: Trail; shared: number } | undefined {
  let best: { trail: Trail; shared: number } | undefined;
  for (const trail of trails) {
    if (trail.mode !== mode) continue;
    const m = Math.min(trail.items.length, items.length);
    if (m === 0) continue;
    const last = sameJson(items[m - 1], trail.items[m - 1]);
    if (!last && !(m >= 2 && sameJson(items[m - 2], trail.items[m - 2]))) continue;
    // The item the probe found the same is not compared again (often the newest, longest result).
    const known = last ? m - 1 : m - 2;
    let shared = 0;
    while (shared < known && sameJson(items[shared], trail.items[shared])) shared++;
    if (shared === known) shared = known + 1;
    if (shared > 0 && (trail.resultsAfter[shared - 1] ?? 0) > 0 && shared > (best?.shared ?? 0)) {
      best = { trail, shared };
      if (shared === trail.items.length) break;
    }
  }
  return best;
}

/** The trail whose first result is this one: a session found by its results, where its items were not resent. */
export function trailStartingWith(mode: string, text: string, ref: string): Trail | undefined {
  return trails.find((t) => t.mode === mode && t.refs[0] === ref && t.texts[0] === text);
}

/** A new trail holding `previous`'s first `shared` items (and their results) as this request's. */
export function trailFrom(mode: string, items: readonly unknown[], previous: Trail | undefined, shared: number): Trail {
  if (!previous || shared === 0) {
    return {
      mode,
      items: items.slice(),
      outputs: [],
      resultsAfter: [],
      savedAfter: [],
      charsAfter: [],
      walker: undefined,
      texts: [],
      refs: [],
      commands: [],
      steps: [],
    };
  }
  const results = previous.resultsAfter[shared - 1] ?? 0;
  const texts = previous.texts.slice(0, results);
  return {
    mode,
    items: items.slice(),
    outputs: previous.outputs.slice(0, shared),
    resultsAfter: previous.resultsAfter.slice(0, shared),
    savedAfter: previous.savedAfter.slice(0, shared),
    charsAfter: previous.charsAfter.slice(0, shared),
    walker: undefined,
    texts,
    refs: previous.refs.slice(0, results),
    commands: previous.commands.slice(0, results),
    steps: previous.steps.slice(0, results),
  };
}

/** Records one more item of the trail's request (after its results are pushed): the counts after it. */
export function itemDone(trail: Trail, item: unknown, output: unknown, saved: number): void {
  trail.outputs.push(output === item ? undefined : output);
  trail.resultsAfter.push(trail.steps.length);
  trail.savedAfter.push(saved);
  trail.charsAfter.push(sizeOf(trail) + charsOfJson(item));
}

/** Characters of the strings in a parsed JSON value, keys included. */
function charsOfJson(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (typeof value !== "object" || value === null) return 0;
  let chars = 0;
  if (Array.isArray(value)) {
    for (const v of value) chars += charsOfJson(v);
    return chars;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) chars += key.length + charsOfJson(record[key]);
  return chars;
}

/** Remembers `trail` as its session's newest, in place of `replaced`; the oldest go past the bounds. */
export function keepTrail(trail: Trail, replaced: Trail | undefined): void {
  const at = replaced ? trails.indexOf(replaced) : -1;
  if (at >= 0) trails.splice(at, 1);
  trails.unshift(trail);
  let chars = 0;
  for (let i = 0; i < trails.length; i++) {
    chars += sizeOf(trails[i] as Trail);
    if (i >= TRAILS || chars > TRAIL_CHARS) {
      trails.length = i;
      break;
    }
  }
}

/**
 * Whether two parsed JSON values are the same. Texts are compared whole (a memory
 * compare); an object's keys as a set, walked without listing them (most of the cost of
 * a compare was the lists): the item a request resends is the same one in every way the
 * model reads, and a changed item keeps the key order it was first compressed in, which
 * keeps the request's bytes as the last one sent them. A `__proto__` key (JSON.parse makes
 * it an own key; indexing reads the prototype) is never taken as the same.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let keys = 0;
  for (const key in x) {
    if (key === "__proto__" || !sameJson(x[key], y[key])) return false;
    keys++;
  }
  for (const _ in y) keys--;
  return keys === 0;
}
