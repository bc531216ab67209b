import type { Logger } from "@terse/logger";
import { encodeUsageBatch, USAGE_BATCH_JOB, USAGE_QUEUE, type UsageEvent } from "@terse/usage-events";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { Counter } from "prom-client";
import { settledWithin } from "./settled-within.ts";

export interface UsagePublisherOptions {
  /** Events held while Redis is unreachable; past it the oldest are dropped and counted. */
  maxBuffered: number;
  /**
   * A batch is sent when it reaches this many events (default 500, what the metering
   * worker submits to the control plane in one call)...
   */
  batchSize?: number;
  /**
   * ...or this long after its first event (default 50 ms). A BullMQ add costs the proxy
   * some 350 µs of CPU whatever the batch holds: a timer of 20 ms cost 1.8% of a core at
   * any rate below 5,000 requests/s (90 µs per request at 200/s, docs/benchmarks.md);
   * 50 ms keeps usage, and with it the quota check, within a twentieth of a second.
   */
  flushMs?: number;
  dropped?: Counter;
}

/**
 * Sends usage events to the BullMQ queue in small batches, off the request path: the
 * caller's response never waits for metering. While Redis is unreachable the events
 * wait in a bounded buffer and are retried with backoff. Each event carries its own id,
 * so a batch sent twice (a retry after a lost reply) is still counted once downstream.
 */
export class UsagePublisher {
  private queue: Queue;
  /** A queue whose start-up check of Redis failed: it refuses every add (renewQueueIfBroken). */
  private brokenQueue: Queue | undefined;
  private buffer: UsageEvent[] = [];
  /** The batch being sent: out of the buffer, so the bound never counts or drops what may already be delivered. */
  private inFlight: UsageEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private failures = 0;
  /** Events dropped since the last line that said so, and when that line was written (ms). */
  private droppedUnsaid = 0;
  private droppedSaidAt = Number.NEGATIVE_INFINITY;
  private readonly batchSize: number;
  private readonly flushMs: number;

  constructor(
    private readonly connection: Redis,
    private readonly logger: Logger,
    private readonly options: UsagePublisherOptions,
  ) {
    this.queue = this.newQueue();
    // Below 10,000 requests/s the 50 ms timer, not the size, closes a batch: one add per
    // 50 ms whatever the rate. An add costs some 250 µs plus 2.4 µs per event (JSON, msgpack,
    // the socket): at 100 a batch, the fixed part was 2.5 µs per request.
    this.batchSize = options.batchSize ?? 500;
    this.flushMs = options.flushMs ?? 50;
  }

  /** Resolves once the queue can take batches (its start-up check of Redis is done); rejects if that check failed. */
  async ready(): Promise<void> {
    await this.queue.waitUntilReady();
  }

  publish(event: UsageEvent): void {
    this.buffer.push(event);
    this.bound();
    if (this.buffer.length >= this.batchSize) this.schedule(0);
    else this.schedule(this.flushMs);
  }

  /** Events not yet known to be in the queue: waiting, and the batch being sent. */
  get buffered(): number {
    return this.buffer.length + this.inFlight.length;
  }

  /** Events of the batch being sent now (0 between sends). */
  get beingSent(): number {
    return this.inFlight.length;
  }

  /**
   * Drops the oldest waiting events past the bound, counted. A batch in flight is not the
   * buffer's to drop (it may be in the queue already): while one is sent, the publisher
   * holds up to a batch more than the bound, until the send ends. Said in the log at most
   * once a second (with how many since the last line): at full traffic through an outage,
   * a line per event would be thousands a second.
   */
  private bound(): void {
    const over = this.buffer.length - this.options.maxBuffered;
    if (over <= 0) return;
    this.buffer.splice(0, over);
    this.options.dropped?.inc(over);
    this.droppedUnsaid += over;
    if (performance.now() - this.droppedSaidAt >= 1_000) this.sayDropped();
  }

