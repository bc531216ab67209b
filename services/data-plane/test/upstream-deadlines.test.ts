import { EventEmitter } from "node:events";
import { type ClientRequest, createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { expiryOf, UpstreamDeadlines } from "../src/http/upstream-deadlines.ts";

/** A socket as the sweep sees it: its state, byte counters, current request and 'close'. */
class StandInSocket extends EventEmitter {
  bytesRead = 0;
  bytesWritten = 0;
  _httpMessage: StandInRequest | null = null;
  constructor(public connecting: boolean) {
    super();
  }
}

/** A request on a socket: what the sweep reads of it, and destroy(). */
class StandInRequest {
  destroyed = false;
  error: Error | undefined;
  constructor(public socket: StandInSocket) {
    socket._httpMessage = this;
  }
  destroy(err: Error) {
    this.destroyed = true;
    this.error = err;
  }
  /** Ends as a kept-alive request does: the socket goes back to the pool. */
  end() {
    this.destroyed = true;
    this.socket._httpMessage = null;
  }
}
const asRequest = (r: StandInRequest) => r as unknown as ClientRequest;

describe("upstream deadlines", () => {
  // A sweep every 100 ms: the connect limit is 10 sweeps, the idle limit 50.
  const limits = { connectMs: 1_000, idleMs: 5_000 };
  let deadlines: UpstreamDeadlines;
  let sockets: StandInSocket[] = [];
  const sweep = (times: number) => {
    for (let i = 0; i < times; i++) deadlines.sweep();
  };
  const watched = (connecting: boolean) => {
    const socket = new StandInSocket(connecting);
    sockets.push(socket);
    const req = new StandInRequest(socket);
    deadlines.watch(asRequest(req));
    return req;
  };
  beforeEach(() => {
    deadlines = new UpstreamDeadlines(limits);
    sockets = [];
  });
  afterEach(() => {
    for (const s of sockets) s.emit("close");
    sweep(1); // nothing left: the timer stops
  });

  /** Still alive now, given up on the next sweep, and marked with why. */
  const expectGivenUpOnNextSweep = (req: ReturnType<typeof watched>, why: "connect" | "idle") => {
    expect(req.destroyed).to.equal(false);
    sweep(1);
    expect(req.error?.message).to.equal(`upstream ${why} timeout`);
    expect(expiryOf(asRequest(req))).to.equal(why);
  };

  it("gives up a request still connecting once the connect limit has surely passed, not before", () => {
    const req = watched(true);
    // Watched just before a sweep: 10 sweeps may be only 9 periods, so it takes 11.
    sweep(10);
    expectGivenUpOnNextSweep(req, "connect");
  });

  it("gives up a connected request after the idle limit without a byte either way", () => {
    const req = watched(false);
    req.socket.bytesWritten = 120;
    sweep(1); // the first look: the counters as they stand
    sweep(49);
    expectGivenUpOnNextSweep(req, "idle");
  });

  it("restarts the idle clock on every byte read or written, and never applies the connect limit once connected", () => {
    const req = watched(false);
    for (let i = 1; i <= 10; i++) {
      if (i % 2 === 0) req.socket.bytesRead += 10;
      else req.socket.bytesWritten += 1;
      sweep(40);
    }
    expect(req.destroyed).to.equal(false);
    sweep(10); // 49 sweeps since the one that saw the last change
    expect(req.destroyed).to.equal(false);
    sweep(1);
    expect(expiryOf(asRequest(req))).to.equal("idle");
  });

  it("never cuts a kept-alive socket between requests, and times the next request from its own start", () => {
    const first = watched(false);
    sweep(30);
    first.end();
    sweep(500); // in the pool, quiet: nobody's request
    const next = new StandInRequest(first.socket);
    deadlines.watch(asRequest(next)); // a known socket: the sweep finds the request itself
    expect(deadlines.size).to.equal(1);
    sweep(50); // the first of these saw the new request
    expect(next.destroyed).to.equal(false);
    sweep(1);
    expect(expiryOf(asRequest(next))).to.equal("idle");
    expect(expiryOf(asRequest(first))).to.equal(undefined);
  });

  it("forgets a closed socket", () => {
    const req = watched(true);
    req.socket.emit("close");
    expect(deadlines.size).to.equal(0);
    sweep(100);
    expect(req.destroyed).to.equal(false);
  });

  it("sweeps at a tenth of the shorter limit, within 5 ms and a second", () => {
    const period = (connectMs: number, idleMs: number) => new UpstreamDeadlines({ connectMs, idleMs }).periodMs;
    expect(period(10_000, 300_000)).to.equal(1_000);
    expect(period(2_000, 500)).to.equal(50);
    expect(period(10, 10)).to.equal(5);
  });
});

describe("upstream deadlines, on real sockets", () => {
  let server: Server;
  let port: number;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === "/silent") return; // answers nothing, holds the connection
      // Trickles a byte every 60 ms for 600 ms: never quiet for the 400 ms limit.
      res.writeHead(200, { "content-type": "text/plain" });
      let sent = 0;
      const t = setInterval(() => {
        res.write(".");
        if (++sent === 10) {
          clearInterval(t);
          res.end();
        }
      }, 60);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const limits = { connectMs: 2_000, idleMs: 400 };

  it("cuts a silent upstream after the idle limit, within two sweep periods and a margin", async () => {
    const deadlines = new UpstreamDeadlines(limits);
    const started = performance.now();
    const req = request({ port, host: "127.0.0.1", path: "/silent" });
    req.once("socket", () => deadlines.watch(req));
    req.end();
    const err = await new Promise<Error>((resolve) => req.once("error", resolve));
    const elapsed = performance.now() - started;
    expect(err.message).to.equal("upstream idle timeout");
    expect(expiryOf(req)).to.equal("idle");
    expect(elapsed).to.be.at.least(limits.idleMs);
    // Two sweep periods late at most, and a loaded machine delays timers: the bound is
    // generous, the point is that it fires.
    expect(elapsed).to.be.below(limits.idleMs + 2 * deadlines.periodMs + 2_000);
    await waitForClose(deadlines);
  });

  it("lets an upstream that keeps sending run past the idle limit", async () => {
    const deadlines = new UpstreamDeadlines(limits);
    const req = request({ port, host: "127.0.0.1", path: "/trickle" });
    req.once("socket", () => deadlines.watch(req));
    req.end();
    const body = await new Promise<string>((resolve, reject) => {
      req.once("error", reject);
      req.once("response", (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          text += c;
        });
        res.once("end", () => resolve(text));
      });
    });
    expect(body).to.equal("..........");
    expect(expiryOf(req)).to.equal(undefined);
  });
});

/** The cut socket closes, and the deadlines forget it. */
async function waitForClose(deadlines: UpstreamDeadlines): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (deadlines.size > 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  expect(deadlines.size).to.equal(0);
}
