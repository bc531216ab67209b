// The metering worker: consumes the `usage` queue, records events exactly once through
// the control plane's gRPC service, and marks accounts over their monthly token limit.
import { once } from "node:events";
import { boundHostPort, loadConfigOrExit, meteringWorkerEnv } from "@terse/config";
import { createLogger } from "@terse/logger";
import { USAGE_QUEUE } from "@terse/usage-events";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { MeteringGrpcClient } from "./metering-client.ts";
import { createWorkerMetrics, startProbeServer } from "./metrics.ts";
import { createProcessor } from "./processor.ts";

const config = loadConfigOrExit(meteringWorkerEnv);
const logger = createLogger({ service: "metering-worker", level: config.LOG_LEVEL });
const metrics = createWorkerMetrics(config.NODE_ENV !== "test");

// BullMQ's blocking connections must retry forever (STYLE.md habit 10).
const connection = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 3 });
for (const c of [connection, redis])
  c.on("error", (err) => logger.warn({ err: err.message }, "redis connection error"));
const queue = new Queue(USAGE_QUEUE, { connection });
const client = new MeteringGrpcClient(config);
let stopping = false;

/** How many workers may die holding a job before it is failed (see maxStalledCount below). */
const MAX_STALLS = 20;

const worker = new Worker(
  USAGE_QUEUE,
  createProcessor({
    client,
    redis,
    queue,
    logger,
    onGrpcError: () => metrics.grpcErrors.inc(),
    onCall: (events) => metrics.callEvents.observe(events),
  }),
  {
    connection,
    concurrency: config.WORKER_CONCURRENCY,
    autorun: false,
    // A job of a killed worker goes back to the queue within two of these (its lock runs
    // out, then the next check finds it); replaying it is safe (exactly once).
    lockDuration: config.WORKER_STALLED_INTERVAL_MS,
    stalledInterval: config.WORKER_STALLED_INTERVAL_MS,
    // BullMQ fails a job the second time its worker dies holding it. A worker that crash-
    // loops through a control plane outage (jobs held, calls hanging) would put usage in
    // the failed set that way; only a job that kills every worker that takes it should go.
    maxStalledCount: MAX_STALLS,
  },
);
worker.on("completed", (job, result: { inserted: number; duplicate: number; rejected: number }) => {
  metrics.events.inc({ outcome: "inserted" }, result.inserted);
  metrics.events.inc({ outcome: "duplicate" }, result.duplicate);
  metrics.events.inc({ outcome: "rejected" }, result.rejected);
  logger.debug({ job: job.id, ...result }, "usage batch recorded");
});
worker.on("failed", (job, err) => {
  logger.warn({ job: job?.id, name: job?.name, attempts: job?.attemptsMade, reason: err.message }, "usage job failed");
});
worker.on("error", (err) => logger.error({ err: err.message }, "worker error"));

async function refreshQueueMetrics(): Promise<void> {
  const counts = await queue.getJobCounts("active", "waiting", "delayed", "failed");
  metrics.queueDepth.set((counts.active ?? 0) + (counts.waiting ?? 0) + (counts.delayed ?? 0));
  metrics.deadLetters.set(counts.failed ?? 0);
  // The first job in work, the first waiting and the delayed one due first (a batch
  // waiting out a control plane outage, or a retry): while the control plane is away, no
  // job waits in the queue proper, and its lag would read 0.
  const firsts = await queue.getJobs(["active", "waiting", "delayed"], 0, 0, true);
  const oldest = Math.min(...firsts.map((j) => j.timestamp));
  metrics.queueLag.set(firsts.length > 0 ? (Date.now() - oldest) / 1000 : 0);
}

const probes = startProbeServer(
  metrics,
  { port: config.METRICS_PORT, host: config.BIND_HOST },
  async () => !stopping && worker.isRunning() && (await redis.ping()) === "PONG",
  refreshQueueMetrics,
);

async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, "stopping: finishing the jobs in hand");
  const force = setTimeout(() => process.exit(1), config.SHUTDOWN_GRACE_MS).unref();
  await worker.close();
  await queue.close();
  client.close();
  probes.close();
  redis.disconnect();
  connection.disconnect();
  clearTimeout(force);
  process.exit(0);
}
// Every signal, not only the first: a second one must not kill the process mid-shutdown.
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));

void worker.run();
await worker.waitUntilReady();
logger.info({ queue: USAGE_QUEUE, concurrency: config.WORKER_CONCURRENCY }, "consuming");
if (!probes.listening) await once(probes, "listening");
process.stdout.write(`metering-worker ready (metrics on http://${boundHostPort(probes.address())})\n`);
