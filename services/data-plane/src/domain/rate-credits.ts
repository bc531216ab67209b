import type { DroppedKeys } from "@terse/key-leases";
import type { Grant, Settled, Settlement, WindowState } from "../infra/auth-script.ts";

/** Where credits are settled: AuthScript's settle script; a key whose call failed answers undefined. */
export interface CreditStore {
  settle(settlements: readonly Settlement[]): Promise<(Settled | undefined)[]>;
}

export interface RateCreditsOptions {
  /** How far ahead credits are held (RATE_CREDIT_SECONDS): they may be used until 3 s before that. */
  holdSeconds: number;
  /** How soon credits used are reported, and more asked for (ms). */
  settleMs: number;
  /** Reports settle calls that failed (Redis away), how many: their credits stay counted, as if used. */
  onSettleFailed?(keys: number): void;
}

/** Credits granted in one answer, held in Redis in the bucket of second `heldIn`. */
interface Batch {
  heldIn: number;
  left: number;
  /** Used since the last settle: moved into the current second's bucket by the next one. */
  used: number;
  /** The second the last settle reported this batch's uses in. */
  reportedIn: number;
}

interface KeyCredits {
  batches: Batch[];
  /** The window at the last answer; its `remaining` counts this process's credits as used. */
  window: WindowState;
  /** Credits used since the last settle, and the rate they came at (per second, smoothed). */
  uses: number;
  rate: number;
  since: number;
  /** performance.now() of the last credit taken: an idle key's credits go back (IDLE_MS). */
  lastTake: number;
}

/** A credit taken for one request: what to give back if the request is refused after all. */
export interface Credit {
  readonly batch: Batch;
  /** The window as this process sees it after the call (its own credits left count as free). */
  readonly rateLimit: WindowState;
}

/** Seconds before its bucket's second that a batch stops being used and is given back. */
const EXPIRY_MARGIN = 3;
/** A key none of whose credits was taken for this long gives them back: other processes may need them. */
const IDLE_MS = 1_000;
/** At most this many credits a process holds for one key: a 64th of its limit, at least 1, at most 512. */
const capFor = (limit: number) => Math.max(1, Math.min(512, Math.floor(limit / 64)));

/**
 * A process's credits for the keys it serves: calls it may admit without asking Redis,
 * granted by the auth script ahead of time and counted in the key's window from the
 * moment they are granted (auth-script.ts). So the window is never under-counted, and a
 * key is never admitted more often than its limit across every process; what credits
 * cost is that a credit one process holds is unavailable to the others until it is used
 * or given back (within `holdSeconds`). None are granted within a quarter of the limit,
 * and a process holds at most a 64th of it (at least one), so near the limit every call
 * is counted in Redis one by one, as without credits.
 *
 * Used credits are reported, and new ones asked for, `settleMs` after a call used one,
 * many keys in one pipeline, off the path of any request.
 */
