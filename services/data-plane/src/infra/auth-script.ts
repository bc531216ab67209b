import { CACHED_KEY_FIELDS, type CachedKey, cacheKeyFor, decodeCachedKey, rateLimitKeyFor } from "@terse/keys";
import type { Redis } from "ioredis";

// Authentication and the key's rpm limit in ONE round trip: a Lua script over two keys
// that share the key hash's hash tag, so it runs on Redis Cluster too.
//
// Rate limit: a sliding 60-second window counted in one-second buckets (a hash field per
// second): exact to the second, bounded memory (at most 60 fields per key), and shared
// by every proxy replica. A refused call adds nothing; `count` = 0 looks the key up
// without counting (the caller is about to be refused for another reason).
//
// Returns {0} when the key record is absent (unknown or revoked), otherwise
// {1 allowed | 2 limited, limit, remaining, reset_seconds, ...record fields}.
const SCRIPT = `
local rec = redis.call('HMGET', KEYS[1], ${CACHED_KEY_FIELDS.map((f) => `'${f}'`).join(", ")})
if not rec[1] then return {0} end
local limit = tonumber(rec[4])
local now = tonumber(ARGV[1])
local oldest = now - 59
local buckets = redis.call('HGETALL', KEYS[2])
local used, earliest, stale = 0, now, {}
for i = 1, #buckets, 2 do
  local s = tonumber(buckets[i])
  if s < oldest then
    stale[#stale + 1] = buckets[i]
  else
    used = used + tonumber(buckets[i + 1])
    if s < earliest then earliest = s end
  end
end
if #stale > 0 then redis.call('HDEL', KEYS[2], unpack(stale)) end
local reset = earliest + 60 - now
if used >= limit then
  return {2, limit, 0, reset, unpack(rec)}
end
if ARGV[2] == '1' then
  redis.call('HINCRBY', KEYS[2], now, 1)
  redis.call('EXPIRE', KEYS[2], 61)
  used = used + 1
end
return {1, limit, limit - used, reset, unpack(rec)}
`;

// Gives back one slot of a second's bucket, only if the bucket still holds one: Redis may
// have lost the window between the count and this call (restart, FLUSHALL), and a bare
// HINCRBY -1 would then leave a negative bucket, with no expiry, that grants extra calls.
const UNCOUNT_SCRIPT = `
local used = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if used > 0 then redis.call('HINCRBY', KEYS[1], ARGV[1], -1) end
return used
`;

export type AuthLookup =
  | { kind: "absent" }
  | { kind: "allowed" | "limited"; key: CachedKey; limit: number; remaining: number; resetSeconds: number };

interface ScriptedRedis extends Redis {
  terseAuth(recordKey: string, windowKey: string, nowSeconds: number, count: "0" | "1"): Promise<(string | number)[]>;
  terseUncount(windowKey: string, second: number): Promise<number>;
}

/** Wraps the script; ioredis sends EVALSHA and falls back to EVAL once per connection. */
export class AuthScript {
  private readonly redis: ScriptedRedis;

  constructor(redis: Redis) {
    redis.defineCommand("terseAuth", { numberOfKeys: 2, lua: SCRIPT });
    redis.defineCommand("terseUncount", { numberOfKeys: 1, lua: UNCOUNT_SCRIPT });
    this.redis = redis as ScriptedRedis;
  }

  async run(keyHash: string, nowSeconds: number, count: boolean): Promise<AuthLookup> {
    const reply = await this.redis.terseAuth(
      cacheKeyFor(keyHash),
      rateLimitKeyFor(keyHash),
      nowSeconds,
      count ? "1" : "0",
    );
    if (reply[0] === 0) return { kind: "absent" };
    const key = decodeCachedKey(reply.slice(4).map((v) => (v === null ? null : String(v))));
    if (!key) return { kind: "absent" };
    return {
      kind: reply[0] === 2 ? "limited" : "allowed",
      key,
      limit: Number(reply[1]),
      remaining: Number(reply[2]),
      resetSeconds: Number(reply[3]),
    };
  }

  /** Gives back a slot counted for a call refused later (quota): refused calls do not count. */
  async uncount(keyHash: string, nowSeconds: number): Promise<void> {
    await this.redis.terseUncount(rateLimitKeyFor(keyHash), nowSeconds);
  }
}

/** The script's source, for the Redis Cluster check in packages/ops-checks. */
export const AUTH_SCRIPT_SOURCE = SCRIPT;
