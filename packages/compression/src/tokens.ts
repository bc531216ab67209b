import { countTokens } from "gpt-tokenizer";
import { Lru, mixKey as mix, TextLru } from "./lru.ts";

// Token counts for "input tokens before and after compression". gpt-tokenizer's o200k
// encoding is OpenAI's own; Anthropic and Gemini publish no offline tokenizer for their
// current models, so o200k stands in for them (the provider's billed count comes from
// the upstream's usage; ours is the proxy's estimate of what compression saved).
//
// This runs on the hot path, on content an agent resends every turn, so:
// - a JavaScript tokenizer takes ~25 ms over 100 KB here: each text is counted once and
//   remembered;
// - hashing a 1 MB tool result to look it up costs more than estimating it: long texts
//   are keyed by a fingerprint (their length and a few slices) and estimated from
//   samples, so neither the lookup nor the count reads the whole text;
// - a text is not looked up by itself either: a Map keyed by a string hashes every
//   character of each new string it meets, and every request's texts are new strings
//   (parsed from its body). The key is a number from the text's length and characters
//   sampled across it; a hit is confirmed by comparing the text (short texts, TextLru,
//   which keeps texts that share a key side by side) or by a second such number (long
//   ones), so no count is another text's by a clash of keys;
// - a message is walked as a value, not serialised: JSON punctuation is added per field.

/**
 * A caller's text may hold a special token's spelling (`<|endoftext|>`: a tool result
 * showing tokenizer code); gpt-tokenizer's default is to throw on it, which failed the
 * request. It is counted as the text it is, as a provider reads it.
 */
export const SPECIAL_TOKENS_AS_TEXT = { disallowedSpecial: new Set<string>() };

/** Texts remembered; an agent session of a few hundred turns fits many times over. */
const CACHE_LIMIT = 20_000;
/** Characters of the short texts remembered (each up to SELF_KEYED_CHARS): what bounds their memory. */
const SHORT_TEXTS_CHARS = 8_000_000;
/** Up to this length a text is confirmed by itself (compared on a hit, a memcmp). */
const SELF_KEYED_CHARS = 1_024;
/**
 * Longer texts (a 30 KB command output, a 1 MB log) are counted from evenly spaced
 * samples, scaled by length. Within a few percent on the corpus (docs/compression.md
 * gives the measured error). Many short samples estimate a text that changes along its
 * length (a log's header, its stack traces, its summary) better than a few long ones:
 * on the benchmark's `--quick` sample, 10 of 80 characters erred by 6.9% (median) and
 * 13.3% (p99) where 4 of 400 erred by 8.2% and 16.7%, at half the characters counted
 * (the o200k count of a sample is most of a long text's cost on a cold request).
 */
const SAMPLE_ABOVE_CHARS = 3_000;
const SAMPLES = 10;
const SAMPLE_CHARS = 80;
/** Characters of each slice in a long text's fingerprint: at its start, thirds and end. */
const FINGERPRINT_SLICE = 48;
/** Tokens of a field's JSON punctuation (`"key": ,`) and of a container's brackets: o200k, measured on the corpus. */
const FIELD_OVERHEAD = 3;
const CONTAINER_OVERHEAD = 1;

/** A long text's remembered count, and the second key that confirms a hit. */
interface Counted {
  tokens: number;
  check: number;
}

/** Up to this length a text is its own key (tinyTokens); TINY_LIMIT of them are remembered. */
const TINY_CHARS = 24;
const TINY_LIMIT = 10_000;
const tinyCache = new Map<string, number>();
const shortCache = new TextLru<number>(CACHE_LIMIT, SHORT_TEXTS_CHARS);
const longCache = new Lru<Counted, number>(CACHE_LIMIT);
/** Exact counts live apart, so measuring never evicts what the hot path remembers. */
const exactCache = new Lru<number>(CACHE_LIMIT);

/** Forgets every remembered count: benchmarks start each replayed session cold, as a new process would. */
export function forgetTokenCounts(): void {
  tinyCache.clear();
  shortCache.clear();
  longCache.clear();
}

/** Characters of the texts whose counts are remembered by text. */
export const countedTextChars = (): number => shortCache.chars;

