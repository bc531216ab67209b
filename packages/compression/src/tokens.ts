import { countTokens } from "gpt-tokenizer";
import { Lru } from "./lru.ts";

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
// - a message is walked as a value, not serialised: JSON punctuation is added per field.

/** Texts remembered; an agent session of a few hundred turns fits many times over. */
const CACHE_LIMIT = 20_000;
/** Up to this length a text is its own key (V8 hashes a string once and keeps the hash). */
const SELF_KEYED_CHARS = 1_024;
/**
 * Longer texts (a 30 KB command output, a 1 MB log) are counted from evenly spaced
 * samples, scaled by length. Within a few percent on the corpus (docs/compression.md
 * gives the measured error).
 */
const SAMPLE_ABOVE_CHARS = 3_000;
const SAMPLES = 4;
const SAMPLE_CHARS = 400;
/** Characters of each slice in a long text's fingerprint. */
const FINGERPRINT_SLICE = 48;
/** Tokens of a field's JSON punctuation (`"key": ,`) and of a container's brackets: o200k, measured on the corpus. */
const FIELD_OVERHEAD = 3;
const CONTAINER_OVERHEAD = 1;

const cache = new Lru<number>(CACHE_LIMIT);
/** Exact counts live apart, so measuring never evicts what the hot path remembers. */
const exactCache = new Lru<number>(CACHE_LIMIT);

/** Forgets every remembered count: benchmarks start each replayed session cold, as a new process would. */
export function forgetTokenCounts(): void {
  cache.clear();
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

/**
 * A long text's key: its length and slices at its start, thirds and end. Two texts that
 * share all of them get one estimate; the estimate is all that is at stake. Self-keyed
 * texts are at most 1,024 characters, a fingerprint is longer, so the two never meet.
 */
function fingerprint(text: string): string {
  const third = Math.floor(text.length / 3);
  return [
    text.length,
    text.slice(0, FINGERPRINT_SLICE),
    text.slice(third, third + FINGERPRINT_SLICE),
    text.slice(2 * third, 2 * third + FINGERPRINT_SLICE),
    text.slice(-FINGERPRINT_SLICE),
  ].join("\u0000");
}

/** Tokens of one text, remembered. */
function textTokens(text: string): number {
  if (text.length === 0) return 0;
  const key = text.length <= SELF_KEYED_CHARS ? text : fingerprint(text);
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const n = text.length > SAMPLE_ABOVE_CHARS ? sampledTokens(text) : countTokens(text);
  cache.set(key, n);
  return n;
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
  const n = countTokens(text);
  exactCache.set(text, n);
  return n;
}

/** Tokens of all parts. */
export function sumTokens(parts: readonly unknown[]): number {
  let total = 0;
  for (const p of parts) total += countContentTokens(p);
  return total;
}
