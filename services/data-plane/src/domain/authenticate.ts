import type { ErrorCode } from "@terse/errors";
import { CACHE_GENERATION_KEY, type CachedKey, hashKey, isWellFormedKey } from "@terse/keys";
import type { Redis } from "ioredis";
import type { AuthLookup, AuthScript } from "../infra/auth-script.ts";
import type { KeyCopies } from "./key-copies.ts";
import type { QuotaView } from "./quota-view.ts";
import type { Credit, RateCredits } from "./rate-credits.ts";

export interface Admitted {
  key: CachedKey;
  keyHash: string;
  rateLimit: { limit: number; remaining: number; resetSeconds: number };
  /** The credit the call was admitted on, when it was admitted without asking Redis. */
  credit?: Credit;
}

/**
 * Where the key was found: this process's copy ("local", no round trip), the Redis key
 * cache ("hit"), or nowhere ("miss": unknown or revoked); undefined when the key never
 * got that far (malformed).
 */
export type CacheLookup = "local" | "hit" | "miss" | undefined;

/**
 * The verdict on a request's credentials. Refusals are expected outcomes, answered with
 * their code (and headers); only Redis being unreachable throws.
 */
export type Verdict =
  | { ok: true; admitted: Admitted; lookup: "local" | "hit" }
  | { ok: false; code: ErrorCode; headers?: Record<string, string>; lookup: CacheLookup };

/** Redis could not be asked: the one failure admit() throws. */
export class AuthCacheDown extends Error {
  constructor(cause: unknown) {
    super("the key cache could not be read", { cause });
    this.name = "AuthCacheDown";
  }
}

/** This process's own state: its copies of key records and its rate credits. */
export interface LocalAuth {
  copies: KeyCopies;
  credits: RateCredits;
}

/**
 * The checks of DESIGN.md section 4, in its order: Authorization missing -> 401; bad
 * format, unknown or revoked -> 401; X-Provider-Key missing -> 400; rpm -> 429; quota
 * -> 429.
 *
 * A key this process holds a copy and a rate credit of is admitted without a round trip
 * (`local`): the copy is kept consistent by synchronous invalidation (KeyCopies, the
 * spec's 401 the moment DELETE returns), the credit was counted in the key's window
 * when it was granted (RateCredits). Otherwise one Redis round trip, the auth script,
 * which also grants credits for the calls to come. Without `local` every call asks Redis.
 */
export class Authenticator {
  constructor(
    private readonly redis: Redis,
    private readonly script: AuthScript,
    private readonly quota: QuotaView,
    private readonly local?: LocalAuth,
    /** Told of every key that passed authentication (its last_used_at), refused later or not. */
    private readonly keyUsed?: (keyId: string, nowMs: number) => void,
  ) {}

  /**
   * `authorization`, `providerKey`: every such header the caller sent (see soleHeader in
   * http/proxy.ts): a repeated one is refused rather than guessed at.
   */
  async admit(
    authorization: string | readonly string[] | undefined,
    providerKey: string | readonly string[] | undefined,
    nowMs: number,
  ): Promise<Verdict> {
    const rawKey = bearerOf(authorization);
    if (rawKey === undefined) return { ok: false, code: "missing_api_key", lookup: undefined };
    if (!isWellFormedKey(rawKey)) return { ok: false, code: "invalid_api_key", lookup: undefined };
    const keyHash = hashKey(rawKey);
    const nowSeconds = Math.floor(nowMs / 1000);
    // Checked after the key (a bad key is 401 before a missing provider key is 400).
    const providerKeyRefusal = providerKeyRefusalOf(providerKey);
    const hasProviderKey = providerKeyRefusal === undefined;
    const local = this.local;
    const copy = local?.copies.get(keyHash);
    if (local && copy) {
      this.keyUsed?.(copy.key_id, nowMs);
      if (providerKeyRefusal) return { ok: false, code: providerKeyRefusal, lookup: "local" };
      const credit = local.credits.take(keyHash, nowSeconds);
      if (credit) return this.withinQuota({ key: copy, keyHash, rateLimit: credit.rateLimit, credit }, nowMs, "local");
    }
    const epoch = local?.copies.epoch ?? 0;
    const want = local && hasProviderKey ? local.credits.want(keyHash, copy?.rate_limit_rpm ?? 1) : 0;
    // The script's answer awaited here, not through a chain of async helpers: each level
    // is a promise and a microtask more, on every request.
    let lookup: Lookup = await this.runScript(keyHash, nowSeconds, hasProviderKey, want);
    if (lookup.kind === "absent") lookup = await this.confirmAbsent(keyHash, nowSeconds, hasProviderKey, want);
    if (lookup.kind === "unavailable") return { ok: false, code: "auth_cache_unavailable", lookup: undefined };
    if (lookup.kind === "absent") return { ok: false, code: "invalid_api_key", lookup: "miss" };
    if (local) {
      local.copies.keep(keyHash, lookup.key, epoch);
      local.credits.note(keyHash, lookup);
    }
    if (!copy) this.keyUsed?.(lookup.key.key_id, nowMs);
    if (providerKeyRefusal) return { ok: false, code: providerKeyRefusal, lookup: "hit" };
    const rateLimit = { limit: lookup.limit, remaining: lookup.remaining, resetSeconds: lookup.resetSeconds };
    if (lookup.kind === "limited") {
      // Full, counting credits this process holds (granted while this call was on its
      // way): one of them is this call's, or it would be lost to the window for a while.
      const credit = local?.credits.take(keyHash, nowSeconds);
      if (credit)
        return this.withinQuota({ key: lookup.key, keyHash, rateLimit: credit.rateLimit, credit }, nowMs, "hit");
      const headers = { ...rateLimitHeaders(rateLimit), "Retry-After": String(rateLimit.resetSeconds) };
      return { ok: false, code: "rate_limit_exceeded", headers, lookup: "hit" };
    }
    if (local) rateLimit.remaining += lookup.granted; // this process's own credits are free for its callers
    return this.withinQuota({ key: lookup.key, keyHash, rateLimit }, nowMs, "hit");
  }

