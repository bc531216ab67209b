import { CACHE_GENERATION_KEY, FENCED_PROCESSES_KEY, KEY_LEASES_KEY } from "@terse/keys";
import { freshRedis, testRedisUrl, waitFor } from "@terse/testkit";
import { expect } from "chai";
import { Redis } from "ioredis";
import { type DroppedKeys, KeyChangeAnnouncer, KeyLease } from "../src/index.ts";

// The protocol against a real Redis: a proxy process's copies (a Map here, as the data
// plane keeps them) and the control plane's announcements. Short leases keep it quick.

const TTL = 600;

/** A proxy process: its lease, its copies, and what it was told to drop, in order. */
class Process {
  readonly copies = new Map<string, string>();
  readonly dropped: DroppedKeys[] = [];
  readonly lapses: string[] = [];
  readonly redis = new Redis(testRedisUrl("leases"));
  readonly subscriber = new Redis(testRedisUrl("leases"));
  readonly lease: KeyLease;
  /** The subscriber connection's id in Redis (CLIENT ID), to kill it. */
  subscriberId = 0;

  constructor(ttlMs = TTL) {
    this.lease = new KeyLease(this.redis, this.subscriber, {
      ttlMs,
      onDrop: (keys) => {
        this.dropped.push(keys);
        if (keys === "all") this.copies.clear();
        else for (const k of keys) this.copies.delete(k);
      },
      onEvent: (e) => {
        if (e.kind === "lapse") this.lapses.push(e.reason);
      },
    });
  }

  async close(): Promise<void> {
    await this.lease.stop();
    this.redis.disconnect();
    this.subscriber.disconnect();
  }
}

describe("key leases: a proxy's copies of key records, kept consistent with the control plane's changes", function () {
  this.timeout(20_000);
  let redis: Redis;
  let announcer: KeyChangeAnnouncer;
  const processes: Process[] = [];
  const started = async (ttlMs = TTL) => {
    const p = new Process(ttlMs);
    processes.push(p);
    p.subscriberId = Number(await p.subscriber.call("CLIENT", "ID"));
    await p.lease.start();
    return p;
  };

  before(async () => {
    redis = await freshRedis("leases");
  });
  beforeEach(async () => {
    await redis.flushdb();
    await redis.set(CACHE_GENERATION_KEY, "g1");
    announcer = new KeyChangeAnnouncer(redis, { leaseTtlMs: TTL, ackTimeoutMs: 200 });
  });
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((p) => p.close()));
  });
  after(async () => {
    await redis.flushdb();
    redis.disconnect();
  });

  it("returns at once when no process holds a lease", async () => {
    const t0 = performance.now();
    await announcer.announce(["h1"]);
    expect(performance.now() - t0).to.be.below(100);
  });

  it("returns only once every live process has dropped its copy of the changed key", async () => {
    const [a, b] = await Promise.all([started(), started()]);
    for (const p of [a, b]) {
      expect(p.lease.valid()).to.equal(true);
      p.copies.set("h1", "record").set("h2", "record");
    }
    const epochs = [a.lease.epoch, b.lease.epoch];
    await announcer.announce(["h1"]);
    for (const p of [a, b]) {
      expect([...p.copies.keys()]).to.deep.equal(["h2"]);
      expect(p.lease.valid(), "the lease holds on").to.equal(true);
    }
    expect([a.lease.epoch, b.lease.epoch]).to.deep.equal(epochs.map((e) => e + 1));
  });

  it("a resync's change drops every copy", async () => {
    const a = await started();
    a.copies.set("h1", "r").set("h2", "r");
    await announcer.announce("all");
    expect(a.copies.size).to.equal(0);
    expect(a.dropped.at(-1)).to.equal("all");
  });

  it("waits out a process that holds a lease but does not answer: fenced, then its lease runs out", async () => {
    // A lease as a stuck process left it: live in Redis, nobody reading the channel.
    const [seconds, micros] = await redis.time();
    await redis.zadd(KEY_LEASES_KEY, Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) + TTL, "stuck");
    const fenced: string[][] = [];
    announcer = new KeyChangeAnnouncer(redis, {
      leaseTtlMs: TTL,
      ackTimeoutMs: 100,
      onFenced: (ids) => fenced.push(ids),
    });
    const t0 = performance.now();
    await announcer.announce(["h1"]);
    const took = performance.now() - t0;
    expect(fenced).to.deep.equal([["stuck"]]);
    expect(await redis.sismember(FENCED_PROCESSES_KEY, "stuck")).to.equal(1);
    // Not before the lease ran out.
    expect(took).to.be.at.least(TTL - 50);
    expect(await redis.zscore(KEY_LEASES_KEY, "stuck")).to.equal(null);
  });

  it("a fenced process drops every copy at its next renewal and takes a new lease", async () => {
    const a = await started();
    a.copies.set("h1", "r");
    const [id] = await redis.zrange(KEY_LEASES_KEY, 0, -1);
    await redis.sadd(FENCED_PROCESSES_KEY, id as string);
    await waitFor(() => a.lapses.length > 0, { what: "the lapse" });
    expect(a.lapses[0]).to.match(/^fenced/);
    expect(a.copies.size).to.equal(0);
    await waitFor(() => a.lease.valid(), { what: "a new lease" });
    const ids = await redis.zrange(KEY_LEASES_KEY, 0, -1);
    expect(ids).to.have.length(1);
    expect(ids[0]).not.to.equal(id);
  });

  it("drops every copy the moment its subscription closes, and holds a lease again once it is back", async () => {
    const a = await started();
    a.copies.set("h1", "r");
    await redis.call("CLIENT", "KILL", "ID", String(a.subscriberId));
    await waitFor(() => a.lapses.includes("the subscription closed"), { what: "the lapse" });
    expect(a.lease.valid()).to.equal(false);
    expect(a.copies.size).to.equal(0);
    await waitFor(() => a.lease.valid(), { what: "the lease back after the reconnect" });
    // And changes reach it again.
    a.copies.set("h9", "r");
    await announcer.announce(["h9"]);
    expect(a.copies.has("h9")).to.equal(false);
  });

  it("drops every copy when the cache's generation stamp is gone; an announcement then waits a whole lease", async () => {
    const a = await started();
    a.copies.set("h1", "r");
    await redis.del(CACHE_GENERATION_KEY);
    await waitFor(() => a.lapses.some((r) => /generation stamp/.test(r)), { what: "the lapse" });
    expect(a.lease.valid()).to.equal(false);
    const t0 = performance.now();
    await announcer.announce(["h1"]);
    expect(performance.now() - t0).to.be.at.least(TTL - 20);
  });

  it("a process paused past its lease keeps nothing from before the pause", async () => {
    const a = await started();
    a.copies.set("h1", "r");
    const until = performance.now() + TTL;
    while (performance.now() < until) {
      // the event loop blocked: no renewal can run
    }
    expect(a.lease.valid()).to.equal(false);
    await a.lease.renew();
    expect(a.lapses).to.include("the lease ran out");
    expect(a.copies.size).to.equal(0);
    expect(a.lease.valid()).to.equal(true);
    // The old lease is gone with the renewal that replaced it: nobody waits for it.
    expect(await redis.zcard(KEY_LEASES_KEY)).to.equal(1);
  });

  it("a stopped process gives its lease back: nothing waits for it", async () => {
    const a = await started();
    await a.lease.stop();
    expect(await redis.zcard(KEY_LEASES_KEY)).to.equal(0);
    const t0 = performance.now();
    await announcer.announce(["h1"]);
    expect(performance.now() - t0).to.be.below(100);
  });
});
