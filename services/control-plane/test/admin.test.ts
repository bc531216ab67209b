import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { CACHE_GENERATION_KEY, cacheKeyFor, hashKey } from "@terse/keys";
import { REPO_ROOT, testRedisUrl, waitFor } from "@terse/testkit";
import {
  encodeUsageBatch,
  REJECTED_EVENT_JOB,
  USAGE_BATCH_JOB,
  USAGE_QUEUE,
  type UsageEvent,
} from "@terse/usage-events";
import { Queue, UnrecoverableError, Worker } from "bullmq";
import { expect } from "chai";
import { Redis } from "ioredis";
import { DEMO_EMAIL, seedDemoAccount } from "../src/cli/seed.ts";
import { verifyPassword } from "../src/domain/passwords.ts";
import { api, createKey, type Harness, startHarness, tokensFor } from "./harness.ts";

// `pnpm admin ...` as an operator runs it: a real process, its stdout and exit code.

const run = promisify(execFile);
const TSX = `${REPO_ROOT}/node_modules/.bin/tsx`;

describe("pnpm admin", function () {
  this.timeout(60_000);
  let h: Harness;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    h = await startHarness("admin");
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: h.db.url,
      REDIS_URL: testRedisUrl("controlPlane"),
    };
  });
  after(() => h.stop());

  async function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(TSX, ["services/control-plane/src/cli/admin.ts", ...args], {
        cwd: REPO_ROOT,
        env,
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  const password = "an admin password 123";

  it("accounts:create prints the account as JSON, never the password or its hash", async () => {
    const res = await admin("accounts:create", "--email", "Ops@Example.com", "--password", password, "--plan", "free");
    expect(res.code).to.equal(0);
    const account = JSON.parse(res.stdout) as Record<string, unknown>;
    expect(Object.keys(account).sort()).to.deep.equal(["created_at", "email", "id", "plan"]);
    expect(account).to.include({ email: "ops@example.com", plan: "free" });
    expect(res.stdout).not.to.include(password);
    expect(res.stdout).not.to.include("argon2");
    const row = await h.db.query<{ password_hash: string }>("SELECT password_hash FROM accounts WHERE id = $1", [
      account.id,
    ]);
    expect(row.rows[0]?.password_hash).to.match(/^\$argon2id\$/);
    expect(await verifyPassword(row.rows[0]?.password_hash ?? null, password)).to.equal(true);
  });

  it("accounts:create refuses an existing email, a bad plan and a missing option (exit 2, one line)", async () => {
    const dup = await admin("accounts:create", "--email", "ops@example.com", "--password", password, "--plan", "pro");
    expect(dup.code).to.equal(2);
    expect(dup.stderr).to.include("already exists");
    const badPlan = await admin(
      "accounts:create",
      "--email",
      "x@example.com",
      "--password",
      password,
      "--plan",
      "gold",
    );
    expect(badPlan.code).to.equal(2);
    expect(badPlan.stderr).to.include("--plan must be one of free, pro, team, enterprise");
    const missing = await admin("accounts:create", "--email", "y@example.com", "--plan", "pro");
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.include("--password is required");
  });

  it("accounts:create refuses an email or password login would refuse, creating nothing", async () => {
    const before = await h.db.query("SELECT id FROM accounts ORDER BY id");
    for (const [email, pass, says] of [
      ["   ", password, "--email must be an address"],
      ["ev\til@example.com", password, "--email must be an address"],
      ["a\u0001b@example.com", password, "--email must be an address"],
      ["no-at-sign.example.com", password, "--email must be an address"],
      [`${"x".repeat(250)}@example.com`, password, "--email must be an address"],
      ["z@example.com", "short", "--password must be 8 to 1024 characters"],
      ["z@example.com", "p".repeat(1_025), "--password must be 8 to 1024 characters"],
    ] as const) {
      const res = await admin("accounts:create", "--email", email, "--password", pass, "--plan", "pro");
      expect(res.code, JSON.stringify(email)).to.equal(2);
      expect(res.stderr).to.include(says);
    }
    expect((await h.db.query("SELECT id FROM accounts ORDER BY id")).rows).to.deep.equal(before.rows);
  });

  it("accounts:set-plan changes the plan and rewrites the account's cached keys", async () => {
    const row = await h.db.query<{ id: string }>("SELECT id FROM accounts WHERE email = 'ops@example.com'");
    const id = String(row.rows[0]?.id);
    const key = await createKey(h, { id, email: "ops@example.com", token: tokensFor(h).issue(id).access_token });
    expect(await h.redis.hget(cacheKeyFor(hashKey(key.raw_key)), "plan")).to.equal("free");
    const res = await admin("accounts:set-plan", "--email", "ops@example.com", "--plan", "team");
    expect(res.code).to.equal(0);
    expect(JSON.parse(res.stdout)).to.include({ email: "ops@example.com", plan: "team" });
    expect(await h.redis.hget(cacheKeyFor(hashKey(key.raw_key)), "plan")).to.equal("team");
    const unknown = await admin("accounts:set-plan", "--email", "nobody@example.com", "--plan", "team");
    expect(unknown.code).to.equal(2);
  });

  it("cache:resync rebuilds the cache and prints what it did", async () => {
    await h.redis.flushdb();
    const res = await admin("cache:resync");
    expect(res.code).to.equal(0);
    const result = JSON.parse(res.stdout) as { written: number; removed: number; generation: string };
    expect(result.written).to.equal(1);
    expect(await h.redis.get(CACHE_GENERATION_KEY)).to.equal(result.generation);
  });

  it("usage:failed tells failed batches from rejected events; usage:retry puts back the batches alone", async () => {
    const connection = new Redis(testRedisUrl("controlPlane"), { maxRetriesPerRequest: null });
    const queue = new Queue(USAGE_QUEUE, { connection });
    await queue.obliterate({ force: true });
    const event = (n: number): UsageEvent => ({
      event_id: `req_admin_${n}`,
      key_id: "key_admin",
      account_id: "acct_admin",
      provider: "openai",
      model: "gpt-4o-mini",
      status: 200,
      streamed: false,
      input_tokens: 10,
      output_tokens: 1,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      input_tokens_before_compression: 12,
      estimated: false,
      intensity: null,
      compression_reason: null,
      latency_ms: 5,
      started_at: new Date().toISOString(),
      recall_rounds: 0,
    });
    await queue.add(USAGE_BATCH_JOB, encodeUsageBatch([event(1), event(2)]), { attempts: 1 });
    await queue.add(REJECTED_EVENT_JOB, { event: { event_id: "req_admin_3" }, reason: "model: control character" });
    // Both fail as the worker fails them: the batch out of its attempts, the event set aside.
    const worker = new Worker(
      USAGE_QUEUE,
      async (job) => {
        throw new UnrecoverableError(job.name === USAGE_BATCH_JOB ? "a batch out of attempts" : job.data.reason);
      },
      { connection },
    );
    await waitFor(async () => (await queue.getFailedCount()) === 2, { what: "both jobs failed" });
    await worker.close();

    const failed = await admin("usage:failed");
    expect(failed.code).to.equal(0);
    expect(JSON.parse(failed.stdout)).to.deep.equal({
      batches: { jobs: 1, events: 2, reasons: { "a batch out of attempts": 1 } },
      rejected_events: { "model: control character": 1 },
    });
    const retried = await admin("usage:retry");
    expect(retried.code).to.equal(0);
    expect(JSON.parse(retried.stdout)).to.deep.equal({ retried_jobs: 1 });
    expect(await queue.getJobCounts("waiting", "failed")).to.deep.equal({ waiting: 1, failed: 1 });
    const [back] = await queue.getWaiting();
    expect(back?.name).to.equal(USAGE_BATCH_JOB);
    expect(back?.attemptsMade).to.equal(0);
    expect(JSON.parse((await admin("usage:retry")).stdout)).to.deep.equal({ retried_jobs: 0 });
    await queue.obliterate({ force: true });
    await queue.close();
    connection.disconnect();
  });

  it("seedDemoAccount creates the demo account once and keeps its printed password true", async () => {
    const seedEnv = { DATABASE_URL: h.db.url, DEMO_PASSWORD: "demo-password-1" };
    const first = await seedDemoAccount(seedEnv);
    expect(first).to.deep.equal({ email: DEMO_EMAIL, password: "demo-password-1", created: true });
    const again = await seedDemoAccount(seedEnv);
    expect(again.created).to.equal(false);
    const changed = await seedDemoAccount({ ...seedEnv, DEMO_PASSWORD: "demo-password-2" });
    expect(changed.password).to.equal("demo-password-2");
    const rows = await h.db.query("SELECT id FROM accounts WHERE email = $1", [DEMO_EMAIL]);
    expect(rows.rows).to.have.length(1);
    const login = await api(h, "POST", "/v1/auth/login", { body: { email: DEMO_EMAIL, password: "demo-password-2" } });
    expect(login.status).to.equal(200);
  });
});
