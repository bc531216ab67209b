import type { Redis } from "ioredis";

// The two scripts of the protocol. Both read Redis's own clock (TIME), so every lease's
// expiry and every "now" it is compared with come from one clock, whatever the clocks of
// the processes say.

// A process's lease, renewed: TTL milliseconds from now, unless the process was fenced (it
// did not acknowledge a change in time), in which case the lease is left to run out where
// it stands. The lease the process held before it last lapsed goes: the process keeps
// nothing from that time (KeyLease drops its copies before it takes a new id).
// KEYS: leases, fenced. ARGV: id, ttl ms, then the ids it replaces. 1 renewed, 0 fenced.
const RENEW = `
if #ARGV > 2 then redis.call('ZREM', KEYS[1], unpack(ARGV, 3)) end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
`;

// The processes a change still waits for: every live lease (expiry after now) whose
// process has not acknowledged the change. Leases that ran out are removed on the way.
// KEYS: leases, the change's acks. Returns {now ms, id, expiry ms, id, expiry ms, ...}.
const PENDING = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local live = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local out = {now}
for i = 1, #live, 2 do
  if redis.call('SISMEMBER', KEYS[2], live[i]) == 0 then
    out[#out + 1] = live[i]
    out[#out + 1] = live[i + 1]
  end
end
return out
`;

export interface LeaseScripts extends Redis {
  terseLeaseRenew(leases: string, fenced: string, id: string, ttlMs: number, ...replaced: string[]): Promise<number>;
  terseLeasePending(leases: string, acks: string): Promise<string[]>;
}

/** The scripts defined on `redis` (ioredis sends EVALSHA, and EVAL once per connection). */
export function withLeaseScripts(redis: Redis): LeaseScripts {
  const scripted = redis as LeaseScripts;
  if (typeof scripted.terseLeaseRenew !== "function") {
    redis.defineCommand("terseLeaseRenew", { numberOfKeys: 2, lua: RENEW });
    redis.defineCommand("terseLeasePending", { numberOfKeys: 2, lua: PENDING });
  }
  return scripted;
}

/** The scripts' sources, for the Redis Cluster check in packages/ops-checks. */
export const LEASE_SCRIPT_SOURCES = { RENEW, PENDING };
