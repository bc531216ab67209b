import { randomUUID } from "node:crypto";
import { createServer, type Socket } from "node:net";
import { controlPlaneEnv, loadConfig } from "@terse/config";
import { createDb, type Db } from "@terse/db";
import { QUOTA_CHANNEL, quotaExceededKeyFor, quotaMonth } from "@terse/keys";
import { createLogger } from "@terse/logger";
import {
  createTestDatabase,
  freePort,
  freshRedis,
  type RunningProcess,
  startTs,
  type TestDatabase,
  testRedisUrl,
  waitFor,
} from "@terse/testkit";
import { encodeUsageBatch, USAGE_BATCH_JOB, USAGE_QUEUE, type UsageEvent } from "@terse/usage-events";
import { type JobsOptions, Queue, QueueEvents } from "bullmq";
import { expect } from "chai";
import { Redis } from "ioredis";
import { startGrpcServer } from "../../control-plane/src/grpc/server.ts";

// The worker as a real process against the control plane's real gRPC service, real
// BullMQ, Redis and Postgres: exactly-once totals through kills and replays, a control
// plane that is down for a while, malformed events, and the quota mark.

const TOKEN = "worker-test-internal-token-0123456789";
const MONTHLY_TOKENS = 5_000;

describe("metering worker", function () {
  this.timeout(90_000);
  let tdb: TestDatabase;
  let db: Db;
  let redis: Redis;
  let queue: Queue;
  let grpcPort: number;
  let grpc: { stop(): Promise<void> } | undefined;
  let worker: RunningProcess | undefined;
  const accountId = "acct_worker_test";
  const keyId = "key_worker_test";

  const config = () =>
    loadConfig(controlPlaneEnv, {
      DATABASE_URL: tdb.url,
      REDIS_URL: testRedisUrl("metering"),
      JWT_SECRET: "x".repeat(40),
      INTERNAL_GRPC_TOKEN: TOKEN,
      GRPC_PORT: String(grpcPort),
      TERSE_PLANS: JSON.stringify({ free: { monthly_tokens: MONTHLY_TOKENS } }),
    });
  const logger = createLogger({ service: "control-plane", level: "silent" });
  const startControlPlane = async () => {
    grpc = await startGrpcServer({ config: config(), db, redis, logger });
  };
  let metricsPort = 0;
  const startWorker = async () => {
    metricsPort = await freePort();
    worker = startTs("services/metering-worker/src/main.ts", {
      REDIS_URL: testRedisUrl("metering"),
      CONTROL_PLANE_GRPC_URL: `127.0.0.1:${grpcPort}`,
      INTERNAL_GRPC_TOKEN: TOKEN,
      METRICS_PORT: String(metricsPort),
      WORKER_STALLED_INTERVAL_MS: "1000",
      NODE_ENV: "test",
      LOG_LEVEL: "warn",
    });
    await worker.waitForOutput(/metering-worker ready/);
  };

  before(async () => {
    tdb = await createTestDatabase("worker");
    db = createDb(tdb.url);
    redis = await freshRedis("metering");
    queue = new Queue(USAGE_QUEUE, { connection: new Redis(testRedisUrl("metering"), { maxRetriesPerRequest: null }) });
    grpcPort = await freePort();
    await db.account.create({ data: { id: accountId, email: "w@example.com", plan: "free" } });
    await db.serviceKey.create({
      data: {
        id: keyId,
        accountId,
        name: "w",
        keyHash: "a".repeat(64),
        keyPrefix: "svc_live_aaaaaaaa",
        rateLimitRpm: 60,
      },
    });
  });

  afterEach(async () => {
    await worker?.stop("SIGKILL");
    worker = undefined;
    await grpc?.stop();
    grpc = undefined;
    await queue.obliterate({ force: true });
    await db.$executeRawUnsafe("TRUNCATE usage_events, account_monthly_usage, key_monthly_usage");
    await redis.flushdb();
  });

  after(async () => {
    await queue.close();
    await db.$disconnect();
    redis.disconnect();
    await tdb.drop();
  });

  function event(tokens: number, overrides: Partial<UsageEvent> = {}): UsageEvent {
    return {
      event_id: `req_${randomUUID()}`,
      key_id: keyId,
      account_id: accountId,
      provider: "openai",
      model: "gpt-4o-mini",
      status: 200,
      streamed: false,
      input_tokens: tokens,
      output_tokens: 0,
      input_tokens_before_compression: tokens + 2,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      recall_rounds: 0,
      estimated: false,
      intensity: "full",
      compression_reason: "key setting",
      latency_ms: 12,
      started_at: new Date().toISOString(),
      ...overrides,
    };
  }

  // As the data plane writes them (columns), or as one before the columns did (objects).
  const enqueue = (
    batches: unknown[][],
    form: "columns" | "objects" = "columns",
    opts: JobsOptions = { attempts: 20, backoff: { type: "fixed", delay: 300 } },
  ) =>
    queue.addBulk(
      batches.map((events) => ({
        name: USAGE_BATCH_JOB,
        data: form === "columns" ? encodeUsageBatch(events as UsageEvent[]) : { events },
        opts,
      })),
    );

  /** How often each job of the usage queue has had `event` (BullMQ's QueueEvents), as it happens. */
  async function countJobEvents(event: "active" | "delayed") {
    const connection = new Redis(testRedisUrl("metering"), { maxRetriesPerRequest: null });
    const events = new QueueEvents(USAGE_QUEUE, { connection });
    await events.waitUntilReady();
    const counts = new Map<string, number>();
    events.on(event, ({ jobId }: { jobId: string }) => counts.set(jobId, (counts.get(jobId) ?? 0) + 1));
    const close = async () => {
      await events.close();
      connection.disconnect();
    };
    return { counts, close };
  }

  /** The control plane back: every event held meanwhile is recorded, once, and no job failed. */
  async function expectAllRecordedOnceBack(want: { rows: number; tokens: number }, timeoutMs: number) {
    await startControlPlane();
    const t = await waitFor(async () => ((await totals()).rows === want.rows ? totals() : undefined), {
      timeoutMs,
      what: `${want.rows} records`,
    });
    expect(t.tokens).to.equal(want.tokens);
    expect(await queue.getJobCounts("failed")).to.deep.equal({ failed: 0 });
  }

  async function totals() {
    const r = await db.accountMonthlyUsage.findFirst({ where: { accountId } });
    const n = await db.usageEvent.count();
    return { tokens: Number(r?.tokens ?? 0n), requests: Number(r?.requests ?? 0n), rows: n };
  }

  it("records every event once through a kill -9 in the middle and a replay of the whole queue", async () => {
    await startControlPlane();
    const batches = Array.from({ length: 200 }, () => Array.from({ length: 10 }, () => event(1)));
    await enqueue(batches);
    await startWorker();
    await waitFor(async () => (await totals()).rows > 0, { what: "the first records" });
    await worker?.stop("SIGKILL");
    const midway = (await totals()).rows;
    expect(midway).to.be.lessThan(2000);
    await enqueue(batches); // the replay: every batch again
    await startWorker();
    const done = await waitFor(
      async () => {
        const t = await totals();
        const counts = await queue.getJobCounts("waiting", "active", "delayed");
        return t.rows === 2000 && (counts.waiting ?? 0) + (counts.active ?? 0) + (counts.delayed ?? 0) === 0
          ? t
          : undefined;
      },
      { timeoutMs: 60_000, what: "all 2000 events recorded" },
    );
    expect(done).to.deep.equal({ tokens: 2000, requests: 2000, rows: 2000 });
    const keyTotals = await db.keyMonthlyUsage.findFirst({ where: { keyId } });
    expect(Number(keyTotals?.tokens)).to.equal(2000);
    const k = await db.serviceKey.findUniqueOrThrow({ where: { id: keyId } });
    expect(k.lastUsedAt).to.be.instanceOf(Date);
  });

  it("records the jobs an earlier data plane wrote as objects beside the columns of the current one", async () => {
    await startControlPlane();
    await startWorker();
    const { cache_read_tokens: _r, ...olderEvent } = event(5, { intensity: null, compression_reason: null });
    await enqueue([[event(3), olderEvent]], "objects");
    await enqueue([[event(4), event(6, { intensity: null, compression_reason: null })]]);
    const t = await waitFor(async () => ((await totals()).rows === 4 ? totals() : undefined), {
      what: "4 records",
    });
    expect(t.tokens).to.equal(18);
    const unset = await db.usageEvent.count({ where: { intensity: null, compressionReason: null } });
    expect(unset).to.equal(2);
    expect(await queue.getJobCounts("failed")).to.deep.equal({ failed: 0 });
  });

  it("waits while the control plane is down, however many tries that takes, then records everything once", async () => {
    await startWorker();
    // One attempt each: a try that finds the control plane away must not spend it (with
    // the data plane's 10 attempts, an outage of ten minutes failed every batch of it).
    const { counts: waits, close } = await countJobEvents("delayed");
    await enqueue([[event(3), event(4)], [event(5)]], "columns", { attempts: 1 });
    // Nothing listens on the gRPC port: a call is refused (five times: the client's own
    // retries), its jobs wait, are tried again, refused again and wait again.
    await waitFor(() => waits.size === 2 && [...waits.values()].every((n) => n >= 2), {
      timeoutMs: 45_000,
      what: "both jobs refused and waiting twice",
    });
    await close();
    const probe = (path: string) => fetch(`http://127.0.0.1:${metricsPort}${path}`);
    const gauge = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)`, "m").exec(text)?.[1]);
    const metrics = await (await probe("/metrics")).text();
    expect(gauge(metrics, "terse_metering_grpc_errors_total")).to.be.at.least(10);
    expect(gauge(metrics, "terse_usage_queue_lag_seconds")).to.be.greaterThan(0);
    expect(gauge(metrics, "terse_usage_queue_depth")).to.be.at.most(2);
    const unrecorded = async () => {
      const c = await queue.getJobCounts("waiting", "delayed", "active", "failed");
      return (c.waiting ?? 0) + (c.delayed ?? 0) + (c.active ?? 0) === 2 && c.failed === 0;
    };
    await waitFor(unrecorded, { what: "both jobs still to record, none failed" });
    for (const job of await queue.getJobs(["delayed", "waiting", "active"])) expect(job.attemptsMade).to.equal(0);
    expect((await totals()).rows).to.equal(0);
    expect((await probe("/healthz")).status).to.equal(200);
    expect((await probe("/readyz")).status).to.equal(200);
    await expectAllRecordedOnceBack({ rows: 3, tokens: 12 }, 30_000);
  });

  it("records jobs whose workers died holding them three times while the control plane hung, failing none", async function () {
    this.timeout(180_000); // four worker starts, each a process
    // A control plane that takes the connection and never answers: each call hangs to its
    // deadline, and the jobs stay in work while their worker dies (crash-looping, OOM).
    const held = new Set<Socket>();
    const hung = createServer((socket) => {
      held.add(socket);
      socket.on("error", () => undefined);
    });
    await new Promise<void>((r) => hung.listen(grpcPort, "127.0.0.1", () => r()));
    const { counts: taken, close } = await countJobEvents("active");
    try {
      await enqueue([[event(3), event(4)], [event(5)]], "columns", { attempts: 1 });
      for (let kill = 1; kill <= 3; kill++) {
        await startWorker();
        // Taken by this worker: BullMQ's default failed a job the second time it stalled.
        // A dead worker's jobs come back once their lock lapses and the next check runs (1 s each here).
        await waitFor(() => taken.size === 2 && [...taken.values()].every((n) => n >= kill), {
          timeoutMs: 30_000,
          what: `both jobs in work, time ${kill}`,
        });
        await worker?.stop("SIGKILL");
      }
      await startWorker();
      await waitFor(() => [...taken.values()].every((n) => n >= 4), {
        timeoutMs: 30_000,
        what: "both jobs taken a fourth time",
      });
      expect(await queue.getJobCounts("failed")).to.deep.equal({ failed: 0 });
    } finally {
      await close();
      for (const socket of held) socket.destroy();
      await new Promise((r) => hung.close(r));
    }
    await expectAllRecordedOnceBack({ rows: 3, tokens: 12 }, 45_000);
  });

  it("carries the prompt-cache counts through gRPC into Postgres; an older producer's event without them records 0", async () => {
    await startControlPlane();
    await startWorker();
    const cached = event(500, { cache_read_tokens: 400, cache_write_tokens: 60 });
    const { cache_read_tokens: _r, cache_write_tokens: _w, ...older } = event(7);
    await enqueue([[cached, older]]);
    const rows = await waitFor(
      async () => {
        const r = await db.usageEvent.findMany({
          select: { eventId: true, cacheReadTokens: true, cacheWriteTokens: true },
        });
        return r.length === 2 ? r : undefined;
      },
      { what: "both events recorded" },
    );
    const byId = new Map(rows.map((r) => [r.eventId, r]));
    expect(byId.get(cached.event_id)).to.include({ cacheReadTokens: 400, cacheWriteTokens: 60 });
    expect(byId.get(older.event_id)).to.include({ cacheReadTokens: 0, cacheWriteTokens: 0 });
  });

  it("carries recall_rounds through gRPC into Postgres; an older producer's event without it records 0", async () => {
    await startControlPlane();
    await startWorker();
    const recalled = event(900, { recall_rounds: 2 });
    const { recall_rounds: _n, ...older } = event(7);
    await enqueue([[recalled, older]]);
    const rows = await waitFor(
      async () => {
        const r = await db.usageEvent.findMany({ select: { eventId: true, recallRounds: true } });
        return r.length === 2 ? r : undefined;
      },
      { what: "both events recorded" },
    );
    const byId = new Map(rows.map((r) => [r.eventId, r.recallRounds]));
    expect(byId.get(recalled.event_id)).to.equal(2);
    expect(byId.get(older.event_id)).to.equal(0);
  });

  it("carries the cache split before compression into Postgres; an older producer's event gets its cache share grown", async () => {
    await startControlPlane();
    await startWorker();
    const split = event(500, {
      cache_read_tokens: 100,
      cache_write_tokens: 50,
      cache_read_tokens_before_compression: 480,
      cache_write_tokens_before_compression: 20,
    });
    const older = event(500, {
      cache_read_tokens: 400,
      cache_write_tokens: 50,
      input_tokens_before_compression: 1_000,
    });
    await enqueue([[split, older]]);
    const rows = await waitFor(
      async () => {
        const r = await db.usageEvent.findMany({
          select: { eventId: true, cacheReadTokensBeforeCompression: true, cacheWriteTokensBeforeCompression: true },
        });
        return r.length === 2 ? r : undefined;
      },
      { what: "both events recorded" },
    );
    const byId = new Map(rows.map((r) => [r.eventId, r]));
    expect(byId.get(split.event_id)).to.include({
      cacheReadTokensBeforeCompression: 480,
      cacheWriteTokensBeforeCompression: 20,
    });
    expect(byId.get(older.event_id)).to.include({
      cacheReadTokensBeforeCompression: 800,
      cacheWriteTokensBeforeCompression: 100,
    });
  });

  it("fails malformed events into the failed set with a reason, and records the rest of their batch", async () => {
    await startControlPlane();
    await startWorker();
    const good = event(7);
    await enqueue([
      [
        good,
        { ...event(1), input_tokens: -5 },
        { event_id: "evt_missing_fields" },
        event(2, { key_id: "key_unknown" }),
      ],
    ]);
    const failed = await waitFor(
      async () => {
        const jobs = await queue.getJobs(["failed"]);
        return jobs.length === 3 ? jobs : undefined;
      },
      { what: "3 rejected events in the failed set" },
    );
    const reasons = failed.map((j) => j.failedReason).sort();
    expect(reasons.some((r) => /input_tokens/.test(r))).to.equal(true);
    expect(reasons.some((r) => /key_id|provider|required|expected/.test(r))).to.equal(true);
    expect(reasons).to.include("unknown key_id");
    const t = await waitFor(async () => ((await totals()).rows === 1 ? totals() : undefined), {
      what: "the good event",
    });
    expect(t.tokens).to.equal(7);
  });

  it("marks the account over quota for the month and announces it once the limit is reached", async () => {
    await startControlPlane();
    const sub = new Redis(testRedisUrl("metering"));
    const announced = new Promise<string>((resolve) => sub.on("message", (_c, m: string) => resolve(m)));
    await sub.subscribe(QUOTA_CHANNEL);
    await startWorker();
    await enqueue([[event(MONTHLY_TOKENS - 1)]]);
    await waitFor(async () => (await totals()).rows === 1, { what: "first event" });
    expect(await redis.sismember(quotaExceededKeyFor(quotaMonth()), accountId)).to.equal(0);
    await enqueue([[event(1)]]);
    expect(await announced).to.equal(accountId);
    expect(await redis.sismember(quotaExceededKeyFor(quotaMonth()), accountId)).to.equal(1);
    sub.disconnect();
  });
});
