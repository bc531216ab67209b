import { createLogger } from "@terse/logger";
import { type RedisServer, startRedisServer, waitFor } from "@terse/testkit";
import { eventsOfBatch, USAGE_QUEUE, type UsageEvent } from "@terse/usage-events";
import { Queue } from "bullmq";
import { expect } from "chai";
import { Redis } from "ioredis";
import { Counter, Registry } from "prom-client";
import { UsagePublisher } from "../src/infra/usage-publisher.ts";

// The data plane's side of metering: events go to the usage queue in batches, each once;
// while Redis is away they wait in a bounded buffer, and what the bound pushes out is
// counted, never lost unseen. A Redis of the test's own, stopped and started at will.

/** An event as the publisher sees it: opaque but for its id (the batch's columns carry what is there). */
const event = (n: number) => ({ event_id: `req_${n}` }) as UsageEvent;

describe("usage publisher", () => {
  let server: RedisServer;
  let connection: Redis;
  let queue: Queue;
  let publisher: UsagePublisher | undefined;
  /** What the publisher wrote to its log in the current test. */
  let logged: { msg?: string; dropped?: number }[] = [];
  const logger = createLogger({
    service: "test",
    level: "error",
    destination: { write: (line: string) => void logged.push(JSON.parse(line)) },
  });

  /** Every batch job in the queue (no worker takes them), oldest first, as event ids. */
  async function queued(): Promise<string[][]> {
    const jobs = await queue.getJobs(["waiting"], 0, -1, true);
    return jobs.map((job) => (eventsOfBatch(job.data) as UsageEvent[]).map((e) => e.event_id));
  }

  /** The batch jobs once `n` events are in the queue (Redis restarted: up to 20 s for the publisher's backoff). */
  function queuedOnce(n: number): Promise<string[][]> {
    return waitFor(
      async () => {
        const all = await queued();
        return all.flat().length >= n && all;
      },
      { timeoutMs: 20_000, what: `${n} events in the queue` },
    );
  }

  function start(options: { maxBuffered: number; batchSize?: number; flushMs?: number }) {
    const dropped = new Counter({ name: "dropped", help: "dropped", registers: [new Registry()] });
    publisher = new UsagePublisher(connection, logger, { ...options, dropped });
    return { publisher, dropped };
  }

  beforeEach(async () => {
    logged = [];
    server = await startRedisServer();
    // As the data plane connects (app.ts): no offline queue, so an add fails at once while Redis is away.
    connection = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    connection.on("error", () => undefined);
    await waitFor(() => connection.status === "ready", { what: "the publisher's connection" });
    queue = new Queue(USAGE_QUEUE, { connection: { host: "127.0.0.1", port: server.port } });
    queue.on("error", () => undefined); // the reader loses Redis too when a test stops it
  });

  afterEach(async () => {
    await publisher?.close();
    publisher = undefined;
    await queue.close();
    connection.disconnect();
    await server.destroy();
  });

  it("sends a batch when it is full and the rest once the flush interval passes, each event once and in order", async () => {
    const { publisher } = start({ maxBuffered: 100, batchSize: 3, flushMs: 30 });
    for (let n = 1; n <= 7; n++) publisher.publish(event(n));
    const jobs = await queuedOnce(7);
    expect(jobs).to.deep.equal([["req_1", "req_2", "req_3"], ["req_4", "req_5", "req_6"], ["req_7"]]);
    await waitFor(() => publisher.buffered === 0, { what: "the publisher to see its sends answered" });
  });

  it("holds events while Redis is away, drops the oldest past its bound and counts them, and sends the rest once Redis is back", async () => {
    const { publisher, dropped } = start({ maxBuffered: 6, batchSize: 500, flushMs: 10 });
    await server.stop("SIGTERM");
    await waitFor(() => connection.status !== "ready", { what: "the connection to notice Redis gone" });
    for (let n = 1; n <= 10; n++) publisher.publish(event(n));
    // The bound holds at once, Redis or not: the four oldest are out, and said to be.
    expect(publisher.buffered).to.equal(6);
    expect((await dropped.get()).values[0]?.value).to.equal(4);
    // In the log once for the burst, not once per event dropped.
    expect(logged.filter((l) => l.msg === "usage buffer full: oldest events dropped")).to.have.length(1);

    await server.start();
    const jobs = await queuedOnce(6);
    expect(jobs.flat()).to.deep.equal(["req_5", "req_6", "req_7", "req_8", "req_9", "req_10"]);
    await waitFor(() => publisher.buffered === 0, { what: "the publisher to see its sends answered" });
    expect((await dropped.get()).values[0]?.value).to.equal(4);
    // The rest of the burst is said once a send gets through.
    const said = logged.filter((l) => l.msg === "usage buffer full: oldest events dropped");
    expect(said.map((l) => l.dropped)).to.deep.equal([1, 3]);
  });

  it("never drops the batch being sent: past the bound while it is in flight, only waiting events go, and only as many as the bound says", async () => {
    const { publisher, dropped } = start({ maxBuffered: 4, batchSize: 3, flushMs: 10 });
    await publisher.ready();
    server.freeze();
    for (let n = 1; n <= 3; n++) publisher.publish(event(n)); // a full batch: sent at once, held by the frozen Redis
    await waitFor(() => publisher.beingSent === 3, { what: "the first batch in flight" });
    for (let n = 4; n <= 10; n++) publisher.publish(event(n));
    // Seven wait where four may: the three oldest of them go, and are said to.
    expect((await dropped.get()).values[0]?.value).to.equal(3);
    expect(publisher.buffered).to.equal(3 + 4);

    server.thaw();
    const jobs = await queuedOnce(7);
    expect(jobs).to.deep.equal([["req_1", "req_2", "req_3"], ["req_7", "req_8", "req_9"], ["req_10"]]);
    await waitFor(() => publisher.buffered === 0, { what: "the publisher to see its sends answered" });
  });

  it("puts a batch whose send failed back in front of what came since, and bounds them together, oldest dropped", async () => {
    const { publisher, dropped } = start({ maxBuffered: 4, batchSize: 3, flushMs: 10 });
    await publisher.ready();
    server.freeze();
    for (let n = 1; n <= 3; n++) publisher.publish(event(n));
    await waitFor(() => publisher.beingSent === 3, { what: "the first batch in flight" });
    for (let n = 4; n <= 7; n++) publisher.publish(event(n)); // within the bound while the batch is out
    expect((await dropped.get()).values[0]?.value).to.equal(0);

    await server.stop("SIGKILL"); // the send fails: seven held where four may be
    await waitFor(() => publisher.beingSent === 0, { what: "the failed send" });
    expect((await dropped.get()).values[0]?.value).to.equal(3);
    expect(publisher.buffered).to.equal(4);

    await server.start();
    const jobs = await queuedOnce(4);
    expect(jobs.flat()).to.deep.equal(["req_4", "req_5", "req_6", "req_7"]);
  });

  it("rebuilds its queue when Redis went away during the queue's start-up check, and sends once Redis is back", async () => {
    // BullMQ asks Redis its version once, as a queue is made; a queue whose question failed refuses every add for good.
    server.freeze();
    const { publisher } = start({ maxBuffered: 100, batchSize: 500, flushMs: 10 });
    publisher.publish(event(1));
    await server.stop("SIGKILL");
    const check = await publisher.ready().then(
      () => "passed",
      () => "failed",
    );
    expect(check, "the queue's start-up check").to.equal("failed");
    await server.start();
    publisher.publish(event(2));
    const jobs = await queuedOnce(2);
    expect(jobs.flat()).to.deep.equal(["req_1", "req_2"]);
    await publisher.ready();
  });

  it("sends what it holds when drained at shutdown, without waiting for the flush interval", async () => {
    const { publisher } = start({ maxBuffered: 100, batchSize: 500, flushMs: 60_000 });
    publisher.publish(event(1));
    publisher.publish(event(2));
    await publisher.drain(5_000);
    expect(await queued()).to.deep.equal([["req_1", "req_2"]]);
    await waitFor(() => publisher.buffered === 0, { what: "the publisher to see its sends answered" });
  });
});