export class RateCredits {
  private readonly keys = new Map<string, KeyCredits>();
  private readonly dirty = new Set<string>();
  /** Credits of keys dropped (changed, revoked): settled once more, then forgotten. */
  private retired: { keyHash: string; batches: Batch[] }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private settling: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly store: CreditStore,
    private readonly options: RateCreditsOptions,
  ) {}

  /** A credit for one call of the key, if this process holds one it may still use. */
  take(keyHash: string, nowSeconds: number): Credit | undefined {
    const k = this.keys.get(keyHash);
    if (!k) return undefined;
    for (const batch of k.batches) {
      if (batch.left === 0 || nowSeconds >= batch.heldIn - EXPIRY_MARGIN) continue;
      batch.left--;
      batch.used++;
      k.uses++;
      k.lastTake = performance.now();
      this.markDirty(keyHash);
      return { batch, rateLimit: this.viewOf(k) };
    }
    return undefined;
  }

  /** The credit of a call refused after all (its body, its quota): refused calls do not count. */
  /**
   * The credit of a call refused after all (its body, its quota): refused calls do not
   * count. Returns the second whose bucket still counts it when a settle reported it used
   * in between (the caller uncounts it there); put back, it would be reported twice.
   */
  giveBack(credit: Credit): number | undefined {
    if (credit.batch.used === 0) return credit.batch.reportedIn;
    credit.batch.used--;
    credit.batch.left++;
    return undefined;
  }

  /** How many credits to ask for with a call that goes to Redis anyway. */
  want(keyHash: string, limit: number): number {
    const k = this.keys.get(keyHash);
    if (!k) return 1;
    return Math.max(0, this.targetOf(k, limit) - leftOf(k));
  }

  /** An answer of the auth script: the window it saw, and the credits it granted. */
  note(keyHash: string, answer: WindowState & Grant): void {
    const window = { limit: answer.limit, remaining: answer.remaining, resetSeconds: answer.resetSeconds };
    let k = this.keys.get(keyHash);
    if (k) k.window = window;
    // A key is tracked only while it holds credits: one without has nothing to settle.
    if (answer.granted === 0) return;
    if (!k) {
      const now = performance.now();
      k = { batches: [], window, uses: 0, rate: 0, since: now, lastTake: now };
      this.keys.set(keyHash, k);
    }
    this.addBatch(k, answer);
  }

  /** The keys' credits are settled one last time and forgotten (their records changed or went). */
  retire(keys: DroppedKeys): void {
    const hashes = keys === "all" ? [...this.keys.keys()] : keys;
    for (const keyHash of hashes) {
      const k = this.keys.get(keyHash);
      if (!k) continue;
      this.keys.delete(keyHash);
      this.dirty.delete(keyHash);
      if (k.batches.length > 0) this.retired.push({ keyHash, batches: k.batches });
    }
    if (this.retired.length > 0) this.arm();
  }

  private retire1(keyHash: string, batch: Batch): void {
    this.retired.push({ keyHash, batches: [batch] });
    this.arm();
  }

  /** Settles everything at once (shutdown): credits used are reported, the rest given back. */
  async drain(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.sweeper);
    await this.settling;
    this.retire("all");
    clearTimeout(this.timer);
    await this.settle();
  }

  /** Keys holding credits (tests, metrics). */
  get heldKeys(): number {
    return this.keys.size;
  }

  private viewOf(k: KeyCredits): WindowState {
    return { ...k.window, remaining: Math.max(0, k.window.remaining + leftOf(k)) };
  }

  private targetOf(k: KeyCredits, limit: number): number {
    // Enough for two settle intervals at the key's rate, so a busy key rarely runs out.
    const perInterval = (k.rate * this.options.settleMs) / 1000;
    return Math.min(capFor(limit), Math.max(1, Math.ceil(2 * perInterval)));
  }

  private addBatch(k: KeyCredits, grant: Grant): void {
    const same = k.batches.find((b) => b.heldIn === grant.heldIn);
    if (same) same.left += grant.granted;
    else k.batches.push({ heldIn: grant.heldIn, left: grant.granted, used: 0, reportedIn: 0 });
    if (!this.sweeper && !this.stopped) {
      // Credits nobody used are given back before they expire.
      this.sweeper = setInterval(() => this.sweep(), 1_000);
      this.sweeper.unref();
    }
  }

  /** Marks for settling the keys whose credits expire soon or sit idle: they go back. */
  private sweep(): void {
    const nowSeconds = Math.floor(Date.now() / 1000);
    const idleSince = performance.now() - IDLE_MS;
    for (const [keyHash, k] of this.keys) {
      const idle = k.lastTake <= idleSince;
      // Idle with nothing left and nothing unreported: forgotten, no settle call for it.
      if (idle && !this.dirty.has(keyHash) && leftOf(k) === 0) this.keys.delete(keyHash);
      else if (idle || k.batches.some((b) => nowSeconds >= b.heldIn - EXPIRY_MARGIN)) this.markDirty(keyHash);
    }
    if (this.keys.size === 0 && this.retired.length === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  private markDirty(keyHash: string): void {
    this.dirty.add(keyHash);
    this.arm();
  }

  private arm(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.settling ??= this.settle().finally(() => {
        this.settling = undefined;
        if (this.dirty.size > 0 || this.retired.length > 0) this.arm();
      });
    }, this.options.settleMs);
    this.timer.unref();
  }

  /** One pipeline: for each dirty key, its used and expiring credits, and the credits it wants. */
  private async settle(): Promise<void> {
    const nowMs = performance.now();
    const nowSeconds = Math.floor(Date.now() / 1000);
    const settlements: Settlement[] = [];
    const owners: (KeyCredits | undefined)[] = [];
    for (const keyHash of this.dirty) {
      const k = this.keys.get(keyHash);
      if (!k) continue;
      const idle = nowMs - k.lastTake >= IDLE_MS;
      const held = k.batches.map((b) => {
        const returned = idle || nowSeconds >= b.heldIn - EXPIRY_MARGIN ? b.left : 0;
        const line = { heldIn: b.heldIn, used: b.used, returned };
        if (b.used > 0) b.reportedIn = nowSeconds;
        b.used = 0;
        b.left -= returned;
        return line;
      });
      k.batches = k.batches.filter((b) => b.left > 0 && nowSeconds < b.heldIn - EXPIRY_MARGIN);
      const elapsed = Math.max(1, nowMs - k.since);
      k.rate = k.rate / 2 + (k.uses * 1000) / elapsed / 2;
      k.uses = 0;
      k.since = nowMs;
      const want = this.stopped || idle ? 0 : Math.max(0, this.targetOf(k, k.window.limit) - leftOf(k));
      settlements.push({ keyHash, nowSeconds, want, held: held.filter((h) => h.used > 0 || h.returned > 0) });
      owners.push(k);
    }
    this.dirty.clear();
    for (const { keyHash, batches } of this.retired) {
      const held = batches.map((b) => {
        const line = { heldIn: b.heldIn, used: b.used, returned: b.left };
        if (b.used > 0) b.reportedIn = nowSeconds;
        b.used = 0;
        b.left = 0;
        return line;
      });
      settlements.push({ keyHash, nowSeconds, want: 0, held });
      owners.push(undefined);
    }
    this.retired = [];
    if (settlements.length === 0) return;
    const answers = await this.store.settle(settlements);
    // Nothing lost where one failed: unreported uses stay counted in their held bucket, as
    // do credits not given back (the window over-counts until the bucket leaves it).
    const failed = answers.filter((a) => a === undefined).length;
    if (failed > 0) this.options.onSettleFailed?.(failed);
    answers.forEach((answer, i) => {
      const k = owners[i];
      const keyHash = settlements[i]?.keyHash as string;
      if (!k || !answer) return;
      if (this.keys.get(keyHash) !== k) {
        // Retired while the answer was on its way: what it granted goes straight back.
        if (answer.granted > 0)
          this.retire1(keyHash, { heldIn: answer.heldIn, left: answer.granted, used: 0, reportedIn: 0 });
        return;
      }
      if (answer.limit > 0)
        k.window = { limit: answer.limit, remaining: answer.remaining, resetSeconds: answer.resetSeconds };
      if (answer.granted > 0) this.addBatch(k, answer);
      if (k.batches.length === 0 && k.uses === 0) this.keys.delete(keyHash);
    });
  }
}

function leftOf(k: KeyCredits): number {
  let left = 0;
  for (const b of k.batches) left += b.left;
  return left;
}
