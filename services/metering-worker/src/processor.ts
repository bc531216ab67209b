import type { Logger } from "@terse/logger";
import type { AccountMonth } from "@terse/metering-proto";
import { QUOTA_CHANNEL, quotaExceededKeyFor } from "@terse/keys";
import { type UsageEvent, usageEventSchema } from "@terse/usage-events";
import { type Job, type Queue, UnrecoverableError } from "bullmq";
import type { Redis } from "ioredis";
import type { MeteringGrpcClient } from "./metering-client.ts";

/** Job name of an event that can never be recorded: it fails at once, with its reason, into the failed set. */
export const REJECTED_EVENT_JOB = "usage-rejected";

export interface ProcessorDeps {
  client: MeteringGrpcClient;
  redis: Redis;
  queue: Queue;
  logger: Logger;
  onGrpcRetry?: () => void;
}

/**
 * Handles one job. A `usage-batch` is validated event by event; the valid ones go to
 * the control plane in one RecordUsage call and the job completes only once that call
 * confirmed them. A malformed event (or one the control plane rejects) becomes a job of
 * its own that fails with its reason, so it stays inspectable in the failed set and does
 * not hold back the rest of its batch.
 */
export function createProcessor(deps: ProcessorDeps) {
  return async function process(job: Job): Promise<{ inserted: number; duplicate: number; rejected: number }> {
    if (job.name === REJECTED_EVENT_JOB) {
      throw new UnrecoverableError(String((job.data as { reason?: string }).reason ?? "rejected"));
    }
    const raw = Array.isArray((job.data as { events?: unknown }).events)
      ? (job.data as { events: unknown[] }).events
      : [];
    if (raw.length === 0) throw new UnrecoverableError("job has no events array");
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
      const res = await deps.client.recordUsage(valid, () => deps.onGrpcRetry?.());
      for (const r of res.results) {
        if (r.outcome === "INSERTED") inserted++;
        else if (r.outcome === "DUPLICATE") duplicate++;
        else rejected.push({ event: valid.find((e) => e.event_id === r.event_id), reason: r.reason });
      }
      await markQuotas(deps.redis, res.accounts);
    }
    if (rejected.length > 0) {
      await deps.queue.addBulk(
        rejected.map((r) => ({ name: REJECTED_EVENT_JOB, data: r, opts: { attempts: 1, removeOnFail: false } })),
      );
      deps.logger.warn({ job: job.id, rejected: rejected.map((r) => r.reason) }, "usage events rejected");
    }
    return { inserted, duplicate, rejected: rejected.length };
  };
}

function describe(issue: { path: PropertyKey[]; message: string } | undefined): string {
  return issue ? `${issue.path.map(String).join(".") || "event"}: ${issue.message}` : "invalid event";
}

const QUOTA_SET_TTL_SECONDS = 40 * 24 * 3600;

/** Adds accounts over their limit to the month's set, announcing only real changes. */
async function markQuotas(redis: Redis, accounts: AccountMonth[]): Promise<void> {
  for (const a of accounts) {
    if (!a.exceeded) continue;
    const key = quotaExceededKeyFor(a.month);
    if ((await redis.sadd(key, a.account_id)) > 0) {
      // A month's set is of no use once the month is over.
      await redis.expire(key, QUOTA_SET_TTL_SECONDS);
      await redis.publish(QUOTA_CHANNEL, a.account_id);
    }
  }
}
