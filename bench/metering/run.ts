// Metering benchmark (issue 4): `npx tsx bench/metering/run.ts`.
//  1. Throughput: 50,000 usage events waiting in the queue (jobs of 100 as a busy data plane
//     sends them, or BENCH_JOB_EVENTS each), one worker process, the control plane's gRPC service; events/s from
//     queue to Postgres.
//  2. Lag: a producer adds 5,000 events/s for 10 s while the worker consumes; the age of
//     the oldest waiting job, sampled every 250 ms.
//  3. Quota overshoot: the whole system as processes, 100 requests/s through the proxy,
//     each billed 1,000 tokens, against a monthly limit of 100,000; how many requests
//     still succeed after the one that crossed the limit.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { controlPlaneEnv, loadConfig } from "@terse/config";
import { createDb } from "@terse/db";
import { createLogger } from "@terse/logger";
import {
  createTestDatabase,
  freePort,
  freshRedis,
  listen,
  REPO_ROOT,
  startTs,
  testRedisUrl,
  waitFor,
} from "@terse/testkit";
import { encodeUsageBatch, USAGE_BATCH_JOB, USAGE_QUEUE, type UsageEvent } from "@terse/usage-events";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { startGrpcServer } from "../../services/control-plane/src/grpc/server.ts";

const TOKEN = "bench-internal-token-0123456789";
/** Events per job: 100 is what one busy data plane sends (its batch size); BENCH_JOB_EVENTS=5 models many quiet replicas. */
const BATCH = Number(process.env.BENCH_JOB_EVENTS ?? 100);

function event(keyId: string, accountId: string): UsageEvent {
  return {
    event_id: `req_${randomUUID()}`,
    key_id: keyId,
    account_id: accountId,
    provider: "openai",
    model: "gpt-4o-mini",
    status: 200,
    streamed: false,
    input_tokens: 100,
    output_tokens: 20,
    input_tokens_before_compression: 130,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    recall_rounds: 0,
    estimated: false,
    intensity: "full",
    compression_reason: "key setting",
    latency_ms: 10,
    started_at: new Date().toISOString(),
  };
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

async function queueToPostgres(): Promise<Record<string, string>> {
  const tdb = await createTestDatabase("bench_metering");
  const db = createDb(tdb.url);
  const redis = await freshRedis("bench");
  const grpcPort = await freePort();
  const config = loadConfig(controlPlaneEnv, {
    DATABASE_URL: tdb.url,
    REDIS_URL: testRedisUrl("bench"),
    JWT_SECRET: "x".repeat(40),
    INTERNAL_GRPC_TOKEN: TOKEN,
    GRPC_PORT: String(grpcPort),
    TERSE_PLANS: JSON.stringify({ enterprise: { monthly_tokens: 1e15 } }),
  });
  const grpc = await startGrpcServer({
    config,
    db,
    redis,
    logger: createLogger({ service: "bench", level: "silent" }),
  });
  await db.account.create({ data: { id: "acct_bench", plan: "enterprise" } });
  await db.serviceKey.create({
    data: {
      id: "key_bench",
      accountId: "acct_bench",
      name: "b",
      keyHash: "b".repeat(64),
      keyPrefix: "svc_live_bbbbbbbb",
      rateLimitRpm: 1,
    },
  });
  const queue = new Queue(USAGE_QUEUE, {
    connection: new Redis(testRedisUrl("bench"), { maxRetriesPerRequest: null }),
  });
  const addJobs = (jobs: number) =>
    queue.addBulk(
      Array.from({ length: jobs }, () => ({
        name: USAGE_BATCH_JOB,
        data: encodeUsageBatch(Array.from({ length: BATCH }, () => event("key_bench", "acct_bench"))),
        opts: { removeOnComplete: true },
      })),
    );
  const total = 50_000;
  for (let i = 0; i < total / BATCH; i += 100) await addJobs(Math.min(100, total / BATCH - i));
  const worker = startTs("services/metering-worker/src/main.ts", {
    REDIS_URL: testRedisUrl("bench"),
    CONTROL_PLANE_GRPC_URL: `127.0.0.1:${grpcPort}`,
    INTERNAL_GRPC_TOKEN: TOKEN,
    METRICS_PORT: String(await freePort()),
    ...(process.env.WORKER_CONCURRENCY ? { WORKER_CONCURRENCY: process.env.WORKER_CONCURRENCY } : {}),
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
  });
  await worker.waitForOutput(/metering-worker ready/, 60_000);
  const started = Date.now();
  await waitFor(async () => (await db.usageEvent.count()) >= total, {
    timeoutMs: 300_000,
    intervalMs: 100,
    what: "all events",
  });
  const seconds = (Date.now() - started) / 1000;

  // Lag at a steady 5,000 events/s.
  const lags: number[] = [];
  const rateJobsPerTick = Math.max(1, Math.round(500 / BATCH)); // 500 events every 100 ms = 5,000 events/s
  const before = await db.usageEvent.count();
  const producing = Date.now();
  const sampler = setInterval(async () => {
    const [oldest] = await queue.getJobs(["waiting"], 0, 0, true);
    lags.push(oldest ? Date.now() - oldest.timestamp : 0);
  }, 250);
  let offered = 0;
  while (Date.now() - producing < 10_000) {
    const tick = Date.now();
    await addJobs(rateJobsPerTick);
    offered += rateJobsPerTick * BATCH;
    await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - tick))));
  }
  const produced = (await db.usageEvent.count()) - before;
  await waitFor(async () => (await db.usageEvent.count()) - before >= offered, {
    timeoutMs: 120_000,
    intervalMs: 100,
    what: "the steady-load events",
  });
  const drained = (Date.now() - producing) / 1000;
  clearInterval(sampler);

  await worker.stop();
  await queue.obliterate({ force: true });
  await queue.close();
  await grpc.stop();
  await db.$disconnect();
  await redis.flushdb();
  redis.disconnect();
  await tdb.drop();
  return {
    "events queued before the worker started": String(total),
    "drain time": `${seconds.toFixed(1)} s`,
    "throughput, queue -> Postgres": `${Math.round(total / seconds)} events/s`,
    "steady load offered (target 5,000 events/s for 10 s)": `${offered} events (${Math.round(offered / 10)} events/s achieved by the producer)`,
    "recorded during the 10 s": String(produced),
    "all offered events recorded after": `${drained.toFixed(1)} s`,
    "queue lag p50 / p95 / max": `${percentile(lags, 50)} / ${percentile(lags, 95)} / ${Math.max(...lags)} ms`,
  };
}

