import { connect } from "node:net";
import { CACHE_GENERATION_KEY, cacheKeyFor, hashKey } from "@terse/keys";
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
import { expect } from "chai";
import type { Redis } from "ioredis";
import { TEST_JWT_SECRET } from "./harness.ts";

// src/main.ts as a real process: config check, migrations, start-up resync, the
// generation watchdog, readiness and a graceful SIGTERM.

const MAIN = "services/control-plane/src/main.ts";

describe("control-plane process (main.ts)", function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let redis: Redis;
  let env: Record<string, string>;
  let proc: RunningProcess;
  let base: string;

  before(async () => {
    db = await createTestDatabase("cp_main");
    redis = await freshRedis("controlPlane");
    const port = await freePort();
    env = {
      NODE_ENV: "test",
      DATABASE_URL: db.url,
      REDIS_URL: testRedisUrl("controlPlane"),
      JWT_SECRET: TEST_JWT_SECRET,
      INTERNAL_GRPC_TOKEN: "control-plane-test-grpc-token",
      CONTROL_PLANE_PORT: String(port),
      GRPC_PORT: String(await freePort()),
      SHUTDOWN_GRACE_MS: "10000",
    };
    base = `http://127.0.0.1:${port}`;
    // State from before the start: a key Redis does not know, a record Postgres does not.
    await db.query("INSERT INTO accounts (id, email, plan) VALUES ('acct_main', 'main@example.com', 'pro')");
    await db.query(
      "INSERT INTO service_keys (id, account_id, name, key_hash, key_prefix, rate_limit_rpm) VALUES ('key_main', 'acct_main', 'k', $1, 'svc_live_mainmain', 600)",
      [hashKey("main-key")],
    );
    await redis.hset(cacheKeyFor(hashKey("stale-key")), { key_id: "key_stale" });
    proc = startTs(MAIN, env);
    await proc.waitForOutput(/control-plane listening on http:\/\/127\.0\.0\.1:\d+/, 60_000);
  });
  after(async () => {
    await proc.stop("SIGKILL");
    await redis.flushdb();
    redis.disconnect();
    await db.drop();
  });

  it("prints its address and resynced the key cache before listening", async () => {
    expect(proc.output()).to.include(`control-plane listening on ${base}`);
    expect(await redis.hget(cacheKeyFor(hashKey("main-key")), "key_id")).to.equal("key_main");
    expect(await redis.exists(cacheKeyFor(hashKey("stale-key")))).to.equal(0);
    expect(await redis.get(CACHE_GENERATION_KEY)).to.be.a("string");
  });

  it("answers /healthz and /readyz", async () => {
    expect((await fetch(`${base}/healthz`)).status).to.equal(200);
    expect((await fetch(`${base}/readyz`)).status).to.equal(200);
  });

  it("rebuilds the cache when the generation stamp disappears (Redis flushed)", async () => {
    await redis.flushdb();
    await waitFor(async () => (await redis.get(CACHE_GENERATION_KEY)) !== null, {
      timeoutMs: 15_000,
      what: "a new generation",
    });
    expect(await redis.hget(cacheKeyFor(hashKey("main-key")), "key_id")).to.equal("key_main");
  });

  it("on SIGTERM finishes the request in flight, then exits 0", async () => {
    // A login whose body is still arriving when SIGTERM comes.
    const socket = connect(Number(new URL(base).port), "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    const body = JSON.stringify({ email: "main@example.com", password: "whatever-password" });
    let response = "";
    socket.on("data", (chunk) => {
      response += chunk.toString();
    });
    socket.write(
      `POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    await waitFor(() => proc.output().includes("control plane started"));
    proc.child.kill("SIGTERM");
    await proc.waitForOutput(/shutting down/);
    socket.write(body.slice(10));
    await waitFor(() => response.includes("\r\n\r\n"), { what: "the in-flight response" });
    expect(response).to.match(/^HTTP\/1\.1 401/);
    expect(await proc.exited).to.equal(0);
    expect(proc.output()).to.include('"msg":"stopped"');
    socket.destroy();
  });

  it("refuses a bad config with one line naming the variable", async () => {
    const bad = startTs(MAIN, { ...env, JWT_SECRET: "short" });
    const code = await bad.exited;
    expect(code).to.equal(78);
    expect(bad.output().trim()).to.match(
      /^invalid config: JWT_SECRET: must be at least 32 characters \(got "\[REDACTED\]"\)$/,
    );
  });
});
