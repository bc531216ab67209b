import type { Operation, ReportedUsage, WireFormatAdapter } from "../adapter.ts";
import { isRecord, stringOf } from "../json.ts";
import { MODELS_PATH } from "../openai-chat/index.ts";
import { messagesPairing } from "./pairing.ts";
import { messagesRecall } from "./recall.ts";
import { anthropicFormat } from "./request-view.ts";

// Anthropic messages (`POST /v1/messages`), its token count (`POST
// /v1/messages/count_tokens`, forwarded with the body terse would send, so an agent that
// decides when to compact sees the count it will be billed for), and its model list (the
// shared `GET /v1/models`, claimed when the request says `anthropic-version`). The provider key
// goes upstream as `x-api-key`; every `anthropic-beta` flag passes through as sent.

/** What Anthropic requires, when the caller names no version. */
const DEFAULT_VERSION = "2023-06-01";

const GENERATE: Operation = { kind: "generate", method: "POST", path: "/v1/messages" };
const COUNT_TOKENS: Operation = { kind: "count_tokens", method: "POST", path: "/v1/messages/count_tokens" };

interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

export const anthropicMessages: WireFormatAdapter = {
  id: "anthropic",
  provider: "anthropic",
  baseUrl: "ANTHROPIC_BASE_URL",

  route(path, headers) {
    if (path === "/v1/messages") return GENERATE;
    if (path === "/v1/messages/count_tokens") return COUNT_TOKENS;
    if (MODELS_PATH.test(path) && headers["anthropic-version"] !== undefined) {
      return { kind: "list_models", method: "GET", path };
    }
    return null;
  },

  model: (body) => stringOf(body.model),

  // count_tokens takes the messages body less its sampling fields: the same view.
  compressible: (body, op) => (op.kind === "list_models" ? null : { body, put: (c) => c }),

  upstream({ base, op, body, providerKey, query, callerHeaders }) {
    const version = callerHeaders["anthropic-version"];
    return {
      url: `${base}${op.path}${query}`,
      method: op.method,
      body,
      headers: {
        "x-api-key": providerKey,
        "anthropic-version": typeof version === "string" ? version : DEFAULT_VERSION,
      },
      streamed: body?.stream === true,
    };
  },

  usage(data, seen): ReportedUsage | undefined {
    // Input is billed in three parts; message_start carries them, message_delta the output.
    const u = ((isRecord(data.message) ? data.message.usage : undefined) ?? data.usage) as AnthropicUsage | undefined;
    if (!u) return undefined;
    // message_delta's counts are cumulative, the final word: newer streams repeat the
    // input there (it can differ from message_start's, e.g. after a fallback); older
    // ones carry only output_tokens, and each input part missing stays message_start's.
    const earlier = data.type === "message_delta" ? seen : undefined;
    const cacheRead = u.cache_read_input_tokens ?? earlier?.cacheRead ?? 0;
    const cacheWrite = u.cache_creation_input_tokens ?? earlier?.cacheWrite ?? 0;
    const uncached = u.input_tokens ?? (earlier ? earlier.input - earlier.cacheRead - earlier.cacheWrite : 0);
    const usage = { input: uncached + cacheRead + cacheWrite, output: u.output_tokens ?? 0, cacheRead, cacheWrite };
    // message_start's output is the first token's: the count comes with message_delta.
    return data.type === "message_start" ? { ...usage, partial: true } : usage;
  },

  text(data) {
    if (isRecord(data.delta)) return stringOf(data.delta.text) ?? stringOf(data.delta.partial_json) ?? "";
    const content = Array.isArray(data.content) ? data.content : [];
    return content.map((b) => (isRecord(b) ? (stringOf(b.text) ?? "") : "")).join("");
  },

  view: anthropicFormat,
  pairing: messagesPairing,
  recall: messagesRecall,
};
