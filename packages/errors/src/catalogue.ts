// Every error terse returns, in one place: code -> status, type and message.
// The envelope is OpenAI's ({error: {message, type, code}}), which all three providers'
// SDKs parse. Messages are exactly the spec's where the spec gives one.

export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "conflict_error"
  | "rate_limit_error"
  | "api_error"
  | "upstream_error";

interface CatalogueEntry {
  status: number;
  type: ErrorType;
  /** The message when the thrower gives none. */
  message: string;
}

export const ERROR_CATALOGUE = {
  // Key management and login (control plane).
  invalid_request: { status: 400, type: "invalid_request_error", message: "Invalid request" },
  field_not_editable: { status: 400, type: "invalid_request_error", message: "Field is not editable" },
  unsupported_media_type: {
    status: 415,
    type: "invalid_request_error",
    message: "Content-Type must be application/json",
  },
  payload_too_large: { status: 413, type: "invalid_request_error", message: "Request body too large" },
  missing_access_token: { status: 401, type: "authentication_error", message: "Missing access token" },
  invalid_access_token: { status: 401, type: "authentication_error", message: "Invalid access token" },
  invalid_credentials: { status: 401, type: "authentication_error", message: "Invalid credentials" },
  too_many_login_attempts: { status: 429, type: "rate_limit_error", message: "Too many login attempts" },
  key_limit_reached: { status: 403, type: "permission_error", message: "API key limit reached" },
  not_found: { status: 404, type: "not_found_error", message: "Not found" },
  duplicate_name: { status: 409, type: "conflict_error", message: "Duplicate name" },
  key_revoked: { status: 409, type: "conflict_error", message: "Key is revoked" },
  // Proxy (data plane).
  missing_api_key: { status: 401, type: "authentication_error", message: "Missing API key" },
  invalid_api_key: { status: 401, type: "authentication_error", message: "Invalid API key" },
  missing_provider_key: { status: 400, type: "invalid_request_error", message: "Missing X-Provider-Key header" },
  repeated_provider_key: { status: 400, type: "invalid_request_error", message: "X-Provider-Key must be sent once" },
  rate_limit_exceeded: { status: 429, type: "rate_limit_error", message: "rate limit exceeded" },
  token_quota_exceeded: { status: 429, type: "rate_limit_error", message: "token quota exceeded" },
  upstream_unavailable: { status: 502, type: "upstream_error", message: "upstream unavailable" },
  upstream_timeout: { status: 504, type: "upstream_error", message: "upstream timeout" },
  // Either.
  auth_cache_unavailable: { status: 503, type: "api_error", message: "auth cache unavailable" },
  /** A dependency other than the key cache (e.g. the login throttle's Redis) is down. */
  service_unavailable: { status: 503, type: "api_error", message: "service temporarily unavailable" },
  shutting_down: { status: 503, type: "api_error", message: "server is shutting down" },
  route_not_found: { status: 404, type: "not_found_error", message: "Not found" },
  method_not_allowed: { status: 405, type: "invalid_request_error", message: "Method not allowed" },
  // Refused by Node's HTTP parser, before any route (see client-error.ts).
  malformed_request: { status: 400, type: "invalid_request_error", message: "Malformed HTTP request" },
  request_header_too_large: { status: 431, type: "invalid_request_error", message: "Request headers too large" },
  request_timeout: { status: 408, type: "invalid_request_error", message: "Request timeout" },
  internal_error: { status: 500, type: "api_error", message: "Internal server error" },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface ErrorEnvelope {
  error: { message: string; type: ErrorType; code: ErrorCode; param?: string };
}

/**
 * An expected failure that becomes an HTTP answer. Thrown by domain code, turned into
 * the envelope by each service's single error handler.
 */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: ErrorType;
  /** The request field at fault, for 400s. */
  readonly param: string | undefined;
  /** Extra response headers (Retry-After, X-RateLimit-*). */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    options: { message?: string; param?: string; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    const entry = ERROR_CATALOGUE[code];
    // The cause is for logs only: toEnvelope() never shows it.
    super(options.message ?? entry.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ApiError";
    this.code = code;
    this.status = entry.status;
    this.type = entry.type;
    this.param = options.param;
    this.headers = options.headers ?? {};
  }

  toEnvelope(): ErrorEnvelope {
    const error: ErrorEnvelope["error"] = { message: this.message, type: this.type, code: this.code };
    if (this.param !== undefined) error.param = this.param;
    return { error };
  }
}

/** The envelope for a catalogue code, for hot paths that skip the exception. */
export function envelopeFor(code: ErrorCode, message?: string): ErrorEnvelope {
  const entry = ERROR_CATALOGUE[code];
  return { error: { message: message ?? entry.message, type: entry.type, code } };
}
