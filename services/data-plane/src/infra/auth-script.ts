import { CACHED_KEY_FIELDS, type CachedKey, cacheKeyFor, decodeCachedKey, rateLimitKeyFor } from "@terse/keys";
import type { Redis } from "ioredis";

// Authentication and the key's rpm limit in one round trip: a Lua script over two keys
// that share the key hash's hash tag, so it runs on Redis Cluster too. Asked only when
// the process holds no copy of the key or no credit for it (domain/authenticate.ts).
//
// Rate limit: a sliding 60-second window counted in one-second buckets (a hash field per
// second): exact to the second, bounded memory, and shared by every proxy replica. A
// refused call adds nothing; `count` = 0 looks the key up without counting (the caller is
// about to be refused for another reason).
//
// Credits (domain/rate-credits.ts): a call may also ask for credits, calls the process
// may then admit by itself, without a round trip. Granted credits count at once, in a
// bucket `hold` seconds ahead (`now + hold`), so the window counts them from the grant
// until a minute after the last second they may be used in, even if the process that
// holds them dies: the window can be over-counted, never under. The settle script moves
// the credits used into the bucket of the second they were reported in, and gives back
// those not used. None are granted within a quarter of the limit: near it, every call
// is counted here, one by one, as if there were no credits.
//
// The window's hash also keeps its running sum (`n`), a second no bucket is older than
// (`t`), so a call visits only the seconds that passed since the last one (reading all
// buckets on every call cost Redis some 50 µs per request under load), and the last
// second a held bucket counts to (`x`), so its expiry is never shortened. A window
// without `n`, or with a `t` too old to walk, is summed from its buckets once.
//
// Each command a script calls costs Redis a few µs, a write more: a counted call writes
// its bucket, the sum and `t` in one HSET, and renews the window's expiry only when it
// opens a new second's bucket or holds credits later than before; a call that changes
// nothing writes nothing; the reset's walk to the earliest bucket runs only when the
// cleanup moved `t`.

/** The window brought up to `now` (KEYS[2], ARGV[1]): n, t, bucket (now's), x, and the reset. */
const WINDOW = `
local w = KEYS[2]
local now = tonumber(ARGV[1])
local oldest = now - 59
local head = redis.call('HMGET', w, 'n', 't', now, 'x')
local n = tonumber(head[1] or '-1')
local t = tonumber(head[2] or '0')
local bucket = tonumber(head[3] or '0')
local x = tonumber(head[4] or '0')
local n0, t0, x0 = n, t, x
if n < 0 or oldest - t > 120 then
  n, t = 0, now
  local fields = redis.call('HGETALL', w)
  local stale = {}
  for i = 1, #fields, 2 do
    local f = fields[i]
    if f ~= 'n' and f ~= 't' and f ~= 'x' then
      local s = tonumber(f)
      if s < oldest then
        stale[#stale + 1] = f
      else
        n = n + tonumber(fields[i + 1])
        if s < t then t = s end
      end
    end
  end
  if #stale > 0 then redis.call('HDEL', w, unpack(stale)) end
end
while t < oldest do
  local c = redis.call('HGET', w, t)
  if c then
    n = n - tonumber(c)
    redis.call('HDEL', w, t)
  end
  t = t + 1
end
-- A replica whose clock runs ahead may have left t past this one's now: every bucket is
-- at t or later, so none lies before now, and now is a bound for the bucket counted next.
if t > now then t = now end
-- The earliest bucket still counted names the reset. A t this script stored names one
-- already; only a t the cleanup moved has to walk to the next bucket there is.
if t ~= t0 then
  while t < now and redis.call('HEXISTS', w, t) == 0 do t = t + 1 end
end
local reset = t + 60 - now
`;

/** Credits for `want` (ARGV[3]) held `hold` (ARGV[4]) seconds ahead, if the window has room past a quarter of `limit`. */
const GRANT = `
local granted, held = 0, 0
local want = tonumber(ARGV[3])
if grantable and want > 0 then
  local room = limit - n - math.floor(limit / 4)
  if room > 0 then
    granted = math.min(want, room)
    held = now + tonumber(ARGV[4])
    n = n + granted
    if held + 59 > x then x = held + 59 end
  end
end
`;