  /** Logs the drops not yet said (the rest of a burst: once a send gets through, and at shutdown). */
  private sayDropped(): void {
    if (this.droppedUnsaid === 0) return;
    this.logger.error({ dropped: this.droppedUnsaid }, "usage buffer full: oldest events dropped");
    this.droppedUnsaid = 0;
    this.droppedSaidAt = performance.now();
  }

  /**
   * Sends everything buffered (shutdown), retrying while Redis is away, for at most
   * `timeoutMs`: a send that Redis never answers (a stalled server) is not waited for
   * past it. What is left is said in the log: the events that waited, and the batch in
   * flight, which Redis may have taken.
   */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    for (let left = timeoutMs; this.buffered > 0 && left > 0; left = deadline - performance.now()) {
      clearTimeout(this.timer);
      this.timer = undefined;
      await settledWithin(this.flush(), left);
      if (this.buffered > 0) await settledWithin(new Promise((r) => setTimeout(r, 100)), deadline - performance.now());
    }
    this.sayDropped();
    if (this.buffered > 0) {
      const unsent = { lost: this.buffer.length, in_flight: this.inFlight.length };
      this.logger.error(unsent, "usage events not delivered at shutdown");
    }
  }

  /** Closes the queue, waiting at most `timeoutMs` for Redis to say so. */
  async close(timeoutMs = 1_000): Promise<void> {
    clearTimeout(this.timer);
    await settledWithin(this.queue.close(), timeoutMs);
  }

  private schedule(delayMs: number): void {
    // A pending timer stands, whatever its delay, while a backoff is running.
    if (this.timer && (delayMs > 0 || this.failures > 0)) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, delayMs);
  }

  private async flush(): Promise<void> {
    if (this.sending) return this.sending;
    this.sending = this.sendAll().finally(() => {
      this.sending = undefined;
    });
    return this.sending;
  }

  private newQueue(): Queue {
    const queue = new Queue(USAGE_QUEUE, {
      connection: this.connection,
      defaultJobOptions: {
        attempts: 10,
        backoff: { type: "exponential", delay: 1_000 },
        // A done job's events are in Postgres; Redis keeps the last hundred to look at. At
        // 2,500 requests/s a job holds 125 events, 28 KB in Redis as columns (81 as objects):
        // the thousand kept before held 81 MB.
        removeOnComplete: 100,
        removeOnFail: false,
      },
    });
    queue.on("error", () => undefined); // connection errors surface in send(); avoid an unhandled 'error'
    queue.waitUntilReady().catch(() => {
      this.brokenQueue = queue;
    });
    return queue;
  }

  /**
   * BullMQ checks Redis once, when a queue is made (its version, by INFO); if Redis went
   * away during that check, the queue refuses every add for good, whatever the
   * connection does next. Such a queue is replaced; the connection is ours and stays.
   */
  private renewQueueIfBroken(): void {
    if (this.brokenQueue !== this.queue) return;
    const old = this.queue;
    this.queue = this.newQueue();
    void old.close().catch(() => undefined);
    this.logger.warn("usage queue rebuilt: its start-up check of Redis had failed");
  }

  private async sendAll(): Promise<void> {
    while (this.buffer.length > 0) {
      this.inFlight = this.buffer.splice(0, this.batchSize);
      try {
        await this.queue.add(USAGE_BATCH_JOB, encodeUsageBatch(this.inFlight));
        this.inFlight = [];
        this.failures = 0;
        this.sayDropped();
      } catch (err) {
        // Not in the queue: back in front of what came since, oldest first, under the bound again.
        this.buffer = this.inFlight.concat(this.buffer);
        this.inFlight = [];
        this.bound();
        this.failures++;
        this.renewQueueIfBroken();
        const retryMs = Math.min(5_000, 100 * 2 ** Math.min(this.failures, 6));
        this.logger.warn(
          { err: (err as Error).message, buffered: this.buffer.length, retryMs },
          "usage enqueue failed; will retry",
        );
        this.schedule(retryMs);
        return;
      }
    }
  }
}
