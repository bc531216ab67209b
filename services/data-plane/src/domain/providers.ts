import type { DataPlaneConfig } from "@terse/config";
import { ApiError } from "@terse/errors";
import { nameFault } from "@terse/identifiers";
import type { Provider } from "@terse/usage-events";

// Where each proxy endpoint goes upstream and how the provider key travels
// (spec section 5, DESIGN.md section 4).

export interface UpstreamRequest {
  /** Absolute URL. For Gemini it holds the provider key: never log it (see redactUrl). */
  url: string;
  /** The body to send, as an object (serialised by the proxy). */
  body: Record<string, unknown>;
  /** Headers to set on top of the caller's (credential, defaults). */
  headers: Record<string, string>;
  streamed: boolean;
  /** OpenAI: include_usage was added by the proxy, so its extra chunk must be removed again. */
  stripUsageChunk: boolean;
}

export interface ProviderRoute {
  provider: Provider;
  /** The model asked for (Gemini: from the body, or from the native path). */
  model(body: Record<string, unknown>, pathModel: string | undefined): string | undefined;
  upstream(
    base: string,
    body: Record<string, unknown>,
    providerKey: string,
    model: string,
    query: string,
    stream: boolean,
  ): UpstreamRequest;
}

const openai: ProviderRoute = {
  provider: "openai",
  model: (body) => (typeof body.model === "string" ? body.model : undefined),
  upstream(base, body, providerKey, _model, query) {
    const streamed = body.stream === true;
    const options = (body.stream_options ?? {}) as Record<string, unknown>;
    const stripUsageChunk = streamed && options.include_usage !== true;
    const out = stripUsageChunk ? { ...body, stream_options: { ...options, include_usage: true } } : body;
    return {
      url: `${base}/v1/chat/completions${query}`,
      body: out,
      headers: { authorization: `Bearer ${providerKey}` },
      streamed,
      stripUsageChunk,
    };
  },
};

const anthropic: ProviderRoute = {
  provider: "anthropic",
  model: (body) => (typeof body.model === "string" ? body.model : undefined),
  upstream(base, body, providerKey, _model, query) {
    return {
      url: `${base}/v1/messages${query}`,
      body,
      headers: { "x-api-key": providerKey },
      streamed: body.stream === true,
      stripUsageChunk: false,
    };
  },
};

const gemini: ProviderRoute = {
  provider: "gemini",
  model: (body, pathModel) => pathModel ?? (typeof body.model === "string" ? body.model : undefined),
  upstream(base, body, providerKey, model, query, stream) {
    // The real API rejects unknown fields: model and stream are ours, not Gemini's.
    const { model: _m, stream: _s, ...rest } = body;
    const params = new URLSearchParams(query.startsWith("?") ? query.slice(1) : query);
    params.delete("key");
    if (stream) params.set("alt", "sse");
    params.set("key", providerKey);
    const method = stream ? "streamGenerateContent" : "generateContent";
    return {
      url: `${base}/v1beta/models/${encodeURIComponent(model)}:${method}?${params.toString()}`,
      body: rest,
      headers: {},
      streamed: stream,
      stripUsageChunk: false,
    };
  },
};

export interface ResolvedRoute {
  route: ProviderRoute;
  base: string;
  /** Gemini native path: `models/{model}:generateContent` carries model and streaming. */
  pathModel?: string;
  pathStream?: boolean;
}

const GEMINI_NATIVE = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

/** The route for a request path (without query), or null for a path we do not serve. */
export function resolveRoute(path: string, config: DataPlaneConfig): ResolvedRoute | null {
  if (path === "/v1/chat/completions") return { route: openai, base: trimSlash(config.OPENAI_BASE_URL) };
  if (path === "/v1/messages") return { route: anthropic, base: trimSlash(config.ANTHROPIC_BASE_URL) };
  if (path === "/v1/generateContent") return { route: gemini, base: trimSlash(config.GEMINI_BASE_URL) };
  // The path the official Gemini SDKs call, so they work unchanged with a base URL override.
  const native = GEMINI_NATIVE.exec(path);
  const pathModel = native ? decodePathSegment(native[1] ?? "") : undefined;
  if (native && pathModel !== undefined) {
    return {
      route: gemini,
      base: trimSlash(config.GEMINI_BASE_URL),
      pathModel,
      pathStream: native[2] === "streamGenerateContent",
    };
  }
  return null;
}

/** The decoded segment, or undefined for a malformed escape (`%zz`, bytes that are not UTF-8): no route of ours. */
function decodePathSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The usage record's limit; real model names are a few dozen characters. */
const MAX_MODEL_LENGTH = 256;

export function requireModel(
  route: ProviderRoute,
  body: Record<string, unknown>,
  pathModel: string | undefined,
): string {
  const model = route.model(body, pathModel);
  if (model === undefined || model.trim() === "") {
    throw new ApiError("invalid_request", { message: "model is required (a non-empty string)", param: "model" });
  }
  // The model name is stored with the call's usage: a NUL there once failed a whole batch
  // of other accounts' events. A lone surrogate also cannot be URL-encoded for Gemini's path.
  const fault = nameFault(model);
  if (fault) throw new ApiError("invalid_request", { message: `model ${fault}`, param: "model" });
  if (model.length > MAX_MODEL_LENGTH) {
    throw new ApiError("invalid_request", {
      message: `model must be at most ${MAX_MODEL_LENGTH} characters`,
      param: "model",
    });
  }
  return model;
}

function trimSlash(url: string): string {
  return url.endsWith("/") ? url.slice(0, -1) : url;
}
