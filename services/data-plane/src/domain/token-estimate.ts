import { SPECIAL_TOKENS_AS_TEXT } from "@terse/compression";
import { countTokens } from "gpt-tokenizer";

// Counts tokens when the upstream reported none (an error, an abort). gpt-tokenizer's
// o200k encoding is OpenAI's; for Anthropic and Gemini it is a documented stand-in that
// lands within a few percent on English text and code. Such events are marked estimated.

const MAX_CHARS = 2_000_000;

export function estimateTokens(text: string): number {
  if (!text) return 0;
  return countTokens(text.length > MAX_CHARS ? text.slice(0, MAX_CHARS) : text, SPECIAL_TOKENS_AS_TEXT);
}

/** The text of a request body that a model reads: every string value, keys left out. */
export function requestText(body: unknown): string {
  const parts: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === "string") parts.push(v);
    else if (Array.isArray(v)) for (const x of v) walk(x);
    else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) if (k !== "model") walk(x);
  };
  walk(body);
  return parts.join("\n");
}