/** Tokens of a long text, estimated from samples cut at spaces so no word is split. */
function sampledTokens(text: string): number {
  const step = Math.floor(text.length / SAMPLES);
  let chars = 0;
  let tokens = 0;
  for (let i = 0; i < SAMPLES; i++) {
    const from = text.indexOf(" ", i * step);
    const start = from < 0 || from > i * step + SAMPLE_CHARS ? i * step : from;
    const sample = text.slice(start, start + SAMPLE_CHARS);
    chars += sample.length;
    tokens += countTokens(sample, SPECIAL_TOKENS_AS_TEXT);
  }
  return Math.round((tokens * text.length) / chars);
}

/**
 * A long text's fingerprint: its length and slices at its start, thirds and end, read
 * into two independent keys (the second confirms a hit on the first). Two texts that
 * share all of them get one estimate; the estimate is all that is at stake.
 */
function longKey(text: string): number {
  const third = Math.floor(text.length / 3);
  let a = mix(0x1b873593, text.length);
  let b = mix(0x7feb352d, text.length);
  // The slices' starts written out, not an array of them: this runs for every long part of every request.
  for (let s = 0; s < 4; s++) {
    const start = s === 3 ? text.length - FINGERPRINT_SLICE : s * third;
    for (let i = start; i < start + FINGERPRINT_SLICE; i++) {
      const c = text.charCodeAt(i);
      a = mix(a, c);
      b = mix(b ^ 0x68e31da4, c);
    }
  }
  longCheck = b;
  return a;
}
/** The second key of the text longKey() read last (two numbers returned without a tuple per call). */
let longCheck = 0;

/**
 * Tokens of a field name or a short value (`role`, `content`, `assistant`), by the text
 * itself: most of a request's texts are these, hashing a few characters costs less than a
 * key's sampling and the memcmp behind it, and a parsed field name comes internalised,
 * its hash already known.
 */
function tinyTokens(text: string): number {
  const hit = tinyCache.get(text);
  if (hit !== undefined) return hit;
  const tokens = countTokens(text, SPECIAL_TOKENS_AS_TEXT);
  // Bounded the cheap way: a request's few dozen names and roles come back at once.
  if (tinyCache.size >= TINY_LIMIT) tinyCache.clear();
  tinyCache.set(text, tokens);
  return tokens;
}

/** Tokens of one text, remembered. */
function textTokens(text: string): number {
  if (text.length === 0) return 0;
  if (text.length <= TINY_CHARS) return tinyTokens(text);
  if (text.length <= SELF_KEYED_CHARS) {
    const hit = shortCache.get(text);
    if (hit !== undefined) return hit;
    const tokens = countTokens(text, SPECIAL_TOKENS_AS_TEXT);
    shortCache.set(text, tokens);
    return tokens;
  }
  const key = longKey(text);
  const check = longCheck;
  const hit = longCache.get(key);
  if (hit !== undefined && hit.check === check) return hit.tokens;
  const tokens = text.length > SAMPLE_ABOVE_CHARS ? sampledTokens(text) : countTokens(text, SPECIAL_TOKENS_AS_TEXT);
  longCache.set(key, { tokens, check });
  return tokens;
}

/** Tokens of one piece of request content (a message, a system prompt, a tool list): its texts, plus punctuation. */
export function countContentTokens(content: unknown): number {
  if (typeof content === "string") return textTokens(content);
  if (Array.isArray(content)) {
    let n = CONTAINER_OVERHEAD;
    for (const item of content) n += countContentTokens(item) + CONTAINER_OVERHEAD;
    return n;
  }
  if (typeof content === "object" && content !== null) {
    // for-in over a parsed JSON object (own, enumerable keys only): no entries array per object.
    const record = content as Record<string, unknown>;
    let n = CONTAINER_OVERHEAD;
    for (const key in record) n += textTokens(key) + FIELD_OVERHEAD + countContentTokens(record[key]);
    return n;
  }
  return content === undefined || content === null ? 0 : textTokens(String(content));
}

/** The exact count of the JSON text, remembered: for measuring (the benchmark), where time does not matter. */
export function countExactTokens(content: unknown): number {
  const text = typeof content === "string" ? content : JSON.stringify(content ?? "");
  if (text.length === 0) return 0;
  const hit = exactCache.get(text);
  if (hit !== undefined) return hit;
  const n = countTokens(text, SPECIAL_TOKENS_AS_TEXT);
  exactCache.set(text, n);
  return n;
}

/** Tokens of all parts. */
export function sumTokens(parts: readonly unknown[]): number {
  let total = 0;
  for (const p of parts) total += countContentTokens(p);
  return total;
}
