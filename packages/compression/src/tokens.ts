import { createHash } from "node:crypto";
import { countTokens } from "gpt-tokenizer";

// Token counts for "input tokens before and after compression". gpt-tokenizer's o200k
// encoding is OpenAI's own; Anthropic and Gemini publish no offline tokenizer for their
// current models, so o200k stands in for them (the provider's billed count comes from
// the upstream's usage; ours is the proxy's estimate of what compression saved).
//
// Agents resend their whole history every turn, so each message is counted once and
// remembered by a hash of its content: a JavaScript tokenizer takes ~25 ms over 100 KB
// on this machine, a hash of it ~0.2 ms.

/** Messages remembered; an agent session of a few hundred turns fits many times over. */
const CACHE_LIMIT = 20_000;
/** Shorter texts are not worth remembering: counting them is as fast as a lookup. */
const REMEMBER_FROM_CHARS = 64;
/**
 * Up to this length a text is its own key (V8 hashes a string once and keeps the hash);
 * longer ones are keyed by a SHA-1 of their content, so the cache holds no long strings.
 */
const SELF_KEYED_CHARS = 1_024;
/**
 * Longer texts (a 30 KB command output, a 1 MB log) are counted from evenly spaced
 * samples, scaled by length: counting them whole costs more than the 2 ms a request may
 * take. Within a few percent on the corpus (docs/compression.md gives the measured error).
 */
const SAMPLE_ABOVE_CHARS = 3_000;
const SAMPLES = 4;
const SAMPLE_CHARS = 400;

const cache = new Map<string, number>();
/** Exact counts live apart, so measuring never evicts what the hot path remembers. */
const exactCache = new Map<string, number>();

/** Forgets every remembered count: benchmarks start each replayed session cold, as a new process would. */
export function forgetTokenCounts(): void {
  cache.clear();
}

function remember(store: Map<string, number>, key: string, value: number): void {
  if (store.size >= CACHE_LIMIT) {
    // Drop the oldest entry (Map keeps insertion order; a hit is re-inserted): an LRU.
    const oldest = store.keys().next().value;
    if (oldest !== undefined) store.delete(oldest);
  }
  store.set(key, value);
}

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
    tokens += countTokens(sample);
  }
  return Math.round((tokens * text.length) / chars);
}

function memoised(content: unknown, count: (text: string) => number, store: Map<string, number>): number {
  const text = typeof content === "string" ? content : JSON.stringify(content ?? "");
  if (text.length < REMEMBER_FROM_CHARS) return text.length === 0 ? 0 : countTokens(text);
  // The two kinds of key cannot meet: a self-keyed text has 64+ characters, a SHA-1 key 28.
  const key = text.length <= SELF_KEYED_CHARS ? text : createHash("sha1").update(text).digest("base64");
  const hit = store.get(key);
  if (hit !== undefined) {
    store.delete(key);
    store.set(key, hit);
    return hit;
  }
  const n = count(text);
  remember(store, key, n);
  return n;
}

/** Tokens of one piece of request content (a message, a system prompt), memoised; long ones sampled. */
export function countContentTokens(content: unknown): number {
  return memoised(
    content,
    (text) => (text.length > SAMPLE_ABOVE_CHARS ? sampledTokens(text) : countTokens(text)),
    cache,
  );
}

/** The exact count, memoised: for measuring (the benchmark), where time does not matter. */
export function countExactTokens(content: unknown): number {
  return memoised(content, countTokens, exactCache);
}

/**
 * Tokens of all parts. `seen` remembers parts by identity: a compressed body shares its
 * untouched messages with the original, so counting both costs one pass, not two.
 */
export function sumTokens(parts: readonly unknown[], seen?: WeakMap<object, number>): number {
  let total = 0;
  for (const p of parts) {
    const known = typeof p === "object" && p !== null ? seen?.get(p) : undefined;
    const n = known ?? countContentTokens(p);
    if (known === undefined && typeof p === "object" && p !== null) seen?.set(p, n);
    total += n;
  }
  return total;
}
