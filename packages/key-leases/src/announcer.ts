import { randomBytes } from "node:crypto";
import {
  CACHE_GENERATION_KEY,
  encodeKeyChange,
  FENCED_PROCESSES_KEY,
  KEY_CHANGES_CHANNEL,
  KEY_LEASES_KEY,
  keyChangeAcksKeyFor,
} from "@terse/keys";
import type { Redis } from "ioredis";
import { type LeaseScripts, withLeaseScripts } from "./scripts.ts";

export interface AnnouncerOptions {
  /** The longest lease a proxy process takes (KEY_LEASE_TTL_MS): the bound of every wait. */
  leaseTtlMs: number;
  /** A process that has not acknowledged a change by then is fenced (default: half a lease). */
  ackTimeoutMs?: number;
  /** A process fenced, for the log and metrics: it will drop its copies and take a new lease. */
  onFenced?(ids: string[]): void;
}

/** How long fenced ids are remembered: any lease they held is long gone by then. */
const FENCED_TTL_SECONDS = 3_600;
/** The longest pause between two looks at the acknowledgements. */
const MAX_PAUSE_MS = 20;

/**
 * The control plane's side of the key-lease protocol (lease.ts): after it changed or
 * removed key records in Redis, `announce` tells every proxy process and returns only
 * once none of them can still answer from a copy made before the change: each live
 * lease's process has acknowledged it, or its lease has run out. A process that does not
 * acknowledge within `ackTimeoutMs` is fenced (its lease is not renewed again) and
 * waited out, so one stuck process delays a change by at most that plus a lease, and
 * never lets it be missed.
 */
export class KeyChangeAnnouncer {
  private readonly scripts: LeaseScripts;
  private readonly ackTimeoutMs: number;

  constructor(
    private readonly redis: Redis,
    private readonly options: AnnouncerOptions,
  ) {
    this.scripts = withLeaseScripts(redis);
    this.ackTimeoutMs = options.ackTimeoutMs ?? options.leaseTtlMs / 2;
  }

  /** Throws when Redis cannot be asked: the change's caller answers 503 and rolls back. */
  async announce(keys: readonly string[] | "all"): Promise<void> {
    if (keys !== "all" && keys.length === 0) return;
    const started = performance.now();
    const nonce = randomBytes(8).toString("hex");
    const acks = keyChangeAcksKeyFor(nonce);
    await this.redis.publish(KEY_CHANGES_CHANNEL, encodeKeyChange({ nonce, keys: keys === "all" ? "all" : [...keys] }));
    if ((await this.redis.exists(CACHE_GENERATION_KEY)) !== 1) {
      // Redis lost its data (flush, failover): the leases may be gone with it, so the
      // set cannot say who holds one. Every process finds the stamp missing at its next
      // renewal and drops its copies, and none keeps a lease longer than this.
      await pause(this.options.leaseTtlMs);
      return;
    }
    let fenced = false;
    for (let wait = 1; ; wait = Math.min(wait * 2, MAX_PAUSE_MS)) {
      const pending = idsOf(await this.scripts.terseLeasePending(KEY_LEASES_KEY, acks));
      if (pending.length === 0) break;
      const waited = performance.now() - started;
      if (!fenced && waited >= this.ackTimeoutMs) {
        await this.redis
          .pipeline()
          .sadd(FENCED_PROCESSES_KEY, ...pending)
          .expire(FENCED_PROCESSES_KEY, FENCED_TTL_SECONDS)
          .exec();
        this.options.onFenced?.(pending);
        fenced = true;
      }
      // A fenced lease runs out within one lease; only a clock gone wrong gets here.
      if (waited > this.ackTimeoutMs + 2 * this.options.leaseTtlMs) {
        throw new Error(`a key change was not acknowledged by ${pending.length} proxy process(es) in time`);
      }
      await pause(wait);
    }
    void this.redis.unlink(acks).catch(() => undefined);
  }
}

/** The pending script's reply ({now, id, expiry, ...}) as its ids. */
function idsOf(reply: string[]): string[] {
  const ids: string[] = [];
  for (let i = 1; i < reply.length; i += 2) ids.push(String(reply[i]));
  return ids;
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
