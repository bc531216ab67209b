import { QUOTA_CHANNEL, quotaExceededKeyFor } from "@terse/keys";
import type { Logger } from "@terse/logger";
import type { AccountMonth } from "@terse/metering-proto";
import { eventsOfBatch, REJECTED_EVENT_JOB, type UsageEvent, usageEventSchema } from "@terse/usage-events";
import { DelayedError, type Job, type Queue, UnrecoverableError } from "bullmq";
import type { Redis } from "ioredis";
import { type BatcherOptions, UsageBatcher } from "./batcher.ts";
import type { MeteringGrpcClient } from "./metering-client.ts";
import { isNotNow, OutageBackoff } from "./outage.ts";

export interface ProcessorDeps {
  client: MeteringGrpcClient;
  redis: Redis;
  queue: Queue;
  logger: Logger;
  /** Called for every failed RecordUsage attempt, retried or final. */
  onGrpcError?: () => void;
  /** Called with the size of every RecordUsage call. */
  onCall?: (events: number) => void;
  batching?: BatcherOptions;
  /** Waits between tries of a batch the control plane could not take (outage.ts); default 1 s doubling to 30 s. */
  outage?: OutageBackoff;
}

export interface JobOutcome {
  inserted: number;
  duplicate: number;
  rejected: number;
}

/**
 * Handles one job. A `usage-batch` is validated event by event; the valid ones go to
 * the control plane (in a call shared with the other jobs in hand, see batcher.ts) and
 * the job completes only once that call confirmed them and the quota marks it implied
 * are set. A malformed event (or one the control plane rejects) becomes a job of its
 * own that fails with its reason, so it stays inspectable in the failed set and does
 * not hold back the rest of its batch. A batch the control plane cannot take now waits
 * and is tried again, however long that takes, without spending its attempts.
 */
export function createProcessor(deps: ProcessorDeps): (job: Job, token?: string) => Promise<JobOutcome> {
  const outage = deps.outage ?? new OutageBackoff();
  const batcher = new UsageBatcher(async (events) => {
    deps.onCall?.(events.length);
    const res = await deps.client
      .recordUsage(events, () => deps.onGrpcError?.())
      .catch((err: unknown) => {
        deps.onGrpcError?.();
        if (isNotNow(err) && outage.refused())
          deps.logger.warn({ err: (err as Error).message }, "control plane away: usage batches wait");
        throw err;
      });
    if (outage.tookCall()) deps.logger.info("control plane takes usage again");
    await markQuotas(deps.redis, res.accounts);
    return res.results;
  }, deps.batching);

  /** The events' results; or, when the control plane is away, the job put back to wait. */
  async function record(job: Job, token: string | undefined, events: UsageEvent[]) {
    try {
      return await batcher.submit(events);
    } catch (err) {
      if (!isNotNow(err) || token === undefined) throw err;
      await job.moveToDelayed(Date.now() + outage.waitMs, token);
      throw new DelayedError();
    }
  }

  return async function process(job: Job, token?: string): Promise<JobOutcome> {
    if (job.name === REJECTED_EVENT_JOB) {
      throw new UnrecoverableError(String((job.data as { reason?: string }).reason ?? "rejected"));
    }
    const raw = eventsOfBatch(job.data);
    if (!raw) throw new UnrecoverableError("job holds no batch of events");
    const valid: UsageEvent[] = [];
    const rejected: { event: unknown; reason: string }[] = [];
    for (const event of raw) {
      const parsed = usageEventSchema.safeParse(event);
      if (parsed.success) valid.push(parsed.data);
      else rejected.push({ event, reason: describe(parsed.error.issues[0]) });
    }
    let inserted = 0;
    let duplicate = 0;
    if (valid.length > 0) {
      // One result per event sent, in the same order.
      (await record(job, token, valid)).forEach((r, i) => {
        if (r.outcome === "INSERTED") inserted++;
        else if (r.outcome === "DUPLICATE") duplicate++;
        else rejected.push({ event: valid[i], reason: r.reason || "rejected by the control plane" });
      });
    }
    if (rejected.length > 0) {
      await deps.queue.addBulk(
        rejected.map((r, i) => ({
          name: REJECTED_EVENT_JOB,
          data: r,
          // A fixed id per (job, event): a replay of this job after a crash adds no second copy.
          opts: { jobId: `${job.id}-rejected-${i}`, attempts: 1, removeOnFail: false },
        })),
      );
      deps.logger.warn({ job: job.id, rejected: rejected.map((r) => r.reason) }, "usage events rejected");
    }
    return { inserted, duplicate, rejected: rejected.length };
  };
}

function describe(issue: { path: PropertyKey[]; message: string } | undefined): string {
  return issue ? `${issue.path.map(String).join(".") || "event"}: ${issue.message}` : "invalid event";
}

/** A month's set is of no use once the month is over. */
const QUOTA_SET_TTL_SECONDS = 40 * 24 * 3600;

/** Adds accounts over their limit to the month's set, announcing only real changes. */
async function markQuotas(redis: Redis, accounts: AccountMonth[]): Promise<void> {
  for (const a of accounts) {
    if (!a.exceeded) continue;
    const key = quotaExceededKeyFor(a.month);
    if ((await redis.sadd(key, a.account_id)) > 0) {
      await redis.expire(key, QUOTA_SET_TTL_SECONDS);
      await redis.publish(QUOTA_CHANNEL, a.account_id);
    }
  }
}
