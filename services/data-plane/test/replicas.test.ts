import { once } from "node:events";
import { connect } from "node:net";
import { type FakeProvider, startFakeProvider } from "@terse/fake-provider";
import { KeyChangeAnnouncer } from "@terse/key-leases";
import {
  CACHE_GENERATION_KEY,
  cacheKeyFor,
  encodeCachedKey,
  generateRawKey,
  hashKey,
  rateLimitKeyFor,
} from "@terse/keys";
import {
  freePort,
  freshRedis,
  type RedisServer,
  type RunningProcess,
  startRedisServer,
  startTs,
  testRedisUrl,
  waitFor,
} from "@terse/testkit";
import { eventsOfBatch, USAGE_QUEUE, type UsageEvent } from "@terse/usage-events";
import { Queue } from "bullmq";
import { expect } from "chai";
import { Redis } from "ioredis";
import { keyRecord, PROVIDER_KEY } from "./harness.ts";

// Proxy processes as they run in production (main.ts), sharing one Redis.

const record = (rpm: number) =>
  encodeCachedKey(
    keyRecord({
      key_id: "key_replicas",
      account_id: "acct_replicas",
      rate_limit_rpm: rpm,
      smart_detect_enabled: false,
    }),
  );

async function startProxy(redisUrl: string, upstream: string): Promise<{ proc: RunningProcess; url: string }> {
  const port = await freePort();
  const proc = startTs("services/data-plane/src/main.ts", {
    REDIS_URL: redisUrl,
    DATA_PLANE_PORT: String(port),
    OPENAI_BASE_URL: upstream,
    NODE_ENV: "test",
    LOG_LEVEL: "warn",
  });
  await proc.waitForOutput(/data-plane listening on/);
  return { proc, url: `http://127.0.0.1:${port}` };
}

