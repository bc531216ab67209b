import { countContentTokens } from "@terse/compression";
import type { Operation, ReportedUsage, RequestFormat, WireFormatAdapter } from "@terse/wire-formats";

// What a request would have been without terse, for the estimate of its cost
// (docs/savings.md): its input uncompressed, and how much of that input the provider's
// prompt cache would have held. Tokens only; the control plane prices them when read.
//
// The cache is modelled per session, as the compression benchmark does: an agent's
// request is its previous request plus a newest turn, so the previous request's prompt,
// uncompressed (the request minus its newest turn), is what the provider would have
// found in its cache. The compressed request's reported reads do not say that: when
// compression rewrote an earlier message, the provider read less and wrote (or billed in
// full) the rest, and that extra cost is terse's, so it must not appear on both sides.

/**
 * Below this many tokens a provider's automatic cache holds nothing (OpenAI's minimum,
 * and Gemini Flash's; Gemini Pro's is higher, which the estimate does not model).
 */
export const MIN_AUTOMATIC_CACHE_TOKENS = 1024;

/** The uncompressed request's input and its prompt-cache split: the usage event's "before compression" fields. */
export interface WithoutTerse {
  input_tokens_before_compression: number;
  cache_read_tokens_before_compression: number;
  cache_write_tokens_before_compression: number;
}

/**
 * Tokens of the newest turn of the request as the caller sent it (count it before
 * compression: compression may shorten that turn too), or undefined when the request has
 * no earlier turn of its session, or is not one compression reads. Counted with
 * compression's remembered counts, so a part compression counted already costs a lookup.
 */
export function newestTurnTokens(
  adapter: WireFormatAdapter,
  op: Operation,
  body: Record<string, unknown>,
): number | undefined {
  const part = adapter.compressible(body, op);
  const turn = part ? adapter.view.newestTurn(part.body) : undefined;
  if (!turn) return undefined;
  let tokens = 0;
  for (const p of turn) tokens += countContentTokens(p);
  return tokens;
}

/**
 * The request without terse, from the first upstream call's usage (recall rounds would
 * not have happened without terse's cuts) and what compression saved.
 *
 * - Its input: the reported input plus the savings.
 * - Its cached prefix: the request minus its newest turn, at least what the provider
 *   really read (a system prompt another session cached), never more than the provider
 *   would cache: all of it where the provider caches by itself (at least 1,024 tokens),
 *   else (Anthropic) up to where the request marks it, which is the reported reads and
 *   writes grown with the request.
 * - Its cache writes (Anthropic only): the rest of the marked part.
 *
 * With no newest turn (a session's first request, or no compression) the prefix is what
 * the provider read, so a request compression left alone costs the same both ways. A
 * usage terse estimated (no report came) keeps the compressed request's share.
 */
export function withoutTerse(
  format: Pick<RequestFormat, "promptCache">,
  first: ReportedUsage,
  saved: number,
  newestTurn: number | undefined,
  estimated: boolean,
): WithoutTerse {
  const { input, cacheRead: read, cacheWrite: write } = first;
  // A negative saving (the instruction on a short request, the recall tool's declaration
  // where nothing was cut) makes the request without terse the smaller one: a loss shown.
  const before = Math.max(0, input + saved);
  const grown = (tokens: number) => (input > 0 ? Math.round((tokens * before) / input) : 0);
  if (estimated) return split(before, grown(read), grown(write));
  const prefix = newestTurn === undefined ? 0 : Math.max(0, before - newestTurn);
  if (format.promptCache === "automatic") {
    const cached = prefix >= MIN_AUTOMATIC_CACHE_TOKENS ? prefix : 0;
    return split(before, Math.max(cached, read), grown(write));
  }
  const marked = Math.min(before, grown(read + write));
  const cachedRead = Math.min(marked, Math.max(prefix, read));
  return split(before, cachedRead, marked - cachedRead);
}

function split(before: number, read: number, write: number): WithoutTerse {
  const r = Math.min(before, read);
  return {
    input_tokens_before_compression: before,
    cache_read_tokens_before_compression: r,
    cache_write_tokens_before_compression: Math.max(0, Math.min(before - r, write)),
  };
}
