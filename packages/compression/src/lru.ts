/**
 * What an entry holds in characters (its strings'): what bounds an Lru's memory beside
 * its count. A count alone let a few large entries (a 1 MB log's compressed form, a
 * session's remembered lines) or many mid-sized ones hold gigabytes in a long-running
 * data plane.
 */
export type CharsOf<V, K> = (value: V, key: K) => number;
const NO_CHARS = () => 0;

/** An entry's value, when it was last moved to the end, and its characters. */
interface Entry<V> {
  value: V;
  stamp: number;
  chars: number;
}

/**
 * A least-recently-used map of bounded size, nearly: the per-process memory behind the
 * memoised steps, whose results depend only on their key, so callers still see pure
 * functions. Map keeps insertion order and the oldest entry goes first. A hit is moved
 * to the end only once it sits in the older half: moving it on every hit (a delete and
 * an insert) cost more than the lookup, on the hot path of every request, and left holes
 * the Map keeps compacting. A key used at least once per half of the limit never falls
 * out. Bounded by `limit` entries and by `maxChars` characters (charsOf); an entry of more
 * than a quarter of `maxChars` is not kept at all (it would push out most of the rest).
 */
export class Lru<V, K extends string | number = string> {
  private readonly map = new Map<K, Entry<V>>();
  /** Counts insertions: an entry's stamp says how many came after it. */
  private clock = 0;
  private held = 0;

  constructor(
    private readonly limit: number,
    private readonly maxChars = Number.POSITIVE_INFINITY,
    private readonly charsOf: CharsOf<V, K> = NO_CHARS,
  ) {}

  /** Characters the entries hold (charsOf), never more than maxChars. */
  get chars(): number {
    return this.held;
  }

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const hit = this.map.get(key);
    if (hit === undefined) return undefined;
    if (this.clock - hit.stamp > this.limit / 2) {
      this.map.delete(key);
      hit.stamp = ++this.clock;
      this.map.set(key, hit);
    }
    return hit.value;
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  set(key: K, value: V): void {
    this.take(key);
    const chars = this.charsOf(value, key);
    if (chars > this.maxChars / 4) return;
    this.evictFor(chars, key);
    if (this.map.size >= this.limit) this.evictOldest(key);
    this.map.set(key, { value, stamp: ++this.clock, chars });
    this.held += chars;
  }

  /**
   * The value under `key` changed in place by `delta` characters (a TextLru bucket that took
   * one more text): counted, and other entries, oldest first, evicted while over maxChars.
   */
  grew(key: K, delta: number): void {
    const entry = this.map.get(key);
    if (entry === undefined) return;
    entry.chars += delta;
    this.held += delta;
    if (entry.chars > this.maxChars / 4) this.take(key);
    else this.evictFor(0, key);
  }

  /** Removes and returns the entry: for values that are changed by whoever takes them. */
  take(key: K): V | undefined {
    const hit = this.map.get(key);
    if (hit === undefined) return undefined;
    this.map.delete(key);
    this.held -= hit.chars;
    return hit.value;
  }

  clear(): void {
    this.map.clear();
    this.held = 0;
  }

  /** Evicts the oldest entries other than `keep` until `chars` more fit. */
  private evictFor(chars: number, keep: K): void {
    while (this.held + chars > this.maxChars && this.evictOldest(keep));
  }

  /** Evicts the oldest entry other than `keep`; false when there is none. */
  private evictOldest(keep: K): boolean {
    for (const [key, entry] of this.map) {
      if (key === keep) continue;
      this.map.delete(key);
      this.held -= entry.chars;
      return true;
    }
    return false;
  }
}

/** Mixes `code` into a 30-bit key (a small integer: a Map hashes it without allocating). */
export const mixKey = (h: number, code: number) => Math.imul(h ^ code, 0x5bd1e995) >>> 2;

/** Characters a text's key reads, spread over it (all of a text this short or shorter). */
const KEY_SAMPLES = 32;

/**
 * A text's key for TextLru: its length and up to KEY_SAMPLES characters spread over it.
 * A Map keyed by the text itself hashes every character of each new string it meets, and
 * every request's texts are new strings (parsed from its body).
 */