function call(url: string, rawKey: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${rawKey}`, "x-provider-key": PROVIDER_KEY, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
  });
}

/**
 * Redis's MONITOR, read off a plain socket (ioredis's monitor mode lost track of its
 * replies under load): counts the script calls whose arguments name `needle`, as Redis
 * ran them. `stop` sends a marker through `redis` and counts until the marker is seen:
 * Redis shows commands in the order it ran them, so every call before it is in the count.
 */
async function monitorScriptCalls(url: string, needle: string) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port || 6379), hostname);
  await once(socket, "connect");
  socket.setEncoding("utf8");
  socket.write("MONITOR\r\n");
  const marker = `counted-${needle}`;
  let calls = 0;
  let rest = "";
  const markerSeen = new Promise<void>((resolve, reject) => {
    socket.on("error", reject);
    socket.on("data", (chunk: string) => {
      const lines = (rest + chunk).split("\r\n");
      rest = lines.pop() ?? "";
      for (const line of lines) {
        // +1795933380.046284 [3 127.0.0.1:54522] "evalsha" "<sha>" "2" "svc:key:{<hash>}" ...
        const [, source, command = ""] = /^\+[\d.]+ \[\d+ ([^\]]+)\] "([^"]*)"/.exec(line) ?? [];
        if (source !== "lua" && /^eval(sha)?$/i.test(command) && line.includes(needle)) calls++;
        if (command.toLowerCase() === "echo" && line.includes(marker)) resolve();
      }
    });
  });
  return {
    async stop(redis: Redis): Promise<number> {
      await redis.echo(marker);
      await markerSeen;
      socket.destroy();
      return calls;
    },
  };
}

describe("data plane: several proxy processes on one Redis", function () {
  this.timeout(60_000);
  let redis: Redis;
  let announcer: KeyChangeAnnouncer;
  let fake: FakeProvider;
  const proxies: { proc: RunningProcess; url: string }[] = [];

  before(async () => {
    redis = await freshRedis("dataPlane");
    await redis.set(CACHE_GENERATION_KEY, "1");
    announcer = new KeyChangeAnnouncer(redis, { leaseTtlMs: 3_000 });
    fake = await startFakeProvider();
    proxies.push(
      ...(await Promise.all([
        startProxy(testRedisUrl("dataPlane"), fake.url),
        startProxy(testRedisUrl("dataPlane"), fake.url),
      ])),
    );
  });
  after(async () => {
    await Promise.all(proxies.map((p) => p.proc.stop()));
    await fake.close();
    await redis.flushdb();
    redis.disconnect();
  });

  it("enforces one key's rate_limit_rpm across both processes", async () => {
    const rawKey = generateRawKey();
    await redis.hset(cacheKeyFor(hashKey(rawKey)), record(10));
    const statuses = await Promise.all(
      Array.from({ length: 30 }, (_, i) => call(proxies[i % 2]?.url ?? "", rawKey).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 200)).to.have.length(10);
    expect(statuses.filter((s) => s === 429)).to.have.length(20);
  });

  it("lets no request that starts after the revocation through, on either process, while others are in flight", async () => {
    const rawKey = generateRawKey();
    await redis.hset(cacheKeyFor(hashKey(rawKey)), record(1_000_000));
    fake.set({ chunkDelayMs: 0 });
    let revokedAt = 0;
    const results: { started: number; status: number }[] = [];
    const load = Array.from({ length: 8 }, async (_, worker) => {
      for (let i = 0; i < 15; i++) {
        const started = Date.now();
        const status = (await call(proxies[worker % 2]?.url ?? "", rawKey)).status;
        results.push({ started, status });
        if (worker === 0 && i === 5) {
          // What the control plane's DELETE does before it returns: both processes, which
          // answer this key from their own copies by now, drop them before announce returns.
          await redis.del(cacheKeyFor(hashKey(rawKey)));
          await announcer.announce([hashKey(rawKey)]);
          revokedAt = Date.now();
        }
      }
    });
    await Promise.all(load);
    const after = results.filter((r) => r.started > revokedAt);
    expect(after.length).to.be.greaterThan(20);
    expect(after.every((r) => r.status === 401)).to.equal(true);
    expect(results.some((r) => r.status === 200)).to.equal(true);
  });

  it("applies a key's change on both processes by the time the change returns", async () => {
    const rawKey = generateRawKey();
    await redis.hset(cacheKeyFor(hashKey(rawKey)), record(1_000_000));
    for (const p of proxies) for (let i = 0; i < 3; i++) expect((await call(p.url, rawKey)).status).to.equal(200);
    // A new limit below what the window already counted: the next call anywhere is over it.
    await redis.hset(cacheKeyFor(hashKey(rawKey)), record(1));
    await announcer.announce([hashKey(rawKey)]);
    for (const p of proxies) {
      const res = await call(p.url, rawKey);
      expect(res.status).to.equal(429);
      expect(res.headers.get("x-ratelimit-limit")).to.equal("1");
    }
  });

  it("admits a known key from the process's own copy and credits, and gives unused credits back", async () => {
    const rawKey = generateRawKey();
    const keyHash = hashKey(rawKey);
    await redis.hset(cacheKeyFor(keyHash), record(1_000_000));
    // The script calls that name this key, as Redis received them: the usage batches
    // (BullMQ's scripts too, one per 50 ms) and the other keys' settles are not counted.
    const monitor = await monitorScriptCalls(testRedisUrl("dataPlane"), keyHash);
    // Four callers at once, as a busy key is called: one after the other on a loaded
    // machine, nearly every call had a settle of its own (31 script calls for 60 in one
    // CI run under a CPU hog), which says nothing of what credits save a busy key.
    const callers = 4;
    const calls = 60;
    await Promise.all(
      Array.from({ length: callers }, async () => {
        for (let i = 0; i < calls / callers; i++)
          expect((await call(proxies[0]?.url ?? "", rawKey)).status).to.equal(200);
      }),
    );
    const scriptCalls = await monitor.stop(redis);
    // Without credits every call is one script call; with them, a settle now and then (the
    // first call of a key not yet known to the process always asks Redis).
    expect(scriptCalls).to.be.within(1, calls / 2 - 1);
    // Idle, the process gives back what it did not use: the window ends counting the calls alone.
    await waitFor(async () => Number(await redis.hget(rateLimitKeyFor(keyHash), "n")) === calls, {
      timeoutMs: 10_000,
      what: "the window to count exactly the calls made",
    });
  });
});

describe("data plane: Redis unreachable", function () {
  this.timeout(60_000);
  let server: RedisServer;
  let port: number;
  let fake: FakeProvider;
  let proxy: { proc: RunningProcess; url: string };

  before(async () => {
    server = await startRedisServer();
    port = server.port;
    fake = await startFakeProvider();
    proxy = await startProxy(server.url, fake.url);
  });
  after(async () => {
    await proxy.proc.stop();
    await server.destroy();
    await fake.close();
  });

  it("answers 503 auth cache unavailable, never 401, while Redis is down; buffered events arrive once it is back", async () => {
    const rawKey = generateRawKey();
    const seed = new Redis(port);
    await seed.set(CACHE_GENERATION_KEY, "1");
    await seed.hset(cacheKeyFor(hashKey(rawKey)), record(1000));
    seed.disconnect();
    // Kill Redis while the upstream is still answering: the request completes, its event cannot be enqueued.
    fake.set({ hang: true });
    const inFlight = call(proxy.url, rawKey);
    await waitFor(() => fake.received.length === 1, { what: "request upstream" });
    await server.stop("SIGKILL");
    fake.set({ hang: false });
    const res = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${rawKey}`,
        "x-provider-key": PROVIDER_KEY,
        "content-type": "application/json",
      },
      body: "{}",
    });
    expect(res.status).to.equal(503);
    expect(((await res.json()) as { error: { message: string } }).error.message).to.equal("auth cache unavailable");
    fake.received.length = 0;
    // The hanging request ends (idle timeout is long, so end it from the fake's side).
    fake.server.closeAllConnections();
    expect([502, 504, 200]).to.include((await inFlight).status);
    await server.start();
    const queue = new Queue(USAGE_QUEUE, { connection: { port } });
    const events = await waitFor(
      async () => {
        const jobs = await queue.getJobs(["waiting", "active", "completed", "delayed"]);
        const all = jobs.flatMap((j) => (eventsOfBatch(j.data) ?? []) as UsageEvent[]);
        return all.length > 0 ? all : undefined;
      },
      { timeoutMs: 20_000, what: "the buffered event in the restarted Redis" },
    );
    expect(events).to.have.length(1);
    expect(events[0]?.key_id).to.equal("key_replicas");
    await queue.close();
  });
});
