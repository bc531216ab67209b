import type { OutgoingHttpHeaders } from "node:http";
import type { CompressionResult } from "@terse/compression";

// What compression did to a request's input, on its answer, so an agent's own logs show
// it (docs/savings.md): estimates by terse's tokenizer when the request was sent (o200k,
// the stand-in for every provider; the provider's own count comes later, in the usage).
// compressRequest counts both sides (before: as the caller sent it; after: as terse sent
// it, the recall tool's declaration included); saved is the difference, negative when
// terse added more (its instruction, the tool) than it removed.

export const INPUT_TOKENS_BEFORE = "X-Terse-Input-Tokens-Before";
export const INPUT_TOKENS_AFTER = "X-Terse-Input-Tokens-After";
export const INPUT_TOKENS_SAVED = "X-Terse-Input-Tokens-Saved";

/** Sets the three headers on an answer to a request compression saw; nothing on one it did not (a model list). */
export function setInputTokenHeaders(h: OutgoingHttpHeaders, compression: CompressionResult | undefined): void {
  if (!compression) return;
  const { input_tokens_before: before, input_tokens_after: after } = compression;
  h[INPUT_TOKENS_AFTER] = String(after);
  h[INPUT_TOKENS_SAVED] = String(before - after);
  h[INPUT_TOKENS_BEFORE] = String(before);
}
