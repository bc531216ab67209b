import type { Operation, WireFormatAdapter } from "../adapter.ts";
import { isRecord, paramsOf, stringOf } from "../json.ts";
import { asGeminiTakesIt } from "./closed-request.ts";
import { JsonArrayStream } from "./json-array-stream.ts";
import { geminiPairing } from "./pairing.ts";
import { geminiRecall } from "./recall.ts";
import { geminiFormat } from "./request-view.ts";

// Gemini generateContent: terse's own `POST /v1/generateContent` (model and stream in
// the body) and the native paths the Gemini SDKs and CLI call
// (`/v1beta/models/{model}:generateContent`, `:streamGenerateContent`, `:countTokens`,
// `GET /v1beta/models`). The provider key goes upstream as the `key` query parameter.

/** `/{version}/models/{model}:{method}` as the Gemini clients call it (the SDK with a base URL says v1). */
const NATIVE_CALL = /^\/(v1beta|v1alpha|v1)\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;
/** Gemini's model list: `/v1/models` (shared: claimed by a Gemini key) and the preview versions'. */
const NATIVE_MODELS = /^\/(v1beta|v1alpha|v1)\/models(?:\/([^/:]+))?$/;

const OWN_GENERATE: Operation = { kind: "generate", method: "POST", path: "/v1/generateContent" };

/**
 * A model named in a body as Gemini names its resources (`models/gemini-2.5-flash`, as
 * the SDKs accept it) is the model `gemini-2.5-flash`: the path says `models/` already,
 * and the price table and usage records know it by its id.
 */
function modelIdOf(model: string | undefined): string | undefined {
  return model?.startsWith("models/") ? model.slice("models/".length) : model;
}

/** The decoded segment, or undefined for a malformed escape (`%zz`, bytes that are not UTF-8): no route of ours. */
function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

export const gemini: WireFormatAdapter = {
  id: "gemini",
  provider: "gemini",
  baseUrl: "GEMINI_BASE_URL",

  route(path, headers) {
    if (path === "/v1/generateContent") return OWN_GENERATE;
    const call = NATIVE_CALL.exec(path);
    if (call) {
      const pathModel = decodeSegment(call[2] ?? "");
      if (pathModel === undefined) return null;
      const method = call[3];
      return {
        kind: method === "countTokens" ? "count_tokens" : "generate",
        method: "POST",
        path,
        pathModel,
        pathStream: method === "streamGenerateContent",
      };
    }
    const models = NATIVE_MODELS.exec(path);
    if (!models || (models[1] === "v1" && headers["x-goog-api-key"] === undefined)) return null;
    if (models[2] === undefined) return { kind: "list_models", method: "GET", path };
    // One model's entry: the name goes upstream re-encoded, so an escaped `..` or `/`
    // cannot reach another path of the provider's (with the caller's key on it).
    const name = decodeSegment(models[2]);
    if (name === undefined || name === "." || name === ".." || name.includes("/")) return null;
    return { kind: "list_models", method: "GET", path: `/${models[1]}/models/${encodeURIComponent(name)}` };
  },

  model: (body, op) => op.pathModel ?? modelIdOf(stringOf(body.model)),

  compressible(body, op) {
    if (op.kind === "generate") return { body, put: (c) => c };
    if (op.kind !== "count_tokens") return null;
    // countTokens counts a whole request only when it is wrapped in generateContentRequest.
    const inner = body.generateContentRequest;
    if (isRecord(inner)) return { body: inner, put: (c) => ({ ...body, generateContentRequest: c }) };
    // Bare `contents` (what @google/genai sends) have no slot for the instruction or the
    // tool: they are counted as the request terse would send, wrapped as one.
    if (!Array.isArray(body.contents) || op.pathModel === undefined) return null;
    const { contents, ...rest } = body;
    const model = `models/${op.pathModel}`;
    return { body: { contents }, put: (c) => ({ ...rest, generateContentRequest: { model, ...c } }) };
  },

  upstream({ base, op, body, providerKey, model, query }) {
    const params = paramsOf(query);
    params.delete("key");
    const stream = op.pathStream ?? body?.stream === true;
    let path = op.path;
    let sent = body;
    let asArray = false;
    // The version the caller named, but v1 (the SDKs' default): terse may add fields
    // (systemInstruction) that v1 lacks; v1beta serves every field of v1, and v1alpha,
    // asked for its own fields, every field of v1beta.
    const version = op.path.startsWith("/v1alpha/") ? "v1alpha" : "v1beta";
    if (op.kind === "count_tokens") {
      path = `/${version}/models/${encodeURIComponent(model ?? "")}:countTokens`;
      const inner = body?.generateContentRequest;
      const taken = isRecord(inner) ? asGeminiTakesIt(inner, model) : inner;
      if (body && taken !== inner) sent = { ...body, generateContentRequest: taken };
    }
    if (op.kind === "generate") {
      // The real API rejects unknown fields: model and stream are terse's, not Gemini's.
      const { model: _m, stream: _s, ...rest } = body ?? {};
      sent = asGeminiTakesIt(rest, model);
      // Asked for as SSE always; a native stream call that did not ask for SSE gets the
      // JSON array Gemini sends it, rebuilt from the events (json-array-stream.ts).
      if (stream) {
        asArray = op.pathStream === true && params.get("alt")?.toLowerCase() !== "sse";
        params.set("alt", "sse");
      }
      const method = stream ? "streamGenerateContent" : "generateContent";
      path = `/${version}/models/${encodeURIComponent(model ?? "")}:${method}`;
    }
    params.set("key", providerKey);
    return {
      url: `${base}${path}?${params.toString()}`,
      method: op.method,
      body: sent,
      headers: {},
      streamed: stream,
      streamFilter: asArray ? () => new JsonArrayStream() : undefined,
    };
  },

  usage(data) {
    const m = data.usageMetadata as
      | {
          promptTokenCount?: number;
          candidatesTokenCount?: number;
          thoughtsTokenCount?: number;
          cachedContentTokenCount?: number;
        }
      | undefined;
    // cachedContentTokenCount is part of promptTokenCount (implicit or explicit cache);
    // a cache's storage is billed by the hour, not per request: no write tokens here.
    if (!m) return undefined;
    const usage = {
      input: m.promptTokenCount ?? 0,
      output: (m.candidatesTokenCount ?? 0) + (m.thoughtsTokenCount ?? 0),
      cacheRead: m.cachedContentTokenCount ?? 0,
      cacheWrite: 0,
    };
    // A stream's chunks count what was generated so far; the one that finishes, all of it.
    return isUnfinished(data) ? { ...usage, partial: true } : usage;
  },

  text(data) {
    const candidates = Array.isArray(data.candidates) ? data.candidates : [];
    return candidates
      .flatMap((c) => (isRecord(c) && isRecord(c.content) && Array.isArray(c.content.parts) ? c.content.parts : []))
      .map((p) => (isRecord(p) ? (stringOf(p.text) ?? "") : ""))
      .join("");
  },

  view: geminiFormat,
  pairing: geminiPairing,
  recall: geminiRecall,
};

/** Candidates none of which says why it finished: a chunk of a stream still under way. */
function isUnfinished(data: Record<string, unknown>): boolean {
  const candidates = Array.isArray(data.candidates) ? data.candidates : [];
  return candidates.length > 0 && !candidates.some((c) => isRecord(c) && c.finishReason !== undefined);
}
