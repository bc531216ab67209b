import type { FakeProvider } from "@terse/fake-provider";
import { type RedisServer, waitFor } from "@terse/testkit";
import { USAGE_QUEUE } from "@terse/usage-events";
import { Queue } from "bullmq";
import { expect } from "chai";
import {
  type CreatedKey,
  callProxy,
  type Rig,
  report,
  type System,
  startLoad,
  startRig,
  statusCounts,
} from "../../src/index.ts";

// The metering worker is killed (SIGKILL) while it holds a batch, twice, with traffic
// flowing: the batches it held are handed to the restarted worker once their lock
// lapses, replayed, and the control plane counts each event once.

const TOKENS_PER_CALL = 11 + 7;

describe("fault: metering worker killed mid-batch", function () {
  this.timeout(180_000);
  let rig: Rig;
  let redis: RedisServer;
  let fake: FakeProvider;
  let system: System;
  let key: CreatedKey;
  let queue: Queue;

  before(async () => {
    // A killed worker's job is taken up again after its lock lapses: 2 s here, not 30.
    rig = await startRig("faults_worker", { env: { WORKER_STALLED_INTERVAL_MS: "2000" } });
    ({ system, redis, fake } = rig);
    key = await system.createKey(await system.createAccount("worker-kill@example.com"), "metered");
    queue = new Queue(USAGE_QUEUE, { connection: { url: redis.url } });
  });

  after(async () => {
    await queue?.close();
    await rig?.close();
  });

  /** Kills the worker the moment it holds a batch it has not finished. */
  async function killMidBatch(): Promise<number> {
    await waitFor(async () => (await queue.getActiveCount()) > 0, { timeoutMs: 30_000, what: "a batch in work" });
    const held = await queue.getActiveCount();
    await system.stop("worker", "SIGKILL");
    return held;
  }

  it("records every event exactly once through two kills", async () => {
    const load = startLoad(() => callProxy(system.dataPlaneUrl, key.raw_key), { concurrency: 4 });
    const held: number[] = [];
    for (let kill = 0; kill < 2; kill++) {
      held.push(await killMidBatch());
      await system.start("worker");
    }
    await waitFor(() => load.samples.length > 300, { timeoutMs: 30_000 });
    const samples = await load.stop();

    expect(statusCounts(samples)).to.deep.equal({ 200: samples.length });
    expect(fake.stats.requests).to.equal(samples.length);
    await waitFor(() => system.usageQueueIdle(), { timeoutMs: 60_000, what: "the usage queue drained" });
    const recorded = await waitFor(
      async () => {
        const r = await system.recorded([key.id]);
        return r.events >= samples.length ? r : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, what: `${samples.length} events` },
    );
    expect(recorded).to.deep.include({ events: samples.length, tokens: samples.length * TOKENS_PER_CALL });
    expect(await queue.getFailedCount()).to.equal(0);
    report({
      calls: samples.length,
      batches_in_work_at_each_kill: held,
      events: recorded.events,
      tokens: recorded.tokens,
    });
  });
});
