import { expect } from "chai";
import {
  boundHostPort,
  ConfigError,
  controlPlaneEnv,
  DEFAULT_PLANS,
  dataPlaneEnv,
  httpServerOptions,
  joinHostPort,
  loadConfig,
  meteringWorkerEnv,
} from "../src/index.ts";

const minimalControlPlane = { JWT_SECRET: "x".repeat(32), INTERNAL_GRPC_TOKEN: "t".repeat(16) };

describe("config", () => {
  it("fills the defaults of DESIGN.md section 6", () => {
    const c = loadConfig(controlPlaneEnv, minimalControlPlane);
    expect(c.CONTROL_PLANE_PORT).to.equal(8080);
    expect(c.GRPC_PORT).to.equal(50051);
    expect(c.DATABASE_URL).to.equal("postgresql://postgres@127.0.0.1:5432/terse");
    expect(c.JWT_ISSUER).to.equal("terse");
    expect(c.JWT_AUDIENCE).to.equal("terse-api");
    expect(c.TERSE_PLANS).to.deep.equal(DEFAULT_PLANS);
    const d = loadConfig(dataPlaneEnv, {});
    expect(d.DATA_PLANE_PORT).to.equal(8081);
    expect(d.UPSTREAM_CONNECT_TIMEOUT_MS).to.equal(10_000);
    expect(d.UPSTREAM_IDLE_TIMEOUT_MS).to.equal(300_000);
    expect(d.OPENAI_BASE_URL).to.equal("https://api.openai.com");
  });

  it("takes an empty variable as unset (X= in an env file, an empty default in compose)", () => {
    const c = loadConfig(controlPlaneEnv, { ...minimalControlPlane, JWT_JWKS_URL: "", GRPC_PORT: "" });
    expect(c.JWT_JWKS_URL).to.equal(undefined);
    expect(c.GRPC_PORT).to.equal(50051);
    expect(() => loadConfig(controlPlaneEnv, { ...minimalControlPlane, JWT_SECRET: "" })).to.throw(
      /JWT_SECRET: .*it is not set/,
    );
  });

  it("names the variable in one line for a bad value", () => {
    expect(() => loadConfig(dataPlaneEnv, { DATA_PLANE_PORT: "80a" })).to.throw(
      ConfigError,
      /^invalid config: DATA_PLANE_PORT: expected a port \(0-65535\) \(got "80a"\)$/,
    );
    expect(() => loadConfig(dataPlaneEnv, { OPENAI_BASE_URL: "not a url" })).to.throw(ConfigError, /OPENAI_BASE_URL/);
  });

  it("names a missing required variable and never echoes a secret", () => {
    expect(() => loadConfig(controlPlaneEnv, { INTERNAL_GRPC_TOKEN: "t".repeat(16) })).to.throw(
      /JWT_SECRET: .*it is not set/,
    );
    const err = (() => {
      try {
        loadConfig(controlPlaneEnv, { ...minimalControlPlane, JWT_SECRET: "short-secret-value" });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message)
      .to.match(/JWT_SECRET/)
      .and.not.match(/short-secret-value/);
  });

  it("points the worker at GRPC_PORT on this machine unless CONTROL_PLANE_GRPC_URL is set", () => {
    const token = { INTERNAL_GRPC_TOKEN: "t".repeat(16) };
    expect(loadConfig(meteringWorkerEnv, token).CONTROL_PLANE_GRPC_URL).to.equal("127.0.0.1:50051");
    // The one variable a person changes on one machine: both sides follow it.
    const moved = { ...token, GRPC_PORT: "50999" };
    expect(loadConfig(meteringWorkerEnv, moved).CONTROL_PLANE_GRPC_URL).to.equal("127.0.0.1:50999");
    expect(loadConfig(controlPlaneEnv, { ...minimalControlPlane, ...moved }).GRPC_PORT).to.equal(50999);
    const elsewhere = { ...moved, CONTROL_PLANE_GRPC_URL: "control-plane:50051" };
    expect(loadConfig(meteringWorkerEnv, elsewhere).CONTROL_PLANE_GRPC_URL).to.equal("control-plane:50051");
    expect(() => loadConfig(meteringWorkerEnv, { ...token, CONTROL_PLANE_GRPC_URL: "nope" })).to.throw(
      /CONTROL_PLANE_GRPC_URL: expected host:port/,
    );
  });

  it("binds to 127.0.0.1 and limits how long a request may take to arrive, unless set", () => {
    for (const c of [loadConfig(controlPlaneEnv, minimalControlPlane), loadConfig(dataPlaneEnv, {})]) {
      expect(c.BIND_HOST).to.equal("127.0.0.1");
      expect(c.HTTP_HEADERS_TIMEOUT_MS).to.equal(10_000);
      expect(c.HTTP_REQUEST_TIMEOUT_MS).to.equal(60_000);
    }
    expect(loadConfig(meteringWorkerEnv, { INTERNAL_GRPC_TOKEN: "t".repeat(16) }).BIND_HOST).to.equal("127.0.0.1");
    expect(loadConfig(dataPlaneEnv, { BIND_HOST: "0.0.0.0" }).BIND_HOST).to.equal("0.0.0.0");
    // Node refuses a header limit above the request limit: named at start instead.
    expect(() =>
      loadConfig(dataPlaneEnv, { HTTP_HEADERS_TIMEOUT_MS: "5000", HTTP_REQUEST_TIMEOUT_MS: "4000" }),
    ).to.throw(/^invalid config: HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS \(got "5000"\)$/);
  });

  it("checks the receive limits often enough to keep each within a tenth of its value", () => {
    expect(httpServerOptions({ HTTP_HEADERS_TIMEOUT_MS: 10_000, HTTP_REQUEST_TIMEOUT_MS: 60_000 })).to.deep.equal({
      headersTimeout: 10_000,
      requestTimeout: 60_000,
      connectionsCheckingInterval: 1_000,
    });
    expect(
      httpServerOptions({ HTTP_HEADERS_TIMEOUT_MS: 300, HTTP_REQUEST_TIMEOUT_MS: 600 }).connectionsCheckingInterval,
    ).to.equal(30);
    expect(
      httpServerOptions({ HTTP_HEADERS_TIMEOUT_MS: 120_000, HTTP_REQUEST_TIMEOUT_MS: 120_000 })
        .connectionsCheckingInterval,
    ).to.equal(1_000);
  });

  it("prints a bound address as host:port, IPv6 in brackets", () => {
    expect(boundHostPort({ address: "127.0.0.1", family: "IPv4", port: 8081 })).to.equal("127.0.0.1:8081");
    expect(boundHostPort({ address: "::", family: "IPv6", port: 8081 })).to.equal("[::]:8081");
    expect(joinHostPort("0.0.0.0", 50051)).to.equal("0.0.0.0:50051");
    expect(joinHostPort("::1", 50051)).to.equal("[::1]:50051");
    expect(joinHostPort("[::1]", 50051)).to.equal("[::1]:50051");
  });

  it("merges TERSE_PLANS field by field over the defaults", () => {
    const c = loadConfig(controlPlaneEnv, {
      ...minimalControlPlane,
      TERSE_PLANS: '{"enterprise": {"rate_limit_rpm": 1000000, "monthly_tokens": 5000000000}}',
    });
    expect(c.TERSE_PLANS.enterprise).to.deep.equal({
      max_active_keys: 200,
      rate_limit_rpm: 1_000_000,
      monthly_tokens: 5_000_000_000,
    });
    expect(c.TERSE_PLANS.free).to.deep.equal(DEFAULT_PLANS.free);
    expect(() => loadConfig(controlPlaneEnv, { ...minimalControlPlane, TERSE_PLANS: "{" })).to.throw(
      /TERSE_PLANS: expected JSON/,
    );
    expect(() => loadConfig(controlPlaneEnv, { ...minimalControlPlane, TERSE_PLANS: '{"gold": {}}' })).to.throw(
      /TERSE_PLANS/,
    );
    expect(() =>
      loadConfig(controlPlaneEnv, { ...minimalControlPlane, TERSE_PLANS: '{"free": {"rate_limit_rpm": -1}}' }),
    ).to.throw(/TERSE_PLANS: free.rate_limit_rpm/);
  });
});

describe(".env.example", () => {
  it("documents every variable the services read, and nothing else", async () => {
    const { readFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    const text = readFileSync(join(import.meta.dirname, "..", "..", "..", ".env.example"), "utf8");
    const documented = new Set([...text.matchAll(/^#?\s*([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1] ?? ""));
    const read = new Set([controlPlaneEnv, dataPlaneEnv, meteringWorkerEnv].flatMap((s) => Object.keys(s.shape)));
    expect(
      [...read].filter((v) => !documented.has(v)),
      "read but not documented",
    ).to.deep.equal([]);
    expect(
      [...documented].filter((v) => !read.has(v)),
      "documented but not read",
    ).to.deep.equal([]);
  });
});
