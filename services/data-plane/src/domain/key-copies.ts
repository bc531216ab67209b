import type { DroppedKeys } from "@terse/key-leases";
import type { CachedKey } from "@terse/keys";

/** What the copies need of the process's lease (@terse/key-leases' KeyLease). */
export interface Lease {
  valid(now?: number): boolean;
  readonly epoch: number;
}

/**
 * This process's copies of the key records it served, so a known key is answered
 * without asking Redis. A local positive cache, which the spec allows only with
 * synchronous invalidation (a revoked key gets 401 everywhere once DELETE returns): a
 * copy is used only while the process's lease is valid, and a key's change does not
 * return until every process with a lease has dropped its copy (KeyLease, announced by
 * the control plane's KeyCache). Unknown and revoked keys are never copied: each of
 * their requests asks Redis, which also tells 401 from 503.
 */
export class KeyCopies {
  private readonly records = new Map<string, CachedKey>();

  /** `max`: copies kept at most; past it the oldest goes (a copy read again costs one round trip). */
  constructor(
    private readonly lease: Lease,
    private readonly max = 100_000,
  ) {}

  /** The record of the key, if this process may answer from its copy now. */
  get(keyHash: string): CachedKey | undefined {
    return this.lease.valid() ? this.records.get(keyHash) : undefined;
  }

  /** Read before a lookup is sent to Redis, and handed to `keep` with its answer. */
  get epoch(): number {
    return this.lease.epoch;
  }

  /**
   * Keeps a record read from Redis, unless a change or a lapse came in since the read
   * was sent (`epoch` moved): the answer may then predate the change it was dropped for.
   */
  keep(keyHash: string, key: CachedKey, epoch: number): void {
    if (epoch !== this.lease.epoch || !this.lease.valid()) return;
    if (!this.records.has(keyHash) && this.records.size >= this.max) {
      const oldest = this.records.keys().next().value;
      if (oldest !== undefined) this.records.delete(oldest);
    }
    this.records.set(keyHash, key);
  }

  drop(keys: DroppedKeys): void {
    if (keys === "all") this.records.clear();
    else for (const k of keys) this.records.delete(k);
  }

  get size(): number {
    return this.records.size;
  }
}
