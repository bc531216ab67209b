import type { FakeProvider } from "@terse/fake-provider";
import { CACHE_GENERATION_KEY } from "@terse/keys";
import { type RedisServer, waitFor } from "@terse/testkit";
import { expect } from "chai";
import { Redis } from "ioredis";
import {
  type CreatedKey,
  callProxy,
  type Load,
  type Rig,
  report,
  type Sample,
  type System,
  startLoad,
  startRig,
  statusCounts,
} from "../../src/index.ts";

// Redis, the proxy's only dependency per request, goes away under load: stopped and
// restarted, then flushed. A valid key may get 503 meanwhile, never 401; a revoked key
// never gets through; the usage of every call that reached the upstream is recorded.

describe("fault: Redis restarted and flushed under load", function () {
  this.timeout(180_000);
  let rig: Rig;
  let redis: RedisServer;
  let fake: FakeProvider;
  let system: System;
  let live: CreatedKey;
  let revoked: CreatedKey;

  before(async () => {
    // A batch the worker held or was taking as Redis went away is taken up again once its
    // lock lapses and the next check finds it: within two stall intervals, 2 s here, not 30.
    // (One CI run waited 60 s for the usage of a restart's calls and did not see all of it.)
    rig = await startRig("faults_redis", { env: { WORKER_STALLED_INTERVAL_MS: "2000" } });
    ({ system, redis, fake } = rig);
    const account = await system.createAccount("redis-faults@example.com");
    live = await system.createKey(account, "live");
    revoked = await system.createKey(account, "revoked");
    expect((await system.revokeKey(account, revoked.id)).status).to.equal(200);
  });

  after(() => rig?.close());

  /** Load on the live key (6 callers) and the revoked one (2) until stopped. */
  function bothKeys(): { live: Load; revoked: Load; stop(): Promise<void> } {
    const loads = {
      live: startLoad(() => callProxy(system.dataPlaneUrl, live.raw_key), { concurrency: 6 }),
      revoked: startLoad(() => callProxy(system.dataPlaneUrl, revoked.raw_key), { concurrency: 2 }),
    };
    return { ...loads, stop: async () => void (await Promise.all([loads.live.stop(), loads.revoked.stop()])) };
  }

  const after_ = (samples: Sample[], t: number, status: number) =>
    samples.some((s) => s.start > t && s.status === status);
  const moreThan = (load: Load, n: number) => waitFor(() => load.samples.length > n, { timeoutMs: 30_000 });

  /**
   * Every rate-limit bucket in Redis: none negative, every window expiring, at most a
   * minute after the last second a proxy's rate credits are held in (RATE_CREDIT_SECONDS, 20).
   */
  async function expectSaneRateLimitWindows(): Promise<void> {
    const client = new Redis(redis.url);
    try {
      for (const window of await client.keys("svc:rl:*")) {
        const buckets = Object.values(await client.hgetall(window)).map(Number);
        expect(
          buckets.every((n) => n >= 0),
          `${window}: ${buckets}`,
        ).to.equal(true);
        expect(await client.ttl(window)).to.be.within(1, 61 + 20);
      }
    } finally {
      client.disconnect();
    }
  }

  it("restart: 503 while Redis is gone (never 401 for the valid key), normal again after, no usage event lost", async () => {
    const upstreamBefore = fake.stats.requests;
    const recordedBefore = (await system.recorded([live.id])).events;
    const load = bothKeys();
    await moreThan(load.live, 200);
    // A restart as an orchestrator does it: SIGTERM, and Redis writes its append-only file
    // out before it goes (a crash may lose the last second of writes: docs/reliability.md).
    await redis.stop("SIGTERM");
    const stoppedAt = performance.now();
    await waitFor(() => after_(load.live.samples, stoppedAt, 503), { what: "a 503 while Redis is down" });
    await redis.start();
    const restartedAt = performance.now();
    await waitFor(() => after_(load.live.samples, restartedAt, 200), {
      timeoutMs: 30_000,
      what: "a 200 after restart",
    });
    await moreThan(load.live, load.live.samples.length + 200);
    await load.stop();

    const liveStatuses = statusCounts(load.live.samples);
    const revokedStatuses = statusCounts(load.revoked.samples);
    expect(Object.keys(liveStatuses).map(Number).sort()).to.deep.equal([200, 503]);
    expect(
      Object.keys(revokedStatuses)
        .map(Number)
        .every((s) => s === 401 || s === 503),
    ).to.equal(true);
    // Every call that reached the upstream is metered once: the events waited in the
    // proxy's buffer, and the queue survived the restart in the append-only file.
    const reachedUpstream = fake.stats.requests - upstreamBefore;
    expect(reachedUpstream).to.equal(liveStatuses[200]);
    await waitFor(async () => (await system.recorded([live.id])).events - recordedBefore >= reachedUpstream, {
      timeoutMs: 60_000,
      intervalMs: 250,
      what: `${reachedUpstream} usage events`,
    }).catch(async (err: Error) => {
      // Where the rest are: still queued (and in which state), or gone.
      const recorded = (await system.recorded([live.id])).events - recordedBefore;
      const queued = JSON.stringify(await system.usageQueueCounts());
      throw new Error(`${err.message}: ${recorded} recorded; the usage queue: ${queued}`);
    });
    expect((await system.recorded([live.id])).events - recordedBefore).to.equal(reachedUpstream);
    await expectSaneRateLimitWindows();
    report({ live: liveStatuses, revoked: revokedStatuses, metered: reachedUpstream, lost: 0 });
  });

  it("FLUSHALL: 503 (not 401) until the control plane has resynced within seconds; revoked keys stay revoked", async () => {
    const upstreamBefore = fake.stats.requests;
    const recordedBefore = (await system.recorded([live.id])).events;
    const load = bothKeys();
    await moreThan(load.live, 200);
    const client = new Redis(redis.url);
    await client.flushall();
    client.disconnect();
    const flushedAt = performance.now();
    await waitFor(() => after_(load.live.samples, flushedAt, 503), { what: "a 503 after the flush" });
    // The control plane checks the stamp every 5 s: back within a few checks, by itself.
    // (A 200 alone does not say so: the proxy answers the live key from its own copy until
    // its lease's next renewal finds the stamp gone, and a record is back before the stamp.)
    const watcher = new Redis(redis.url);
    await waitFor(async () => (await watcher.exists(CACHE_GENERATION_KEY)) === 1 || undefined, {
      timeoutMs: 30_000,
      what: "the control plane's resync to stamp the cache",
    });
    watcher.disconnect();
    const resyncedAt = performance.now();
    await waitFor(() => after_(load.live.samples, resyncedAt, 200), { timeoutMs: 30_000, what: "a 200 after resync" });
    const recoveredAt = load.live.samples.find((s) => s.start > resyncedAt && s.status === 200)?.start ?? 0;
    await moreThan(load.live, load.live.samples.length + 200);
    await load.stop();

    expect(Object.keys(statusCounts(load.live.samples)).map(Number).sort()).to.deep.equal([200, 503]);
    const revokedStatuses = Object.keys(statusCounts(load.revoked.samples)).map(Number);
    expect(
      revokedStatuses.every((s) => s === 401 || s === 503),
      String(revokedStatuses),
    ).to.equal(true);
    // After recovery the revoked key is refused with 401 again, not 503.
    expect(await callProxy(system.dataPlaneUrl, revoked.raw_key)).to.equal(401);
    await expectSaneRateLimitWindows();
    // FLUSHALL also empties the usage queue: events waiting there at that instant are
    // gone (an operator's FLUSHALL destroys data; reported, not hidden). Never counted twice.
    const reachedUpstream = fake.stats.requests - upstreamBefore;
    await waitFor(() => system.usageQueueIdle(), { timeoutMs: 30_000, what: "the usage queue drained" });
    const metered = (await system.recorded([live.id])).events - recordedBefore;
    expect(metered).to.be.at.most(reachedUpstream);
    report({
      live: statusCounts(load.live.samples),
      revoked: statusCounts(load.revoked.samples),
      recovered_ms: Math.round(recoveredAt - flushedAt),
      reached_upstream: reachedUpstream,
      metered,
    });
  });
});