export function textKey(text: string): number {
  const step = Math.max(1, Math.floor(text.length / KEY_SAMPLES));
  let h = mixKey(0x2f6b, text.length);
  for (let i = 0; i < text.length; i += step) h = mixKey(h, text.charCodeAt(i));
  return h;
}

/**
 * Texts kept side by side under one key before the key's texts go into a map of their
 * own. Texts that share a key are common where a template varies in a character or two
 * ("found 2 actions." / "found 3 actions.", a test run's timing, the clock in the
 * environment details Cline and Roo Code add to every message): with one text per key,
 * two of them in one agent session pushed each other out on every request; with a few,
 * a session of more turns than that did the same, and every request counted them all
 * again. Past this many, the key's texts are looked up by the text itself (a Map hashes
 * the whole string: only for texts that a key of samples cannot tell apart).
 */
const TEXTS_PER_KEY = 8;
/** Texts one key keeps in its own Lru: a session of thousands of turns fits. */
const TEXTS_PER_KEY_MAP = 4_096;

/** The texts under one key, newest last, with their values; past TEXTS_PER_KEY, a map of them. */
interface Bucket<V> {
  texts: string[];
  values: V[];
  byText: Lru<V, string> | undefined;
}

/**
 * An Lru by text, looked up by textKey and confirmed by comparing the text (a memcmp):
 * texts that share a key are kept side by side (up to TEXTS_PER_KEY, then in a map of the
 * key's own), and a value is never another text's. `limit` counts keys; `maxChars` bounds
 * the characters of the texts and of their values (`valueChars`) together.
 */
export class TextLru<V> {
  private readonly lru: Lru<Bucket<V>, number>;

  constructor(
    limit: number,
    private readonly maxChars: number,
    private readonly valueChars: (value: V) => number = NO_CHARS,
  ) {
    this.lru = new Lru(limit, maxChars, (bucket) => this.charsOfBucket(bucket));
  }

  /** Characters held: the texts' and their values'. */
  get chars(): number {
    return this.lru.chars;
  }

  get(text: string): V | undefined {
    const bucket = this.lru.get(textKey(text));
    if (bucket === undefined) return undefined;
    if (bucket.byText !== undefined) return bucket.byText.get(text);
    const { texts } = bucket;
    for (let i = texts.length - 1; i >= 0; i--) if (texts[i] === text) return bucket.values[i];
    return undefined;
  }

  set(text: string, value: V): void {
    const key = textKey(text);
    const bucket = this.lru.get(key);
    if (bucket === undefined) {
      this.lru.set(key, { texts: [text], values: [value], byText: undefined });
      return;
    }
    const before = this.charsOfBucket(bucket);
    this.addTo(bucket, text, value);
    this.lru.grew(key, this.charsOfBucket(bucket) - before);
  }

  clear(): void {
    this.lru.clear();
  }

  private addTo(bucket: Bucket<V>, text: string, value: V): void {
    if (bucket.byText !== undefined) {
      bucket.byText.set(text, value);
      return;
    }
    const at = bucket.texts.indexOf(text);
    if (at >= 0) {
      bucket.values[at] = value;
      return;
    }
    if (bucket.texts.length >= TEXTS_PER_KEY) {
      const byText = new Lru<V, string>(TEXTS_PER_KEY_MAP, this.maxChars, (v, t) => t.length + this.valueChars(v));
      for (const [i, t] of bucket.texts.entries()) byText.set(t, bucket.values[i] as V);
      byText.set(text, value);
      bucket.byText = byText;
      bucket.texts = [];
      bucket.values = [];
      return;
    }
    bucket.texts.push(text);
    bucket.values.push(value);
  }

  private charsOfBucket(bucket: Bucket<V>): number {
    if (bucket.byText !== undefined) return bucket.byText.chars;
    const { texts, values } = bucket;
    let chars = 0;
    for (let i = 0; i < texts.length; i++) chars += (texts[i] as string).length + this.valueChars(values[i] as V);
    return chars;
  }
}
