import { randomBytes } from "node:crypto";
import {
  CACHE_GENERATION_KEY,
  decodeKeyChange,
  FENCED_PROCESSES_KEY,
  KEY_CHANGES_CHANNEL,
  KEY_LEASES_KEY,
  keyChangeAcksKeyFor,
} from "@terse/keys";
import type { Redis } from "ioredis";
import { type LeaseScripts, withLeaseScripts } from "./scripts.ts";

/** The copies to drop: the keys a change names, or every one (a lapse, a resync). */
export type DroppedKeys = readonly string[] | "all";

export interface KeyLeaseOptions {
  /** How long one renewal keeps the lease (KEY_LEASE_TTL_MS); renewed every third of it. */
  ttlMs: number;
  /** Drops the named copies, at once: called before a change is acknowledged and on every lapse. */
  onDrop(keys: DroppedKeys): void;
  /** Each change taken and each lapse with its reason, for metrics and logs. */
  onEvent?(event: { kind: "change" } | { kind: "lapse"; reason: string }): void;
}

/** How long a change's acknowledgements are kept: far longer than any announcer waits. */
const ACKS_TTL_MS = 60_000;

/**
 * A proxy process's side of the key-lease protocol (DESIGN.md section 2, as changed by
 * issue 16; docs/operations.md): while `valid()`, the process may answer from its own
 * copies of key records, because every change to a key reaches it, and the control
 * plane's write does not return until this process dropped the copy (it acknowledged the
 * change) or its lease ran out. The Chubby pattern: a client cache kept consistent by
 * invalidation, the lease bounding how long a silent client can be waited for.
 *
 * Safety rests on three rules kept here:
 * - the local deadline is measured from before the renewal was sent, less a margin, so
 *   it passes before the expiry Redis recorded (that one counts from the renewal's
 *   arrival, on Redis's clock);
 * - a change is taken (`onDrop`) before it is acknowledged, and bumps `epoch`, so a
 *   lookup that started before it cannot put back what it dropped (see `epoch`);
 * - anything that could make the process miss a change (its subscription or connection
 *   closing, a failed renewal or acknowledgement, the lease fenced or run out, the
 *   cache's generation stamp gone) drops every copy at once, and the process then
 *   takes a new lease under a new id.
 */
export class KeyLease {
  /**
   * Changes and lapses seen so far. A copy read from Redis may be kept only if the epoch
   * is the same when the answer arrives as when the read was sent: otherwise a change
   * may have been taken in between, and the answer may predate it.
   */
  epoch = 0;
  private id = newLeaseId();
  /** Set while `id` holds a lease in Redis (renewed at least once since it was taken). */
  private registered = false;
  /** Ids of leases held before a lapse, which Redis may still count: removed by the next renewal. */
  private replaces: string[] = [];
  /** performance.now() before which copies may be used; 0 once lapsed. */
  private deadline = 0;
  private subscribed = false;
  private timer: NodeJS.Timeout | undefined;
  private renewal: Promise<void> | undefined;
  private stopped = false;
  private readonly scripts: LeaseScripts;
  private readonly margin: number;

  constructor(
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly options: KeyLeaseOptions,
  ) {
    this.scripts = withLeaseScripts(redis);
    this.margin = Math.max(100, options.ttlMs / 10);
  }

  /** Subscribes, takes the lease and keeps renewing it; copies may be used once this resolves. */
  async start(): Promise<void> {
    this.subscriber.on("message", this.onMessage);
    this.subscriber.on("close", this.onSubscriberClosed);
    this.subscriber.on("ready", this.onSubscriberReady);
    this.redis.on("close", this.onConnectionClosed);
    await this.subscriber.subscribe(KEY_CHANGES_CHANNEL);
    this.subscribed = true;
    await this.renew();
    this.timer = setInterval(() => void this.renew(), this.options.ttlMs / 3);
    this.timer.unref();
  }

  /** May copies be used (or kept) now? */
  valid(now = performance.now()): boolean {
    return now < this.deadline;
  }