/** Writes what changed: the sum, t, now's bucket when `added` > 0, the held credits, x, and the expiry. */
const WRITE = `
if added > 0 or granted > 0 then
  local fields = {'n', n, 't', t}
  if added > 0 then
    fields[#fields + 1] = now
    fields[#fields + 1] = bucket
  end
  if x ~= x0 then
    fields[#fields + 1] = 'x'
    fields[#fields + 1] = x
  end
  redis.call('HSET', w, unpack(fields))
  if granted > 0 then redis.call('HINCRBY', w, held, granted) end
  if (added > 0 and head[3] == false) or x ~= x0 then
    redis.call('EXPIRE', w, math.max(61, x - now + 1))
  end
elseif n <= 0 then
  if n0 >= 0 then redis.call('DEL', w) end
elseif n ~= n0 or t ~= t0 then
  redis.call('HSET', w, 'n', n, 't', t)
end
`;

// KEYS: record, window. ARGV: now, count ('1'/'0'), credits wanted, hold seconds.
// Returns {0} when the key record is absent (unknown or revoked), otherwise
// {1 allowed | 2 limited, limit, remaining, reset, credits granted, their bucket, ...record fields}.
const AUTH = `
local rec = redis.call('HMGET', KEYS[1], ${CACHED_KEY_FIELDS.map((f) => `'${f}'`).join(", ")})
if not rec[1] then return {0} end
local limit = tonumber(rec[4])
${WINDOW}
local allowed = n < limit
local added = 0
if allowed and ARGV[2] == '1' then
  n = n + 1
  bucket = bucket + 1
  added = 1
end
local grantable = added > 0
${GRANT}
${WRITE}
if not allowed then
  return {2, limit, 0, reset, 0, 0, unpack(rec)}
end
return {1, limit, limit - n, reset, granted, held, unpack(rec)}
`;

// Settles a process's credits for one key and asks for more. KEYS: record, window.
// ARGV: now, (unused), credits wanted, hold seconds, then for each bucket of credits the
// process held: its second, how many it used, how many it gives back. Used credits move
// into now's bucket; the rest leave the window. A bucket no longer ahead of now is left
// as it is (it counts as an ordinary second, over-counting at worst). No new credits for
// a key whose record is gone. Returns {credits granted, their bucket, remaining, reset, limit (0: no record)}.
const SETTLE = `
local limit = tonumber(redis.call('HGET', KEYS[1], 'rate_limit_rpm') or '0')
${WINDOW}
local added = 0
for i = 5, #ARGV, 3 do
  local at = ARGV[i]
  local used, back = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local have = 0
  if tonumber(at) > now then have = tonumber(redis.call('HGET', w, at) or '0') end
  local take = math.min(have, used + back)
  if take > 0 then
    local use = math.min(used, take)
    if take == have then redis.call('HDEL', w, at) else redis.call('HINCRBY', w, at, -take) end
    added = added + use
    n = n - (take - use)
  end
end
bucket = bucket + added
local grantable = limit > 0 and n < limit
${GRANT}
${WRITE}
return {granted, held, limit - n, reset, limit}
`;

// Gives back one slot of a second's bucket, only if the bucket still holds one: Redis may
// have lost the window between the count and this call (restart, FLUSHALL), and a bare
// HINCRBY -1 would then leave a negative bucket, with no expiry, that grants extra calls.
// The running sum gives the slot back with it.
const UNCOUNT = `
local used = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if used > 0 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
  if tonumber(redis.call('HGET', KEYS[1], 'n') or '0') > 0 then redis.call('HINCRBY', KEYS[1], 'n', -1) end
end
return used
`;

/** The window as a script left it: what the caller may tell its caller. */
export interface WindowState {
  limit: number;
  /** Calls left in the window, every process's held credits counted as used. */
  remaining: number;
  resetSeconds: number;
}

/** Credits granted with an answer: how many, and the second of the bucket they are held in. */
export interface Grant {
  granted: number;
  heldIn: number;
}

