import type { FakeProvider } from "@terse/fake-provider";
import { type RedisServer, waitFor } from "@terse/testkit";
import { expect } from "chai";
import { type CreatedKey, callProxy, type Rig, report, type System, startRig } from "../../src/index.ts";

// The data plane stopped as orchestrators and shells stop it, while it holds what it
// owes the metering: streams in flight, and usage events Redis has not taken yet. Every
// call the upstream served is metered once, or the process says in its log what it could
// not deliver; it never dies of a second signal nor waits for ever on a Redis that does
// not answer.

const GRACE_MS = 10_000;
/** What the data plane gives its usage events after the grace: a fifth of it, at least a second. */
const DRAIN_MS = Math.max(1_000, GRACE_MS / 5);

describe("fault: the data plane stopped while it holds streams and usage", function () {
  this.timeout(180_000);
  let rig: Rig;
  let system: System;
  let redis: RedisServer;
  let fake: FakeProvider;
  let key: CreatedKey;

  before(async () => {
    rig = await startRig("faults_dp_shutdown", {
      env: { DATA_PLANE_WORKERS: "2", SHUTDOWN_GRACE_MS: String(GRACE_MS), LOG_LEVEL: "info" },
    });
    ({ system, redis, fake } = rig);
    key = await system.createKey(await system.createAccount("dp-shutdown@example.com"), "metered");
  });
  after(() => rig?.close());
  let redisDown = false;
  afterEach(async () => {
    fake.reset();
    redis.thaw();
    if (redisDown) await redis.start();
    redisDown = false;
    const { child } = system.process("dataPlane");
    if (child.exitCode !== null || child.signalCode !== null) await system.start("dataPlane");
  });

  /** Streams held at the upstream until `release()`, each resolving to the status its caller saw. */
  async function heldStreams(n: number) {
    let release = () => {};
    fake.set({ holdUntil: new Promise<void>((r) => (release = r)) });
    const before = fake.stats.requests;
    const calls = Array.from({ length: n }, () => callProxy(system.dataPlaneUrl, key.raw_key, { stream: true }));
    await waitFor(() => fake.stats.requests - before >= n, { what: `${n} streams at the upstream` });
    return { calls: Promise.all(calls), release };
  }

  async function recordedAtLeast(n: number) {
    return waitFor(
      async () => {
        const r = await system.recorded([key.id]);
        return r.events >= n ? r : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, what: `${n} usage events recorded` },
    );
  }

  it("one SIGTERM to the process group (each worker gets it twice): the streams finish, each metered once", async () => {
    const before = (await system.recorded([key.id])).events;
    const streams = await heldStreams(20);
    const dataPlane = system.process("dataPlane");
    // What systemd's default kill mode, `kill -- -PGID` and pkill do: every process of the
    // group at once; the primary passes it on to its workers, which so get it twice.
    process.kill(-(dataPlane.child.pid as number), "SIGTERM");
    await dataPlane.waitForOutput(/SIGTERM: draining[\s\S]*SIGTERM: draining/, 20_000);
    streams.release();
    expect(await streams.calls).to.deep.equal(Array(20).fill(200));
    expect(await dataPlane.exited).to.equal(0);
    const recorded = await recordedAtLeast(before + 20);
    expect(recorded.events).to.equal(before + 20);
    report({ streams: 20, metered: recorded.events - before });
  });

  it("SIGTERM while Redis is away: the usage waits, and goes once Redis is back within the shutdown's time", async () => {
    const before = (await system.recorded([key.id])).events;
    const streams = await heldStreams(10);
    await redis.stop("SIGKILL");
    redisDown = true;
    streams.release();
    // Admitted before Redis went: the streams finish, their events wait in the data plane.
    expect(await streams.calls).to.deep.equal(Array(10).fill(200));
    const dataPlane = system.process("dataPlane");
    const exited = dataPlane.stop("SIGTERM");
    await dataPlane.waitForOutput(/SIGTERM: draining[\s\S]*SIGTERM: draining/);
    // Away for longer than the drain alone: back within the grace the streams did not use.
    await new Promise((r) => setTimeout(r, DRAIN_MS * 2));
    await redis.start();
    redisDown = false;
    expect(await exited).to.equal(0);
    expect(dataPlane.output()).not.to.include("not delivered at shutdown");
    const recorded = await recordedAtLeast(before + 10);
    expect(recorded.events).to.equal(before + 10);
  });

  it("SIGTERM while Redis takes commands and never answers: the process ends in its time, saying what it kept", async () => {
    const streams = await heldStreams(5);
    // Frozen before the streams end: their usage events are sent into a Redis that never answers.
    redis.freeze();
    streams.release();
    expect(await streams.calls).to.deep.equal(Array(5).fill(200));
    const dataPlane = system.process("dataPlane");
    const signalled = performance.now();
    void dataPlane.stop("SIGTERM");
    // Its own bound is the grace and the drain; the margin is the machine's, under load.
    const limit = GRACE_MS + DRAIN_MS + 15_000;
    const ended = await Promise.race([
      dataPlane.exited,
      new Promise((r) => setTimeout(() => r("still running"), limit)),
    ]);
    redis.thaw();
    expect(ended).to.equal(0);
    expect(dataPlane.output()).to.include("usage events not delivered at shutdown");
    report({ exited_after_ms: Math.round(performance.now() - signalled), bound_ms: GRACE_MS + DRAIN_MS });
  });
});
