// The same HTTP endpoints as any client (spec section 4), with the error envelope
// {"error": {message, type, code, param?}} turned into ApiFailure.

import {
  CONTEXT_LEVELS,
  type ContextCompressLevel,
  INTENSITIES,
  type Intensity,
  KEY_DEFAULTS,
  type KeySettingsFields,
} from "@terse/keys/settings";

// The settings' vocabulary is the server's own (@terse/keys/settings), bundled in.
export { CONTEXT_LEVELS, INTENSITIES, type Intensity };
export type ContextLevel = ContextCompressLevel;
export type KeySettings = KeySettingsFields;

/** Spec 2.1: what a key gets when the create body leaves a field out. */
export const DEFAULT_SETTINGS: KeySettings = KEY_DEFAULTS;

export interface Key extends KeySettings {
  id: string;
  key_prefix: string;
  is_active: boolean;
  rate_limit_rpm: number;
  created_at: string;
  last_used_at: string | null;
}

/** Create and rotate answers: the raw key, once, and no rate_limit_rpm. */
export type CreatedKey = Omit<Key, "rate_limit_rpm"> & { raw_key: string };

export interface UsageFigures {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  input_tokens_before_compression: number;
  tokens_saved: number;
  /** USD at the price table's rates; the next two are estimates (docs/savings.md). */
  cost_usd: number;
  cost_without_terse_usd: number;
  saved_usd: number;
  /** Requests of models without a price: not in the money figures. */
  unpriced_requests: number;
}

export interface UsageDay extends UsageFigures {
  day: string;
}

export type GroupBy = "day" | "key" | "model";

export interface UsageRow extends UsageFigures {
  day?: string;
  key_id?: string;
  key_name?: string;
  key_prefix?: string;
  model?: string;
}

export interface UsageReport<R extends UsageRow = UsageDay> {
  from: string;
  to: string;
  group_by: GroupBy;
  data: R[];
  totals: UsageFigures;
  unpriced_models: string[];
  money: { currency: string; prices_as_of: string; prices_source: string; estimate: string };
}

export interface LoginAnswer {
  access_token: string;
  token_type: string;
  expires_in: number;
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | undefined,
    readonly retryAfterSeconds: number | undefined,
  ) {
    super(message);
  }
}

export interface ApiOptions {
  token: () => string | null;
  /** A 401 on an authenticated call: the token expired or was refused. */
  onUnauthorized: () => void;
}

export class Api {
  constructor(private readonly options: ApiOptions) {}

  login(email: string, password: string): Promise<LoginAnswer> {
    return this.call("POST", "/v1/auth/login", { email, password }, false);
  }

  listKeys(): Promise<Key[]> {
    return this.call("GET", "/v1/auth/keys");
  }

  createKey(settings: Partial<KeySettings>): Promise<CreatedKey> {
    return this.call("POST", "/v1/auth/keys", settings);
  }

  updateKey(id: string, changes: Partial<KeySettings>): Promise<Key> {
    return this.call("PATCH", `/v1/auth/keys/${encodeURIComponent(id)}`, changes);
  }

  rotateKey(id: string): Promise<CreatedKey> {
    return this.call("POST", `/v1/auth/keys/${encodeURIComponent(id)}/rotate`);
  }

  revokeKey(id: string): Promise<Key> {
    return this.call("DELETE", `/v1/auth/keys/${encodeURIComponent(id)}`);
  }

  usage(from: Date, to: Date, keyId: string | null): Promise<UsageReport>;
  usage(from: Date, to: Date, keyId: string | null, groupBy: GroupBy): Promise<UsageReport<UsageRow>>;
  usage(from: Date, to: Date, keyId: string | null, groupBy: GroupBy = "day"): Promise<UsageReport<UsageRow>> {
    const q = new URLSearchParams({ from: from.toISOString(), to: to.toISOString(), group_by: groupBy });
    if (keyId) q.set("key_id", keyId);
    return this.call("GET", `/v1/usage?${q}`);
  }

  private async call<T>(method: string, path: string, body?: unknown, authenticated = true): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (authenticated) {
      const token = this.options.token();
      if (!token) {
        this.options.onUnauthorized();
        throw new ApiFailure(401, "missing_access_token", "Not signed in", undefined, undefined);
      }
      headers.authorization = `Bearer ${token}`;
    }
    if (body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await fetch(path, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        credentials: "omit",
        cache: "no-store",
      });
    } catch {
      throw new ApiFailure(
        0,
        "network_error",
        "The server could not be reached. Check your connection and try again.",
        undefined,
        undefined,
      );
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (res.ok) return parsed as T;
    const envelope = (parsed as { error?: { message?: unknown; code?: unknown; param?: unknown } } | undefined)?.error;
    const retryAfter = Number(res.headers.get("retry-after"));
    const failure = new ApiFailure(
      res.status,
      typeof envelope?.code === "string" ? envelope.code : `http_${res.status}`,
      typeof envelope?.message === "string" ? envelope.message : `The server answered ${res.status}`,
      typeof envelope?.param === "string" ? envelope.param : undefined,
      Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
    );
    if (authenticated && res.status === 401) this.options.onUnauthorized();
    throw failure;
  }
}