async function quotaOvershoot(): Promise<Record<string, string>> {
  const tdb = await createTestDatabase("bench_quota");
  const redis = await freshRedis("bench");
  const tokensPerCall = 1_000;
  const limit = 100_000;
  const upstream = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "x",
          object: "chat.completion",
          created: 1,
          model: "m",
          choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
          usage: { prompt_tokens: tokensPerCall, completion_tokens: 0, total_tokens: tokensPerCall },
        }),
      );
    });
  });
  const upstreamUrl = await listen(upstream);
  const [cp, grpcPort, dp, metrics] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const env = {
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    DATABASE_URL: tdb.url,
    REDIS_URL: testRedisUrl("bench"),
    JWT_SECRET: "x".repeat(40),
    INTERNAL_GRPC_TOKEN: TOKEN,
    CONTROL_PLANE_PORT: String(cp),
    GRPC_PORT: String(grpcPort),
    CONTROL_PLANE_GRPC_URL: `127.0.0.1:${grpcPort}`,
    DATA_PLANE_PORT: String(dp),
    METRICS_PORT: String(metrics),
    OPENAI_BASE_URL: upstreamUrl,
    TERSE_PLANS: JSON.stringify({ free: { monthly_tokens: limit, rate_limit_rpm: 100_000 } }),
  };
  const procs = [startTs("services/control-plane/src/main.ts", env)];
  await procs[0]?.waitForOutput(/listening/, 60_000);
  procs.push(startTs("services/data-plane/src/main.ts", env), startTs("services/metering-worker/src/main.ts", env));
  await Promise.all([procs[1]?.waitForOutput(/listening/, 60_000), procs[2]?.waitForOutput(/ready/, 60_000)]);
  const { execFileSync } = await import("node:child_process");
  const account = JSON.parse(
    execFileSync(
      `${REPO_ROOT}/node_modules/.bin/tsx`,
      [
        "services/control-plane/src/cli/admin.ts",
        "accounts:create",
        "--email",
        "bench@example.com",
        "--password",
        "bench-password-1",
        "--plan",
        "free",
      ],
      { cwd: REPO_ROOT, env: { ...process.env, ...env } },
    ).toString(),
  ) as { id: string };
  const login = (await (
    await fetch(`http://127.0.0.1:${cp}/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "bench@example.com", password: "bench-password-1" }),
    })
  ).json()) as { access_token: string };
  const key = (await (
    await fetch(`http://127.0.0.1:${cp}/v1/auth/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${login.access_token}`, "content-type": "application/json" },
      body: "{}",
    })
  ).json()) as { raw_key: string };
  const results: { sent: number; status: number }[] = [];
  const calls: Promise<void>[] = [];
  const start = Date.now();
  for (let i = 0; i < 400; i++) {
    const due = start + i * 10; // 100 requests/s
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
    const sent = Date.now();
    calls.push(
      fetch(`http://127.0.0.1:${dp}/v1/chat/completions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${key.raw_key}`,
          "x-provider-key": "sk-bench",
          "content-type": "application/json",
        },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      }).then(async (r) => {
        await r.arrayBuffer();
        results.push({ sent, status: r.status });
      }),
    );
  }
  await Promise.all(calls);
  results.sort((a, b) => a.sent - b.sent);
  const ok = results.filter((r) => r.status === 200).length;
  const crossing = limit / tokensPerCall; // the call that reaches the limit completes (DESIGN.md 7)
  const firstRefused = results.find((r) => r.status === 429);
  const crossedAt = results[crossing - 1]?.sent ?? start;
  for (const p of procs) await p.stop();
  upstream.close();
  await redis.flushdb();
  redis.disconnect();
  await tdb.drop();
  void account;
  return {
    limit: `${limit.toLocaleString("en")} tokens (${crossing} calls of ${tokensPerCall})`,
    offered: "400 calls at 100 requests/s",
    succeeded: String(ok),
    "overshoot (calls past the crossing one)": String(ok - crossing),
    "time from crossing to the first 429": firstRefused ? `${firstRefused.sent - crossedAt} ms` : "never",
  };
}

const table = (title: string, rows: Record<string, string>) =>
  [
    `### ${title}`,
    "",
    "| measure | value |",
    "|---|---|",
    ...Object.entries(rows).map(([k, v]) => `| ${k} | ${v} |`),
    "",
  ].join("\n");

const throughput = await queueToPostgres();
console.log(table("Queue to Postgres", throughput));
const overshoot = await quotaOvershoot();
console.log(table("Quota overshoot at 100 requests/s", overshoot));
process.exit(0);
