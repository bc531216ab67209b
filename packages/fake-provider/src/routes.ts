import type { IncomingHttpHeaders } from "node:http";
import type { Provider } from "@terse/wire-formats";

export type { Provider };

/**
 * The endpoints the fake answers. The generation ones name their wire format, which
 * decides the shape of the answer: OpenAI has two (chat completions and Responses).
 */
export type Endpoint =
  | "chat.completions"
  | "responses"
  | "messages"
  | "generateContent"
  | "streamGenerateContent"
  | "count_tokens"
  | "countTokens"
  | "models";

export interface Route {
  provider: Provider;
  endpoint: Endpoint;
  /** The model named in a Gemini path (`/v1beta/models/{model}:method`). */
  pathModel?: string;
}

/** Gemini serves every API version: Gemini CLI calls v1beta, @google/genai 3 calls v1, v1alpha has the newest fields. */
const GEMINI_METHOD = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;

/**
 * Which provider endpoint a request is for, by method and path (the query is left
 * out: Claude Code calls `/v1/messages?beta=true`). All three share `GET /v1/models`:
 * the `anthropic-version` header marks Anthropic's callers, a Gemini key (header or
 * query) Gemini's, and the rest are OpenAI's.
 */
export function routeOf(
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  query: URLSearchParams,
): Route | null {
  if (method === "GET") {
    if (path === "/v1beta/models") return { provider: "gemini", endpoint: "models" };
    if (path !== "/v1/models") return null;
    if (headers["anthropic-version"]) return { provider: "anthropic", endpoint: "models" };
    if (headers["x-goog-api-key"] || query.has("key")) return { provider: "gemini", endpoint: "models" };
    return { provider: "openai", endpoint: "models" };
  }
  if (method !== "POST") return null;
  if (path === "/v1/chat/completions") return { provider: "openai", endpoint: "chat.completions" };
  if (path === "/v1/responses") return { provider: "openai", endpoint: "responses" };
  if (path === "/v1/messages") return { provider: "anthropic", endpoint: "messages" };
  if (path === "/v1/messages/count_tokens") return { provider: "anthropic", endpoint: "count_tokens" };
  const gemini = path.match(GEMINI_METHOD);
  if (gemini)
    return { provider: "gemini", endpoint: gemini[2] as Endpoint, pathModel: decodeURIComponent(gemini[1] ?? "") };
  return null;
}

/** True for the endpoints that answer as a model does (with usage), false for counting and listing. */
export function isGeneration(endpoint: Endpoint): boolean {
  return endpoint !== "count_tokens" && endpoint !== "countTokens" && endpoint !== "models";
}

/** The provider key as each provider takes it (Gemini: `?key=` or `x-goog-api-key`). */
export function keyOf(provider: Provider, headers: IncomingHttpHeaders, query: URLSearchParams): string | undefined {
  if (provider === "openai") return headers.authorization?.replace(/^Bearer /, "");
  if (provider === "anthropic") return headers["x-api-key"] as string | undefined;
  return query.get("key") ?? (headers["x-goog-api-key"] as string | undefined);
}
