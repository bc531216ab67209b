// The answers that are not a model's: the model lists (`GET /v1/models`, Gemini's
// `GET /v1beta/models`) and token counts (Anthropic's count_tokens, Gemini's countTokens).
import type { Provider } from "./routes.ts";

/** The models each provider lists; agents that check their model against the list find theirs. */
export const MODELS: Readonly<Record<Provider, readonly string[]>> = {
  openai: ["gpt-5.1-codex", "gpt-5.1", "gpt-4o-mini"],
  anthropic: ["claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1"],
  gemini: ["gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"],
};

export function modelList(provider: Provider): unknown {
  const ids = MODELS[provider];
  if (provider === "openai") {
    return {
      object: "list",
      data: ids.map((id) => ({ id, object: "model", created: 1_700_000_000, owned_by: "system" })),
    };
  }
  if (provider === "anthropic") {
    const data = ids.map((id) => ({ type: "model", id, display_name: id, created_at: "2025-09-29T00:00:00Z" }));
    return { data, has_more: false, first_id: ids[0], last_id: ids[ids.length - 1] };
  }
  return {
    models: ids.map((id) => ({
      name: `models/${id}`,
      version: "001",
      displayName: id,
      inputTokenLimit: 1_048_576,
      outputTokenLimit: 65_536,
      supportedGenerationMethods: ["generateContent", "countTokens"],
    })),
  };
}

/**
 * The token count of a request body: one token per four characters of its JSON, as
 * the fake received it. Deterministic, so a test can recompute it from the recorded
 * body and check that the count a client got was taken of the body terse sent.
 */
export function countTokensOf(body: Record<string, unknown>): number {
  return Math.ceil(JSON.stringify(body).length / 4);
}

export function tokenCountBody(provider: Provider, body: Record<string, unknown>): unknown {
  const tokens = countTokensOf(body);
  return provider === "gemini" ? { totalTokens: tokens } : { input_tokens: tokens };
}