  /** The last check, the account's token quota (in memory); a refused call gives its slot back. */
  private withinQuota(admitted: Admitted, nowMs: number, lookup: "local" | "hit"): Verdict {
    if (this.quota.isExceeded(admitted.key.account_id, nowMs)) {
      this.release(admitted, nowMs);
      const headers = { "Retry-After": String(secondsToNextMonth(nowMs)) };
      return { ok: false, code: "token_quota_exceeded", headers, lookup };
    }
    return { ok: true, admitted, lookup };
  }

  /**
   * Gives back the rpm slot the script counted for a call refused after all (its quota,
   * its body): refused calls do not count. Best effort, off the answer's path.
   */
  release(admitted: Admitted, nowMs: number): void {
    // A credit goes back to this process, unless it was reported used already: then its
    // bucket in Redis gives the slot back, as a call that asked Redis does.
    const second = admitted.credit ? this.local?.credits.giveBack(admitted.credit) : Math.floor(nowMs / 1000);
    if (second === undefined) return;
    void this.script.uncount(admitted.keyHash, second).catch(() => undefined);
  }

  /**
   * A missing record is a 401 only while the cache is known to be whole: after a flush or
   * failover (no generation stamp) a valid key may simply not be there yet. The stamp is
   * read, then the record again, then the stamp: the first read alone races a resync
   * finishing in between (record absent, then stamp present: a false 401). A stamp seen
   * before the second look vouches for every record written before it, and the same
   * stamp seen after says no flush came in between. Only unknown and revoked keys pay
   * the extra round trips.
   */
  private async confirmAbsent(keyHash: string, nowSeconds: number, count: boolean, want: number): Promise<Lookup> {
    const before = await this.generation();
    if (before === null) return UNAVAILABLE;
    const again = await this.runScript(keyHash, nowSeconds, count, want);
    if (again.kind !== "absent") return again;
    if ((await this.generation()) !== before) return UNAVAILABLE;
    return again;
  }

  /** The script's answer; AuthCacheDown when Redis could not be asked. */
  private runScript(keyHash: string, nowSeconds: number, count: boolean, want: number): Promise<AuthLookup> {
    try {
      return this.script.run(keyHash, nowSeconds, count, want).catch(cacheDown);
    } catch (err) {
      return Promise.reject(new AuthCacheDown(err));
    }
  }

  /** The cache's generation stamp; null when missing. */
  private async generation(): Promise<string | null> {
    try {
      return await this.redis.get(CACHE_GENERATION_KEY);
    } catch (err) {
      throw new AuthCacheDown(err);
    }
  }
}

function cacheDown(err: unknown): never {
  throw new AuthCacheDown(err);
}

/** The cache holds no verdict on the key right now (flushed, being rewritten): 503, never 401. */
const UNAVAILABLE = { kind: "unavailable" } as const;
type Lookup = AuthLookup | typeof UNAVAILABLE;

/** Why X-Provider-Key refuses the call, if it does: sent twice (Node would join them, "a, b", into a key nobody sent), or missing. */
function providerKeyRefusalOf(header: string | readonly string[] | undefined): ErrorCode | undefined {
  if (Array.isArray(header)) return "repeated_provider_key";
  return typeof header === "string" && header !== "" ? undefined : "missing_provider_key";
}

function bearerOf(header: string | readonly string[] | undefined): string | undefined {
  // Sent twice: which one counts would be a guess (a proxy in front may have read the
  // other), so neither does.
  if (typeof header !== "string") return header === undefined ? undefined : "";
  const scheme = /^Bearer(?:[ ]+|$)/i.exec(header);
  if (!scheme) return undefined;
  const credential = header.slice(scheme[0].length).trimEnd();
  if (credential === "") return undefined;
  return /^\S+$/.test(credential) ? credential : "";
}

export function rateLimitHeaders(r: Admitted["rateLimit"]): Record<string, string> {
  const headers: Record<string, string> = {};
  setRateLimitHeaders(headers, r);
  return headers;
}

/** The rate-limit headers, written into `headers` (a relayed answer's, without a copy). */
export function setRateLimitHeaders(headers: Record<string, unknown>, r: Admitted["rateLimit"]): void {
  headers["X-RateLimit-Limit"] = String(r.limit);
  headers["X-RateLimit-Remaining"] = String(r.remaining);
  headers["X-RateLimit-Reset"] = String(r.resetSeconds);
}

export function secondsToNextMonth(nowMs: number): number {
  const now = new Date(nowMs);
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - nowMs) / 1000));
}
