/**
 * A least-recently-used map of bounded size, nearly: the per-process memory behind the
 * memoised steps, whose results depend only on their key, so callers still see pure
 * functions. Map keeps insertion order and the oldest entry goes first. A hit is moved
 * to the end only once it sits in the older half: moving it on every hit (a delete and
 * an insert) cost more than the lookup, on the hot path of every request, and left holes
 * the Map keeps compacting. A key used at least once per half of the limit never falls
 * out.
 */
export class Lru<V, K extends string | number = string> {
  private readonly map = new Map<K, { value: V; stamp: number }>();
  /** Counts insertions: an entry's stamp says how many came after it. */
  private clock = 0;

  constructor(private readonly limit: number) {}

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
    this.map.delete(key);
    if (this.map.size >= this.limit) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    this.map.set(key, { value, stamp: ++this.clock });
  }

  /** Removes and returns the entry: for values that are changed by whoever takes them. */
  take(key: K): V | undefined {
    const hit = this.map.get(key);
    this.map.delete(key);
    return hit?.value;
  }

  clear(): void {
    this.map.clear();
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
 * key's own), and a value is never another text's. The limit counts keys.
 */
export class TextLru<V> {
  private readonly lru: Lru<Bucket<V>, number>;

  constructor(limit: number) {
    this.lru = new Lru(limit);
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
      const byText = new Lru<V, string>(TEXTS_PER_KEY_MAP);
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

  clear(): void {
    this.lru.clear();
  }
}
