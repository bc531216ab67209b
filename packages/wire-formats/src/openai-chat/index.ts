import type { Operation, WireFormatAdapter } from "../adapter.ts";
import { isRecord, stringOf, withField } from "../json.ts";
import { chatPairing } from "./pairing.ts";
import { chatRecall } from "./recall.ts";
import { openaiFormat } from "./request-view.ts";
import { UsageChunkFilter } from "./usage-chunk-filter.ts";

// OpenAI chat completions (`POST /v1/chat/completions`), and the model list every OpenAI
// client asks for (`GET /v1/models`, a path Anthropic's and Gemini's clients call too).
// The provider key goes upstream as `Authorization: Bearer`.

const GENERATE: Operation = { kind: "generate", method: "POST", path: "/v1/chat/completions" };

/** `/v1/models` and `/v1/models/{id}`: OpenAI's, unless Anthropic or Gemini claims it first (index.ts). */
export const MODELS_PATH = /^\/v1\/models(?:\/[^/:]+)?$/;

export const openaiChat: WireFormatAdapter = {
  id: "openai",
  provider: "openai",
  baseUrl: "OPENAI_BASE_URL",

  route(path) {
    if (path === "/v1/chat/completions") return GENERATE;
    if (MODELS_PATH.test(path)) return { kind: "list_models", method: "GET", path };
    return null;
  },

  model: (body) => stringOf(body.model),

  compressible: (body, op) => (op.kind === "generate" ? { body, put: (c) => c } : null),

  upstream({ base, op, body, providerKey, query }) {
    const streamed = body?.stream === true;
    const options = isRecord(body?.stream_options) ? body.stream_options : {};
    // The usage of a stream comes only when asked for: terse asks, and removes the extra
    // chunk again for a caller who did not.
    const addsUsageChunk = body !== undefined && streamed && options.include_usage !== true;
    return {
      url: `${base}${op.path}${query}`,
      method: op.method,
      body: addsUsageChunk ? withField(body, "stream_options", withField(options, "include_usage", true)) : body,
      headers: { authorization: `Bearer ${providerKey}` },
      streamed,
      streamFilter: addsUsageChunk ? () => new UsageChunkFilter() : undefined,
    };
  },

  usage(data) {
    const u = data.usage as
      | {
          prompt_tokens?: number;
          completion_tokens?: number;
          prompt_tokens_details?: { cached_tokens?: number } | null;
        }
      | null
      | undefined;
    // OpenAI caches on its own and charges nothing extra to write: cached_tokens are reads,
    // already counted in prompt_tokens.
    return u
      ? {
          input: u.prompt_tokens ?? 0,
          output: u.completion_tokens ?? 0,
          cacheRead: u.prompt_tokens_details?.cached_tokens ?? 0,
          cacheWrite: 0,
        }
      : undefined;
  },

  text(data) {
    const choices = Array.isArray(data.choices) ? data.choices : [];
    return choices
      .map((c) => {
        if (!isRecord(c)) return "";
        const part = isRecord(c.delta) ? c.delta : isRecord(c.message) ? c.message : {};
        return stringOf(part.content) ?? "";
      })
      .join("");
  },

  view: openaiFormat,
  pairing: chatPairing,
  recall: chatRecall,
};
