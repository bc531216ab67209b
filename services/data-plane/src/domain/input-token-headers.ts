import type { OutgoingHttpHeaders } from "node:http";
import { type CompressionResult, countInputTokens } from "@terse/compression";
import type { Operation, WireFormatAdapter } from "@terse/wire-formats";

// What compression did to a request's input, on its answer, so an agent's own logs show
// it (docs/savings.md): estimates by terse's tokenizer when the request was sent (o200k,
// the stand-in for every provider; the provider's own count comes later, in the usage).
//
// After: the input terse sent, counted part by part with the counts compression keeps
// (an agent resends its history every turn: each part is counted once per process, and
// a long one from samples). Saved: compression's own count of what it removed, less what
// it added (its instruction): negative when it added more. Before: after + saved.

export const INPUT_TOKENS_BEFORE = "X-Terse-Input-Tokens-Before";
export const INPUT_TOKENS_AFTER = "X-Terse-Input-Tokens-After";
export const INPUT_TOKENS_SAVED = "X-Terse-Input-Tokens-Saved";

/** Sets the three headers on an answer to a request compression saw; nothing on one it did not (a model list). */
export function setInputTokenHeaders(
  h: OutgoingHttpHeaders,
  adapter: WireFormatAdapter,
  op: Operation,
  sent: Record<string, unknown> | undefined,
  compression: CompressionResult | undefined,
): void {
  if (!compression || !sent) return;
  const part = adapter.compressible(sent, op);
  if (!part) return;
  const after = countInputTokens(adapter.id, part.body);
  const saved = compression.input_tokens_saved;
  h[INPUT_TOKENS_AFTER] = String(after);
  h[INPUT_TOKENS_SAVED] = String(saved);
  h[INPUT_TOKENS_BEFORE] = String(after + saved);
}
