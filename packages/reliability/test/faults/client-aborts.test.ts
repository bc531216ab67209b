import { Agent, request, type Server } from "node:http";
import type { FakeProvider } from "@terse/fake-provider";
import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import {
  type CreatedKey,
  counterTotal,
  PROVIDER_KEY,
  processFigures,
  type Rig,
  report,
  type System,
  startLoad,
  startRig,
} from "../../src/index.ts";

// 1,000 callers hang up on their streams at random points: before the proxy has
// answered, or in the middle of the stream. Every upstream request the proxy made is
// aborted at once (nobody pays for tokens nobody reads), every call the proxy admitted
// is metered once with estimated tokens (those cut before the upstream had the whole
// request too: the proxy cannot know whether the provider began, so it does not
// under-count), and no socket stays open on either side.

const STREAMS = 1_000;
/**
 * A stream lasts about 10 s (500 pieces, 20 ms apart); callers hang up within 400 ms. The
 * margin is for a loaded machine: an abort the proxy acts on after the stream ended
 * would not show as an abort.
 */
const TEXT = "word ".repeat(500);
const CHUNK_DELAY_MS = 20;
const MAX_ABORT_MS = 400;

/** mulberry32: a seeded generator, so a failing run can be replayed with its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe("fault: 1,000 callers hang up mid-stream", function () {
  this.timeout(180_000);
  let rig: Rig;
  let fake: FakeProvider;
  let system: System;
  let key: CreatedKey;

  before(async () => {
    rig = await startRig("faults_aborts");
    ({ system, fake } = rig);
    fake.set({ text: TEXT, chunkDelayMs: CHUNK_DELAY_MS });
    key = await system.createKey(await system.createAccount("aborts@example.com"), "aborts");
  });

  after(() => rig?.close());

  /** Starts a stream and destroys the connection after `abortMs`; resolves to the status seen, 0 if none. */
  function abortedStream(agent: Agent, abortMs: number): Promise<number> {
    return new Promise((resolve) => {
      let status = 0;
      const req = request(`${system.dataPlaneUrl}/v1/chat/completions`, {
        method: "POST",
        agent,
        headers: {
          authorization: `Bearer ${key.raw_key}`,
          "x-provider-key": PROVIDER_KEY,
          "content-type": "application/json",
        },
      });
      req.on("response", (res) => {
        status = res.statusCode ?? 0;
        res.resume();
      });
      req.on("error", () => undefined); // our own destroy()
      req.on("close", () => resolve(status));
      req.end(JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "hi" }] }));
      setTimeout(() => req.destroy(), abortMs);
    });
  }

  const openConnections = (server: Server) =>
    new Promise<number>((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

  it("aborts every upstream request, meters each once as estimated, and leaves no socket open", async () => {
    const seed = Date.now() % 1_000_000;
    const next = random(seed);
    const proxyMetrics = `${system.dataPlaneUrl}/metrics`;
    const before = await processFigures(proxyMetrics);
    const agent = new Agent({ keepAlive: false, maxSockets: 50 });
    const load = startLoad(() => abortedStream(agent, Math.floor(next() * MAX_ABORT_MS)), {
      concurrency: 50,
      count: STREAMS,
    });
    const samples = await load.finished;
    agent.destroy();

    expect(samples, `seed ${seed}`).to.have.length(STREAMS);
    // The callers are done, the proxy may not be: on a busy machine it is still working
    // through requests whose callers hung up while it waited for the CPU, and forwarding
    // some of them. So the upstream's counts are read once the proxy has settled (its
    // sockets back to where they were, none open upstream), never when the load ends.
    // A stream the proxy failed to cut runs to its end (10 s) and is never counted as
    // closed by the proxy: the wait fails, naming the counts.
    const { after, forwarded, upstreamSockets } = await waitFor(
      async () => {
        const figures = await processFigures(proxyMetrics);
        const upstreamSockets = await openConnections(fake.server);
        const { requests, closedByPeer } = fake.stats;
        if (figures.openFds > before.openFds || upstreamSockets > 0 || closedByPeer !== requests) {
          throw new Error(
            `proxy fds ${figures.openFds} (${before.openFds} before), upstream sockets open ${upstreamSockets}, ` +
              `upstream requests ${requests}, cut by the proxy ${closedByPeer}`,
          );
        }
        return { after: figures, forwarded: requests, upstreamSockets };
      },
      {
        timeoutMs: 30_000,
        intervalMs: 100,
        what: `every upstream request aborted and every socket closed (seed ${seed})`,
      },
    );
    await waitFor(() => system.usageQueueIdle(), { timeoutMs: 30_000, what: "the usage queue drained" });
    // One event per call the proxy forwarded and its caller abandoned (the proxy's own
    // count); callers gone before their request was whole were neither forwarded nor
    // metered. Never fewer events than requests the upstream received.
    const abandoned = await counterTotal(proxyMetrics, "terse_proxy_client_aborts_total");
    expect(abandoned).to.be.at.least(forwarded);
    const recorded = await waitFor(
      async () => {
        const r = await system.recorded([key.id]);
        return r.events >= abandoned ? r : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, what: `${abandoned} events` },
    );
    expect(recorded).to.deep.include({ events: abandoned, estimated: abandoned });
    // A caller gone mid-request is no error of the proxy's.
    expect(await counterTotal(proxyMetrics, "terse_proxy_requests_total", { status: "500" })).to.equal(0);
    report({
      seed,
      streams: STREAMS,
      forwarded_upstream: forwarded,
      abandoned_after_forwarding: abandoned,
      upstream_aborted: fake.stats.closedByPeer,
      metered: recorded.byStatus,
      open_fds: [before.openFds, after.openFds],
      upstream_sockets_open: upstreamSockets,
    });
  });
});
