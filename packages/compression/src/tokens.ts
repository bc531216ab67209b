import { createHash } from "node:crypto";
import { countTokens } from "gpt-tokenizer";

// Token counts for "input tokens before and after compression". gpt-tokenizer's o200k
// encoding is OpenAI's own; for Anthropic and Gemini no official offline tokenizer is on
// npm, so o200k stands in (documented in the usage event as the proxy's estimate; the
// provider's billed counts come from the upstream's usage).
//
// Agents resend their whole history every turn, so each message is counted once and
// remembered by a hash of its content: a JavaScript tokenizer over a 100 KB body takes
// milliseconds, a hash of it microseconds.

const CACHE_LIMIT = 20_000;
const cache = new Map<string, number>();

function remember(key: string, value: number): void {
  if (cache.size >= CACHE_LIMIT) {
    // Drop the oldest entry (Map keeps insertion order): an LRU good enough for a hot set.
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  cache.set(key, value);
}

/** Tokens of one piece of request content (a message, a system prompt), memoised. */
export function countContentTokens(content: unknown): number {
  const text = typeof content === "string" ? content : JSON.stringify(content ?? "");
  if (text.length < 64) return text.length === 0 ? 0 : countTokens(text);
  const key = createHash("sha1").update(text).digest("base64");
  const hit = cache.get(key);
  if (hit !== undefined) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const n = countTokens(text);
  remember(key, n);
  return n;
}

export function sumTokens(parts: readonly unknown[]): number {
  let total = 0;
  for (const p of parts) total += countContentTokens(p);
  return total;
}
