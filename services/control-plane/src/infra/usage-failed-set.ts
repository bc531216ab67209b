import { eventsOfBatch, REJECTED_EVENT_JOB, USAGE_BATCH_JOB, USAGE_QUEUE } from "@terse/usage-events";
import { type Job, Queue } from "bullmq";
import type { Redis } from "ioredis";

// The usage queue's failed set, for operators (`pnpm admin usage:failed | usage:retry`).
// It holds two kinds of job: an event the worker can never record (set aside on its own,
// with its reason: retrying it fails it again) and a batch whose attempts ran out on an
// error that waiting did not mend (a control plane outage no longer spends them): that
// one is recorded once its cause is fixed and it is put back.

const PAGE = 500;

export interface FailedUsage {
  /** Batches out of attempts: what `usage:retry` puts back. */
  batches: { jobs: number; events: number; reasons: Record<string, number> };
  /** Events no retry can record, by reason. */
  rejected_events: Record<string, number>;
}

async function eachFailed(redis: Redis, visit: (job: Job) => Promise<void> | void): Promise<void> {
  const queue = new Queue(USAGE_QUEUE, { connection: redis });
  try {
    // Pages from the end: a job put back leaves the set, and the pages before it do not move.
    const total = await queue.getFailedCount();
    for (let end = total - 1; end >= 0; end -= PAGE) {
      for (const job of await queue.getFailed(Math.max(0, end - PAGE + 1), end)) await visit(job);
    }
  } finally {
    await queue.close();
  }
}

const countInto = (counts: Record<string, number>, key: string) => {
  counts[key] = (counts[key] ?? 0) + 1;
};

/** What the failed set holds. */
export async function failedUsage(redis: Redis): Promise<FailedUsage> {
  const out: FailedUsage = { batches: { jobs: 0, events: 0, reasons: {} }, rejected_events: {} };
  await eachFailed(redis, (job) => {
    const reason = job.failedReason || "unknown";
    if (job.name === REJECTED_EVENT_JOB) countInto(out.rejected_events, reason);
    else if (job.name === USAGE_BATCH_JOB) {
      out.batches.jobs++;
      out.batches.events += eventsOfBatch(job.data)?.length ?? 0;
      countInto(out.batches.reasons, reason);
    }
  });
  return out;
}

/** Puts every failed batch back in the queue with its attempts renewed; leaves the rejected events. */
export async function retryFailedBatches(redis: Redis): Promise<{ retried_jobs: number }> {
  let retried = 0;
  await eachFailed(redis, async (job) => {
    if (job.name !== USAGE_BATCH_JOB) return;
    try {
      await job.retry("failed", { resetAttemptsMade: true });
      retried++;
    } catch (err) {
      // Seen twice (a new failure shifted the pages) or taken by someone else meanwhile.
      if ((await job.getState()) === "failed") throw err;
    }
  });
  return { retried_jobs: retried };
}
