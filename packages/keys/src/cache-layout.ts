// The Redis layout shared by the control plane (the only writer of key records) and the
// data plane (a reader). DESIGN.md section 2.
//
// Curly braces are Redis Cluster hash tags: a key record and its rate-limit window carry
// the same tag, so the data plane's one Lua script per request touches a single slot.

import type { CompressionSettingsOfKey, ContextCompressLevel, Intensity } from "./settings.ts";

export const cacheKeyFor = (keyHash: string) => `svc:key:{${keyHash}}`;
/**
 * The rate-limit window: second buckets, their running sum, and the credits proxy
 * processes hold in a bucket ahead of time (`w3`). Earlier layouts lived at
 * `svc:rl:{hash}` (buckets alone) and `svc:rl:w2:{hash}` (without credits); a replica of
 * an older version would misread the newer fields, so during a rolling upgrade each
 * version counts in its own window (the old ones expire within a minute).
 */
export const rateLimitKeyFor = (keyHash: string) => `svc:rl:w3:{${keyHash}}`;
/** Written by every full resync; its absence means Redis lost the cache (flush, failover). */
export const CACHE_GENERATION_KEY = "svc:cache:generation";
/**
 * Set when a resync starts; the stamp is written only if it is still there at the end,
 * so a flush in the middle of a resync cannot leave a stamp on a partial cache. Its hash
 * tag is the stamp's whole name: one slot, so a single script checks one and sets the other.
 */
export const CACHE_REWRITE_KEY = `{${CACHE_GENERATION_KEY}}:rewrite`;
/**
 * Recall (docs/compression.md): the original of a cut, content-addressed under the
 * account that sent it. Written and read by the data plane; the control plane removes
 * an account's when its last key is revoked.
 */
export const recallKeyFor = (accountId: string, handle: string) => `svc:recall:${accountId}:${handle}`;
export const recallPatternOf = (accountId: string) => `svc:recall:${accountId}:*`;

/**
 * When each key last passed authentication, as the data plane saw it: key id -> epoch ms.
 * Each proxy process writes a key at most every KEY_USE_NOTE_MS; the control plane takes
 * the hash (read and emptied at once) and moves `service_keys.last_used_at` forward, so
 * requests no usage event records (model lists, token counts, refusals after the key
 * was known) count as use too.
 */
export const KEY_LAST_USED_KEY = "svc:keys:last-used";
export const KEY_USE_NOTE_MS = 10_000;

/** Accounts over their monthly token limit, one set per calendar month (UTC). */
export const quotaExceededKeyFor = (yyyymm: string) => `svc:quota:exceeded:${yyyymm}`;

/**
 * The data plane's copies of key records (@terse/key-leases): each proxy process may
 * answer from its own memory only while it holds a lease, a member of this sorted set
 * scored with its expiry (ms, Redis's clock). A change to a key is announced on
 * KEY_CHANGES_CHANNEL and the control plane answers only once every process with a live
 * lease has acknowledged it (its id added to the change's acks set) or its lease ran
 * out. One hash tag for the three, so one script reads leases and acks together.
 */
export const KEY_LEASES_KEY = "{svc:dp}:leases";
/** Processes that did not acknowledge a change in time: their leases are not renewed again. */
export const FENCED_PROCESSES_KEY = "{svc:dp}:fenced";
export const keyChangeAcksKeyFor = (nonce: string) => `{svc:dp}:acks:${nonce}`;
export const KEY_CHANGES_CHANNEL = "svc:keys:changed";

/** One announced change: the key hashes whose records changed or went, or every key ("all": a resync). */
export interface KeyChange {
  nonce: string;
  keys: string[] | "all";
}

export function encodeKeyChange(change: KeyChange): string {
  return JSON.stringify(change);
}

/** A message of KEY_CHANGES_CHANNEL; undefined when it is not one (never thrown: it comes off the wire). */
export function decodeKeyChange(message: string): KeyChange | undefined {
  try {
    const value = JSON.parse(message) as Partial<KeyChange>;
    if (typeof value?.nonce !== "string" || !/^[0-9a-f]{1,64}$/.test(value.nonce)) return undefined;
    if (value.keys === "all") return { nonce: value.nonce, keys: "all" };
    if (!Array.isArray(value.keys) || !value.keys.every((k) => typeof k === "string")) return undefined;
    return { nonce: value.nonce, keys: value.keys };
  } catch {
    return undefined;
  }
}
/** Pub/sub channel announcing a change to any month's quota set. */
export const QUOTA_CHANNEL = "svc:quota:changed";

/** What the data plane needs to serve a request for one key: who, how fast, and its compression settings. */
export interface CachedKey extends CompressionSettingsOfKey {
  key_id: string;
  account_id: string;
  plan: string;
  rate_limit_rpm: number;
}

/** Field order of the hash; the data plane's Lua script reads them with HMGET in this order. */
export const CACHED_KEY_FIELDS = [
  "key_id",
  "account_id",
  "plan",
  "rate_limit_rpm",
  "intensity",
  "auto_compress_input",
  "smart_detect_enabled",
  "context_compress",
  "context_compress_level",
] as const;

export function encodeCachedKey(k: CachedKey): Record<string, string> {
  return {
    key_id: k.key_id,
    account_id: k.account_id,
    plan: k.plan,
    rate_limit_rpm: String(k.rate_limit_rpm),
    intensity: k.intensity,
    auto_compress_input: k.auto_compress_input ? "1" : "0",
    smart_detect_enabled: k.smart_detect_enabled ? "1" : "0",
    context_compress: k.context_compress ? "1" : "0",
    context_compress_level: k.context_compress_level,
  };
}

/** Values in CACHED_KEY_FIELDS order (as HMGET returns them); null when the record is absent or torn. */
export function decodeCachedKey(values: readonly (string | null)[]): CachedKey | null {
  const [key_id, account_id, plan, rpm, intensity, aci, sde, cc, ccl] = values;
  if (!key_id || !account_id || !plan || !rpm || !intensity || !ccl) return null;
  return {
    key_id,
    account_id,
    plan,
    rate_limit_rpm: Number(rpm),
    intensity: intensity as Intensity,
    auto_compress_input: aci === "1",
    smart_detect_enabled: sde === "1",
    context_compress: cc === "1",
    context_compress_level: ccl as ContextCompressLevel,
  };
}

/** `yyyymm` of a date in UTC: the quota month. */
export function quotaMonth(at: Date = new Date()): string {
  return `${at.getUTCFullYear()}${String(at.getUTCMonth() + 1).padStart(2, "0")}`;
}
