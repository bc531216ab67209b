import { randomUUID } from "node:crypto";
import type { FakeProvider } from "@terse/fake-provider";
import { type RedisServer, waitFor } from "@terse/testkit";
import { USAGE_BATCH_JOB, USAGE_QUEUE, type UsageEvent } from "@terse/usage-events";
import { Queue } from "bullmq";
import { expect } from "chai";
import pg from "pg";
import {
  type CreatedKey,
  callProxy,
  counterTotal,
  PROVIDER_KEY,
  type Rig,
  report,
  type System,
  startRig,
} from "../../src/index.ts";

// One event that Postgres cannot store (a NUL in its model) once failed the whole
// RecordUsage call: the worker retried the job ten times and gave up, and every event of
// the job was lost, other accounts' included. Now each layer stops it: the proxy refuses
// the name (nothing forwarded, nothing metered), the event schema refuses it, and an
// event that still gets into the queue (an older data plane) is set aside on its own,
// visibly and counted, while the rest of its batch is recorded exactly once.

const TOKENS_PER_CALL = 11 + 7;
const CALLS_PER_ACCOUNT = 40;

describe("fault: a poison usage event among two accounts' traffic", function () {
  this.timeout(180_000);
  let rig: Rig;
  let redis: RedisServer;
  let fake: FakeProvider;
  let system: System;
  let queue: Queue;
  let db: pg.Pool;
  const keys: { a?: CreatedKey; b?: CreatedKey } = {};

  before(async () => {
    rig = await startRig("faults_poison");
    ({ system, redis, fake } = rig);
    keys.a = await system.createKey(await system.createAccount("poison-a@example.com"), "a");
    keys.b = await system.createKey(await system.createAccount("poison-b@example.com"), "b");
    queue = new Queue(USAGE_QUEUE, { connection: { url: redis.url } });
    db = new pg.Pool({ connectionString: system.env.DATABASE_URL, max: 1 });
  });

  after(async () => {
    await db?.end();
    await queue?.close();
    await rig?.close();
  });

  async function accountOf(key: CreatedKey): Promise<string> {
    const r = await db.query<{ account_id: string }>("SELECT account_id FROM service_keys WHERE id = $1", [key.id]);
    return r.rows[0]?.account_id as string;
  }

  /** A well-formed event of `key`'s account, as the data plane writes it. */
  function eventOf(key: CreatedKey, accountId: string, overrides: Partial<UsageEvent> = {}): UsageEvent {
    return {
      event_id: `req_${randomUUID().replaceAll("-", "")}`,
      key_id: key.id,
      account_id: accountId,
      provider: "openai",
      model: "gpt-4o-mini",
      status: 200,
      streamed: false,
      input_tokens: 11,
      output_tokens: 7,
      input_tokens_before_compression: 11,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      recall_rounds: 0,
      estimated: false,
      intensity: "full",
      compression_reason: "key setting",
      latency_ms: 3,
      started_at: new Date().toISOString(),
      ...overrides,
    };
  }

  async function rawCall(rawKey: string, path: string, body: unknown): Promise<number> {
    const res = await fetch(`${system.dataPlaneUrl}${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${rawKey}`,
        "x-provider-key": PROVIDER_KEY,
        "content-type": "application/json",
      },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
    return res.status;
  }

  it("the proxy refuses a model name Postgres cannot store, and forwards nothing", async () => {
    const a = keys.a as CreatedKey;
    const before = fake.stats.requests;
    expect(await rawCall(a.raw_key, "/v1/chat/completions", { model: "gpt\u0000x", messages: [] })).to.equal(400);
    expect(await rawCall(a.raw_key, "/v1beta/models/x%00y:generateContent", { contents: [] })).to.equal(400);
    expect(fake.stats.requests).to.equal(before);
  });

  it("sets aside the poison events and records both accounts' other events exactly once", async () => {
    const a = keys.a as CreatedKey;
    const b = keys.b as CreatedKey;
    const [accountA, accountB] = [await accountOf(a), await accountOf(b)];
    // Real traffic of both accounts through the proxy...
    const calls = [];
    for (let i = 0; i < CALLS_PER_ACCOUNT; i++) calls.push(callProxy(system.dataPlaneUrl, a.raw_key));
    for (let i = 0; i < CALLS_PER_ACCOUNT; i++) calls.push(callProxy(system.dataPlaneUrl, b.raw_key));
    // ...and two jobs as an older data plane wrote them, each with a poison event among
    // good events of both accounts.
    const poisoned = [
      [eventOf(a, accountA), eventOf(b, accountB, { model: "gpt\u0000x" }), eventOf(b, accountB)],
      [eventOf(b, accountB), eventOf(a, accountA, { input_tokens: 3_000_000_000 }), eventOf(a, accountA)],
    ];
    await queue.addBulk(
      poisoned.map((events) => ({
        name: USAGE_BATCH_JOB,
        data: { events },
        opts: { attempts: 10, backoff: { type: "exponential", delay: 500 } },
      })),
    );
    const statuses = await Promise.all(calls);
    expect(statuses.every((s) => s === 200)).to.equal(true);

    const expected = CALLS_PER_ACCOUNT + 2;
    const recorded = async (key: CreatedKey) => (await system.recorded([key.id])).events;
    await waitFor(async () => (await recorded(a)) >= expected && (await recorded(b)) >= expected, {
      timeoutMs: 60_000,
      intervalMs: 250,
      what: `${expected} events for each account`,
    });
    await waitFor(() => system.usageQueueIdle(), { timeoutMs: 30_000, what: "the usage queue drained" });
    const [ra, rb] = [await system.recorded([a.id]), await system.recorded([b.id])];
    expect(ra).to.deep.include({ events: expected, tokens: expected * TOKENS_PER_CALL });
    expect(rb).to.deep.include({ events: expected, tokens: expected * TOKENS_PER_CALL });

    // The two poison events, and only they, are in the failed set, each with its reason.
    const failed = await queue.getJobs(["failed"]);
    expect(failed.map((j) => j.failedReason).sort()).to.deep.equal([
      "input_tokens: Too big: expected number to be <=2147483647",
      "model: must not contain control characters",
    ]);
    const metrics = `${system.workerMetricsUrl}/metrics`;
    // No call failed for them: the control plane answered each event, and nothing was retried.
    expect(await counterTotal(metrics, "terse_metering_grpc_errors_total")).to.equal(0);
    expect(await counterTotal(metrics, "terse_usage_events_total", { outcome: "rejected" })).to.equal(2);
    expect(await counterTotal(metrics, "terse_usage_dead_letter_jobs")).to.equal(2);
    report({ events_per_account: expected, dead_lettered: failed.length });
  });
});
