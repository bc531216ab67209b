import { connect, createServer, type Server, type Socket } from "node:net";
import { testRedisUrl, waitFor } from "@terse/testkit";
import { expect } from "chai";
import { createRedis } from "../src/infra/redis.ts";
import { api, createAccount, type ErrorBody, type Harness, startHarness, type TestAccount } from "./harness.ts";

// Redis going away while the control plane runs, and coming back: key writes answer 503
// at once (no queueing, no hang) and work again after the reconnect.

/** A TCP relay to the real Redis that the test can cut and restore on the same port. */
class CuttableRelay {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async open(): Promise<void> {
    this.server = createServer((client) => {
      const real = new URL(testRedisUrl("controlPlane"));
      const upstream = connect(Number(real.port || 6379), real.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server?.listen(this.port, "127.0.0.1", () => resolve()));
    const address = this.server.address();
    if (address && typeof address === "object") this.port = address.port;
  }

  async cut(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

describe("key cache: Redis outage during operation", () => {
  let h: Harness;
  let account: TestAccount;
  const relay = new CuttableRelay();

  before(async () => {
    await relay.open();
    const redis = createRedis(`redis://127.0.0.1:${relay.port}/2`);
    redis.on("error", () => undefined);
    await redis.connect();
    h = await startHarness("redis_outage", { redis });
    account = await createAccount(h, "pro");
  });
  after(async () => {
    await relay.cut().catch(() => undefined);
    await h.stop();
  });

  it("works through the relay", async () => {
    expect((await api(h, "POST", "/v1/auth/keys", { token: account.token, body: { name: "before" } })).status).to.equal(
      201,
    );
  });

  it("answers 503 at once while Redis is gone, committing nothing", async () => {
    await relay.cut();
    await waitFor(() => h.appRedis.status !== "ready", { what: "the client to notice" });
    const started = performance.now();
    const res = await api<ErrorBody>(h, "POST", "/v1/auth/keys", { token: account.token, body: { name: "during" } });
    expect(res.status).to.equal(503);
    expect(res.body.error.message).to.equal("auth cache unavailable");
    // At once: refused on the spot, not after the client's command timeout (or a reconnect).
    expect(performance.now() - started).to.be.lessThan(h.appRedis.options.commandTimeout ?? 0);
    const rows = await h.db.query("SELECT 1 FROM service_keys WHERE name = 'during'");
    expect(rows.rowCount).to.equal(0);
  });

  it("works again once Redis is back", async () => {
    await relay.open(); // same port
    await waitFor(() => h.appRedis.status === "ready", { timeoutMs: 15_000, what: "the client to reconnect" });
    expect((await api(h, "POST", "/v1/auth/keys", { token: account.token, body: { name: "after" } })).status).to.equal(
      201,
    );
  });
});
