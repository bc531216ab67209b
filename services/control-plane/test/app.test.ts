import { expect } from "chai";
import {
  api,
  createAccount,
  createKey,
  type ErrorBody,
  type Harness,
  startHarness,
  type TestAccount,
} from "./harness.ts";

describe("the app: request ids, logs, health, metrics, unknown routes", () => {
  let h: Harness;
  let account: TestAccount;

  before(async () => {
    h = await startHarness("app");
    account = await createAccount(h, "pro");
  });
  after(() => h.stop());

  describe("X-Request-Id", () => {
    it("is generated on every response, success and error alike", async () => {
      for (const res of [
        await api(h, "GET", "/healthz"),
        await api(h, "GET", "/v1/auth/keys"),
        await api(h, "GET", "/nowhere"),
      ]) {
        expect(res.headers.get("x-request-id")).to.match(/^[0-9a-f-]{36}$/);
      }
    });

    it("reuses a sane incoming id and replaces an unsafe one", async () => {
      const sane = await api(h, "GET", "/healthz", { headers: { "x-request-id": "trace-123.abc:def" } });
      expect(sane.headers.get("x-request-id")).to.equal("trace-123.abc:def");
      const unsafe = await api(h, "GET", "/healthz", { headers: { "x-request-id": "<script>" } });
      expect(unsafe.headers.get("x-request-id")).to.match(/^[0-9a-f-]{36}$/);
      const long = await api(h, "GET", "/healthz", { headers: { "x-request-id": "a".repeat(200) } });
      expect(long.headers.get("x-request-id")).to.have.length(36);
    });

    it("logs one JSON line per request with the request id, and no Authorization header", async () => {
      const res = await api(h, "GET", "/v1/auth/keys", {
        token: account.token,
        headers: { "x-request-id": "find-me-42" },
      });
      expect(res.status).to.equal(200);
      const lines = h.logs
        .join("")
        .split("\n")
        .filter((l) => l.includes("find-me-42"))
        .map(
          (l) =>
            JSON.parse(l) as {
              req: { id: string; method: string; url: string };
              res: { statusCode: number };
              service: string;
            },
        );
      expect(lines).to.have.length(1);
      expect(lines[0]).to.deep.include({ service: "control-plane" });
      expect(lines[0]?.req).to.deep.equal({ id: "find-me-42", method: "GET", url: "/v1/auth/keys" });
      expect(lines[0]?.res.statusCode).to.equal(200);
      expect(h.logs.join("")).not.to.include(account.token);
    });
  });

  it("answers a route's path under another method with 405 and Allow, in the envelope", async () => {
    for (const [method, path, allow] of [
      ["GET", "/v1/auth/login", "POST"],
      ["PUT", "/v1/auth/keys", "GET, HEAD, POST"],
      ["POST", "/v1/usage", "GET, HEAD"],
      ["GET", "/v1/auth/keys/key_x/rotate", "POST"],
    ] as const) {
      const res = await api<ErrorBody>(h, method, path, {});
      expect(res.status, `${method} ${path}`).to.equal(405);
      expect(res.headers.get("allow")).to.equal(allow);
      expect(res.body.error).to.deep.equal({
        message: "Method not allowed",
        type: "invalid_request_error",
        code: "method_not_allowed",
      });
    }
  });

  it("answers unknown routes with 404 in the envelope", async () => {
    const res = await api<ErrorBody>(h, "POST", "/v2/whatever", { body: {} });
    expect(res.status).to.equal(404);
    expect(res.body.error).to.deep.equal({ message: "Not found", type: "not_found_error", code: "route_not_found" });
  });

  describe("health", () => {
    it("/healthz answers 200 while the process is up", async () => {
      const res = await api(h, "GET", "/healthz");
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ status: "ok" });
    });

    it("/readyz answers 200 with Postgres and Redis reachable, 503 once shutting down", async () => {
      const ready = await api(h, "GET", "/readyz");
      expect(ready.status).to.equal(200);
      expect(ready.body).to.deep.equal({ status: "ok", postgres: true, redis: true, shutting_down: false });
      h.lifecycle.shuttingDown = true;
      try {
        const draining = await api(h, "GET", "/readyz");
        expect(draining.status).to.equal(503);
        expect(draining.body).to.include({ shutting_down: true });
        expect(draining.headers.get("connection")).to.equal("close");
      } finally {
        h.lifecycle.shuttingDown = false;
      }
    });
  });

  it("/metrics counts requests and latency by route pattern and status, never by raw id", async () => {
    const key = await createKey(h, account, { name: "metered" });
    await api(h, "PATCH", `/v1/auth/keys/${key.id}`, { token: account.token, body: { intensity: "lite" } });
    await api(h, "PATCH", `/v1/auth/keys/${key.id}`, { token: account.token, body: { intensity: 1 } });
    const res = await fetch(`${h.url}/metrics`);
    expect(res.headers.get("content-type")).to.match(/^text\/plain/);
    const text = await res.text();
    expect(text).to.include('http_requests_total{method="PATCH",route="/v1/auth/keys/:id",status="200"} 1');
    expect(text).to.include('http_requests_total{method="PATCH",route="/v1/auth/keys/:id",status="400"} 1');
    expect(text).to.match(
      /http_request_duration_seconds_bucket\{le="0\.1",method="POST",route="\/v1\/auth\/keys",status="201"\} \d/,
    );
    expect(text).not.to.include(key.id);
    expect(text).not.to.include(key.raw_key);
  });
});
