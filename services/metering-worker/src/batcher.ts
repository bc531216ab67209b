import type { EventResult__Output } from "@terse/metering-proto";
import type { UsageEvent } from "@terse/usage-events";

// Many small jobs, few calls. A quiet data plane sends jobs of a few events; recorded one
// job per call, the worker managed about 1,000 events/s (docs/benchmarks.md), because
// every call costs a round trip and a statement whatever its size. So the jobs the
// worker holds at once (its concurrency) hand their events to this batcher, which
// sends them together: at once when no call is in flight (no added latency when quiet),
// and while calls are in flight, gathered into the next one (big batches when busy).
// Each job still completes only when the call carrying its events was confirmed.

/** Sends one batch, answers one result per event in the same order. */
export type SendBatch = (events: UsageEvent[]) => Promise<EventResult__Output[]>;

export interface BatcherOptions {
  /** Most events in one call; default 500 (the control plane accepts up to 1,000). */
  maxEvents?: number;
  /** Calls in flight at once; default 2, so Postgres works on one batch while the next is gathered. */
  maxInFlight?: number;
}

interface Pending {
  events: UsageEvent[];
  resolve(results: EventResult__Output[]): void;
  reject(err: unknown): void;
}

export class UsageBatcher {
  private queue: Pending[] = [];
  private inFlight = 0;
  private readonly maxEvents: number;
  private readonly maxInFlight: number;

  constructor(
    private readonly send: SendBatch,
    options: BatcherOptions = {},
  ) {
    this.maxEvents = options.maxEvents ?? 500;
    this.maxInFlight = options.maxInFlight ?? 2;
  }

  /** Records `events` in shared calls; resolves with their own results, in order. */
  async submit(events: UsageEvent[]): Promise<EventResult__Output[]> {
    const parts: Promise<EventResult__Output[]>[] = [];
    // A job larger than one call is split; it completes when all its parts are confirmed.
    for (let i = 0; i < events.length; i += this.maxEvents) {
      const part = events.slice(i, i + this.maxEvents);
      parts.push(new Promise((resolve, reject) => this.queue.push({ events: part, resolve, reject })));
    }
    this.pump();
    return (await Promise.all(parts)).flat();
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) void this.flush(this.take());
  }

  /** Whole submissions, in arrival order, up to maxEvents in all. */
  private take(): Pending[] {
    const batch: Pending[] = [];
    let size = 0;
    while (this.queue.length > 0 && size + (this.queue[0]?.events.length ?? 0) <= this.maxEvents) {
      const next = this.queue.shift() as Pending;
      batch.push(next);
      size += next.events.length;
    }
    return batch;
  }

  private async flush(batch: Pending[]): Promise<void> {
    this.inFlight++;
    try {
      const events = batch.flatMap((p) => p.events);
      const results = await this.send(events);
      if (results.length !== events.length) {
        throw new Error(`control plane answered ${results.length} results for ${events.length} events`);
      }
      let at = 0;
      for (const p of batch) {
        p.resolve(results.slice(at, at + p.events.length));
        at += p.events.length;
      }
    } catch (err) {
      // Every job of the call fails and is retried by BullMQ: a replay is counted once.
      for (const p of batch) p.reject(err);
    } finally {
      this.inFlight--;
      this.pump();
    }
  }
}