export type AuthLookup = { kind: "absent" } | ({ kind: "allowed" | "limited"; key: CachedKey } & WindowState & Grant);

/** A process's credits for one key, settled: the buckets they were held in, what was used and given back. */
export interface Settlement {
  keyHash: string;
  nowSeconds: number;
  want: number;
  held: { heldIn: number; used: number; returned: number }[];
}

export type Settled = WindowState & Grant;

interface ScriptedRedis extends Redis {
  terseAuth(
    recordKey: string,
    windowKey: string,
    nowSeconds: number,
    count: "0" | "1",
    want: number,
    hold: number,
  ): Promise<(string | number)[]>;
  terseSettle(recordKey: string, windowKey: string, ...args: (string | number)[]): Promise<number[]>;
  terseUncount(windowKey: string, second: number): Promise<number>;
}

/** Wraps the scripts; ioredis sends EVALSHA and falls back to EVAL once per connection. */
export class AuthScript {
  private readonly redis: ScriptedRedis;

  /** `holdSeconds`: how far ahead granted credits are held (RATE_CREDIT_SECONDS). */
  constructor(
    redis: Redis,
    readonly holdSeconds = 20,
  ) {
    redis.defineCommand("terseAuth", { numberOfKeys: 2, lua: AUTH });
    redis.defineCommand("terseSettle", { numberOfKeys: 2, lua: SETTLE });
    redis.defineCommand("terseUncount", { numberOfKeys: 1, lua: UNCOUNT });
    this.redis = redis as ScriptedRedis;
  }

  /** Not an async function: the reply is mapped in one `then`, a promise less per request. */
  run(keyHash: string, nowSeconds: number, count: boolean, want = 0): Promise<AuthLookup> {
    return this.redis
      .terseAuth(
        cacheKeyFor(keyHash),
        rateLimitKeyFor(keyHash),
        nowSeconds,
        count ? "1" : "0",
        count ? want : 0,
        this.holdSeconds,
      )
      .then(lookupOf);
  }

  /**
   * Settles several keys' credits; a key whose script failed answers undefined. Sent as
   * separate calls in one tick, which auto-pipelining writes at once (per node on a
   * Cluster, where one explicit pipeline across slots is refused).
   */
  settle(settlements: readonly Settlement[]): Promise<(Settled | undefined)[]> {
    return Promise.all(
      settlements.map((s) => {
        const held = s.held.flatMap((h) => [h.heldIn, h.used, h.returned]);
        return this.redis
          .terseSettle(
            cacheKeyFor(s.keyHash),
            rateLimitKeyFor(s.keyHash),
            s.nowSeconds,
            0,
            s.want,
            this.holdSeconds,
            ...held,
          )
          .then(settledOf, () => undefined);
      }),
    );
  }

  /** Gives back a slot counted for a call refused later (quota): refused calls do not count. */
  async uncount(keyHash: string, nowSeconds: number): Promise<void> {
    await this.redis.terseUncount(rateLimitKeyFor(keyHash), nowSeconds);
  }
}

function settledOf(reply: number[]): Settled {
  const [granted, heldIn, remaining, resetSeconds, limit] = reply.map(Number);
  return { granted, heldIn, remaining, resetSeconds, limit } as Settled;
}

/** The script's reply as a lookup: {0}, or verdict, limit, remaining, reset, grant and the record's fields. */
function lookupOf(reply: (string | number)[]): AuthLookup {
  if (reply[0] === 0) return { kind: "absent" };
  const key = decodeCachedKey(reply.slice(6).map((v) => (v === null ? null : String(v))));
  if (!key) return { kind: "absent" };
  return {
    kind: reply[0] === 2 ? "limited" : "allowed",
    key,
    limit: Number(reply[1]),
    remaining: Number(reply[2]),
    resetSeconds: Number(reply[3]),
    granted: Number(reply[4]),
    heldIn: Number(reply[5]),
  };
}

/** The scripts' sources, for the Redis Cluster check in packages/ops-checks. */
export const AUTH_SCRIPT_SOURCE = AUTH;
export const SETTLE_SCRIPT_SOURCE = SETTLE;
