import type { IncomingHttpHeaders } from "node:http";
import type { RecallFormat } from "./recall.ts";
import type { PairingCheck, RequestFormat } from "./request-view.ts";

// What terse knows about one wire format, in one place: the adapter. The proxy's hot
// path asks its adapter and never tests which provider it serves.

/** Who bills the call: the usage event's provider, the metrics' label. */
export type Provider = "openai" | "anthropic" | "gemini";

/** Where the upstream's origin comes from (DataPlaneConfig). */
export type BaseUrlSetting = "OPENAI_BASE_URL" | "ANTHROPIC_BASE_URL" | "GEMINI_BASE_URL";

/**
 * What a proxy request asks for. `generate` is a model call: compressed, metered.
 * `count_tokens` is compressed (the count is of what terse would send) but not metered;
 * `list_models` is passed through. All three are authenticated and rate-limited.
 */
export type OperationKind = "generate" | "count_tokens" | "list_models";

export interface Operation {
  kind: OperationKind;
  method: "POST" | "GET";
  /** The path the caller asked for (a listed model's id is in it). */
  path: string;
  /** Gemini's native paths carry the model and whether to stream. */
  pathModel?: string;
  pathStream?: boolean;
}

export interface UpstreamInput {
  /** The upstream origin, without a trailing slash. */
  base: string;
  op: Operation;
  /** The body to send (compressed), absent for a GET. */
  body: Record<string, unknown> | undefined;
  providerKey: string;
  model: string | undefined;
  /** The caller's query string, with its `?` or empty: passed through. */
  query: string;
  /** The caller's headers, for the ones a provider defaults (anthropic-version). */
  callerHeaders: IncomingHttpHeaders;
}

export interface UpstreamRequest {
  /** Absolute URL. May hold the provider key (Gemini): never log it. */
  url: string;
  method: "POST" | "GET";
  body: Record<string, unknown> | undefined;
  /** Set on top of the caller's headers: the credential and the provider's defaults. */
  headers: Record<string, string>;
  streamed: boolean;
  /** A filter for the relayed stream when terse changed what the upstream sends. */
  streamFilter?: () => StreamFilter;
}

/** Rewrites a relayed SSE stream piece by piece; never holds back more than a partial event. */
export interface StreamFilter {
  push(chunk: string): string;
  flush(): string;
  /** The Content-Type of what the filter writes, when it is no longer the upstream's SSE. */
  readonly contentType?: string;
}

/**
 * Tokens the provider reported. `input` counts every billed input token, cache reads and
 * writes included; `cacheRead` and `cacheWrite` say how many of them the provider read
 * from or wrote to its prompt cache (billed at other prices), 0 when it reports none.
 */
export interface ReportedUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /**
   * A count the stream's later events will raise (Anthropic's message_start, a Gemini
   * chunk before the one that finishes): where the stream ends there, the output is
   * counted from what was relayed.
   */
  partial?: boolean;
}

/** The part of a request compression rewrites, and how to put the rewritten part back. */
export interface Compressible {
  body: Record<string, unknown>;
  put(compressed: Record<string, unknown>): Record<string, unknown>;
}

export interface WireFormatAdapter {
  /** The format's name; also the key of its view in @terse/compression. */
  readonly id: WireFormat;
  readonly provider: Provider;
  readonly baseUrl: BaseUrlSetting;
  /** The operation a request names (path, and for shared paths a header), or null: not this format's. */
  route(path: string, headers: IncomingHttpHeaders): Operation | null;
  /** The model asked for; undefined when the request names none. */
  model(body: Record<string, unknown>, op: Operation): string | undefined;
  /** What compression may rewrite in a request of `op`; null: forwarded as sent. */
  compressible(body: Record<string, unknown>, op: Operation): Compressible | null;
  /** The request terse sends upstream. */
  upstream(input: UpstreamInput): UpstreamRequest;
  /** Usage in one JSON body or SSE event's data; `seen`: what earlier events of the stream said. */
  usage(data: Record<string, unknown>, seen: ReportedUsage | undefined): ReportedUsage | undefined;
  /** Text the model produced in one JSON body or SSE event (for an estimate when no usage comes). */
  text(data: Record<string, unknown>): string;
  /** How compression sees a request (system slot, tool results, prompt text). */
  readonly view: RequestFormat;
  /** The tool-call pairing rules a (compressed) request must satisfy. */
  readonly pairing: PairingCheck;
  /** Recall: the terse_recall tool, its calls and their answers in this format (recall.ts). */
  readonly recall: RecallFormat;
}

/** The wire formats terse serves, declared once (the registry in index.ts lists their adapters). */
export const WIRE_FORMATS = ["openai", "anthropic", "gemini", "openai-responses"] as const;
export type WireFormat = (typeof WIRE_FORMATS)[number];

export const PROVIDERS = ["openai", "anthropic", "gemini"] as const satisfies readonly Provider[];
