import type { Operation, ReportedUsage, WireFormatAdapter } from "../adapter.ts";
import { isRecord, stringOf } from "../json.ts";
import { responsesPairing } from "./pairing.ts";
import { responsesRecall } from "./recall.ts";
import { openaiResponsesFormat } from "./request-view.ts";

// OpenAI's Responses API (`POST /v1/responses`), the only wire of Codex CLI. JSON and SSE
// (`response.created` ... `response.completed`, whose `response.usage` is the final
// count). `previous_response_id` passes through: the history then lives upstream, and
// terse compresses what is sent. The provider key goes upstream as `Authorization: Bearer`.

const GENERATE: Operation = { kind: "generate", method: "POST", path: "/v1/responses" };

interface ResponsesUsage {
  input_tokens?: number;
  output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number } | null;
}

/** The usage of a whole response object (JSON body, or the response a terminal event carries). */
function usageOfResponse(response: unknown): ReportedUsage | undefined {
  const u = isRecord(response) ? (response.usage as ResponsesUsage | null | undefined) : undefined;
  // cached_tokens are reads, counted in input_tokens; OpenAI charges nothing to write.
  return u
    ? {
        input: u.input_tokens ?? 0,
        output: u.output_tokens ?? 0,
        cacheRead: u.input_tokens_details?.cached_tokens ?? 0,
        cacheWrite: 0,
      }
    : undefined;
}

export const openaiResponses: WireFormatAdapter = {
  id: "openai-responses",
  provider: "openai",
  baseUrl: "OPENAI_BASE_URL",

  route: (path) => (path === "/v1/responses" ? GENERATE : null),

  model: (body) => stringOf(body.model),

  compressible: (body) => ({ body, put: (c) => c }),

  upstream({ base, op, body, providerKey, query }) {
    return {
      url: `${base}${op.path}${query}`,
      method: op.method,
      body,
      headers: { authorization: `Bearer ${providerKey}` },
      streamed: body?.stream === true,
    };
  },

  usage(data) {
    // A stream's terminal event (completed, incomplete, failed) carries the response.
    if (typeof data.type === "string")
      return data.type.startsWith("response.") ? usageOfResponse(data.response) : undefined;
    return usageOfResponse(data);
  },

  text(data) {
    if (data.type === "response.output_text.delta") return stringOf(data.delta) ?? "";
    if (typeof data.type === "string") return "";
    const output = Array.isArray(data.output) ? data.output : [];
    return output
      .flatMap((item) => (isRecord(item) && Array.isArray(item.content) ? item.content : []))
      .map((part) => (isRecord(part) && part.type === "output_text" ? (stringOf(part.text) ?? "") : ""))
      .join("");
  },

  view: openaiResponsesFormat,
  pairing: responsesPairing,
  recall: responsesRecall,
};