  /** Drops every copy and gives the lease back, so no change waits for this process. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.lapse("stopping");
    this.subscriber.off("message", this.onMessage);
    this.subscriber.off("close", this.onSubscriberClosed);
    this.subscriber.off("ready", this.onSubscriberReady);
    this.redis.off("close", this.onConnectionClosed);
    if (this.replaces.length > 0) await this.scripts.zrem(KEY_LEASES_KEY, ...this.replaces).catch(() => undefined);
  }

  /** One renewal at a time; a call while one is in flight waits for that one. */
  renew(): Promise<void> {
    this.renewal ??= this.renewOnce().finally(() => {
      this.renewal = undefined;
    });
    return this.renewal;
  }

  private async renewOnce(): Promise<void> {
    if (this.stopped) return;
    const sentAt = performance.now();
    // Run out here (the process was paused, a renewal failed): nothing from that time is kept.
    if (this.deadline !== 0 && sentAt >= this.deadline) this.lapse("the lease ran out");
    if (!this.subscribed) return;
    const id = this.id;
    const replaced = this.replaces;
    let renewed: number;
    let stamped: number;
    try {
      [renewed, stamped] = await Promise.all([
        this.scripts.terseLeaseRenew(KEY_LEASES_KEY, FENCED_PROCESSES_KEY, id, this.options.ttlMs, ...replaced),
        this.redis.exists(CACHE_GENERATION_KEY),
      ]);
    } catch {
      this.lapse("the lease could not be renewed");
      return;
    }
    if (this.stopped) return;
    this.replaces = this.replaces.filter((r) => !replaced.includes(r));
    if (this.id !== id) {
      // It lapsed while the renewal was out: the lease just renewed is one more to replace.
      if (renewed === 1 && !this.replaces.includes(id)) this.replaces.push(id);
      return;
    }
    if (renewed !== 1) return this.lapse("fenced: a change was not acknowledged in time");
    this.registered = true;
    // Redis lost the cache (flushed, replaced): changes made meanwhile may not have been waited for.
    if (stamped !== 1) return this.lapse("the key cache's generation stamp is missing");
    this.deadline = sentAt + this.options.ttlMs - this.margin;
  }

  /** Drops every copy, and takes a new id: the next renewal replaces the old lease. */
  private lapse(reason: string): void {
    const held = this.deadline !== 0;
    this.deadline = 0;
    this.epoch++;
    if (this.registered) {
      this.replaces.push(this.id);
      this.registered = false;
    }
    this.id = newLeaseId();
    this.options.onDrop("all");
    // Giving the lease back on stop is no lapse: nothing to warn of or count.
    if (held && !this.stopped) this.options.onEvent?.({ kind: "lapse", reason });
  }

  private readonly onMessage = (channel: string, message: string): void => {
    if (channel !== KEY_CHANGES_CHANNEL) return;
    const change = decodeKeyChange(message);
    if (!change) return;
    this.epoch++;
    this.options.onDrop(change.keys);
    this.options.onEvent?.({ kind: "change" });
    // Under the lease an announcer may be waiting for: this one, and one given up since
    // (its copies went with it) that Redis may still count until the next renewal.
    const ids = this.registered ? [this.id, ...this.replaces] : this.replaces;
    if (ids.length > 0) void this.acknowledge(change.nonce, ids);
  };

  private async acknowledge(nonce: string, ids: string[]): Promise<void> {
    const acks = keyChangeAcksKeyFor(nonce);
    try {
      const results = await this.redis
        .pipeline()
        .sadd(acks, ...ids)
        .pexpire(acks, ACKS_TTL_MS)
        .exec();
      if (results?.some(([err]) => err)) throw new Error("acknowledgement refused");
    } catch {
      // The announcer will wait for this lease to run out: stop using it now.
      this.lapse("a change could not be acknowledged");
    }
  }

  private readonly onSubscriberClosed = (): void => {
    this.subscribed = false;
    this.lapse("the subscription closed");
  };

  /** Back after a reconnect: ioredis subscribed again before 'ready'; a PING answered after it proves it. */
  private readonly onSubscriberReady = (): void => {
    if (this.subscribed || this.stopped) return;
    this.subscriber.ping().then(
      () => {
        this.subscribed = true;
        void this.renew();
      },
      () => undefined,
    );
  };

  private readonly onConnectionClosed = (): void => this.lapse("the connection closed");
}

function newLeaseId(): string {
  return randomBytes(8).toString("hex");
}
