import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { type FakeProvider, startFakeProvider } from "@terse/fake-provider";
import { generateRawKey } from "@terse/keys";
import {
  createTestDatabase,
  freePort,
  freshRedis,
  type RunningProcess,
  startProcess,
  type TestDatabase,
  testRedisUrl,
  waitFor,
} from "@terse/testkit";
import { expect } from "chai";
import type { Redis } from "ioredis";
import { buildServices } from "../../../scripts/build-services.mjs";
import { composeEnv, dockerTargets, type Env, loadCompose } from "../src/index.ts";

// What the images run, run here as plain processes: each service's runtime tree (built
// by scripts/build-services.mjs, as the Dockerfile does), its Dockerfile CMD with the
// working directory the image has, and the environment docker-compose.yml gives it, with
// only the addresses pointed at this machine. Each answers its compose health check.

const run = promisify(execFile);
const SECRETS = {
  JWT_SECRET: "containers-jwt-secret-0123456789abcdef",
  INTERNAL_GRPC_TOKEN: "containers-grpc-token-0123",
};
const PROVIDER_KEY = "sk-containers-provider-key-000000";

describe("the container commands, run as plain processes", function () {
  this.timeout(180_000);

  let trees: string;
  let db: TestDatabase;
  let redis: Redis;
  let upstream: FakeProvider;
  const env: Record<string, Env> = {};
  const procs: Record<string, RunningProcess> = {};
  const compose = loadCompose();
  const targets = dockerTargets();

  /** Compose's environment for `service`, with this machine's addresses and free ports. */
  function localEnv(service: string, ports: Env): Env {
    const composed = composeEnv(compose.services[service] ?? {}, SECRETS);
    const local: Env = { ...composed, ...ports, LOG_LEVEL: "warn" };
    if ("DATABASE_URL" in composed) local.DATABASE_URL = db.url;
    if ("REDIS_URL" in composed) local.REDIS_URL = testRedisUrl("deploy");
    if ("CONTROL_PLANE_GRPC_URL" in composed) local.CONTROL_PLANE_GRPC_URL = `127.0.0.1:${ports.GRPC_PORT}`;
    for (const k of ["OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GEMINI_BASE_URL"])
      if (k in composed) local[k] = upstream.url;
    return local;
  }

  /** Runs the compose health check of `service` in its tree until it passes. */
  async function healthy(service: string): Promise<void> {
    const [, ...args] = compose.services[service]?.healthcheck?.test ?? [];
    await waitFor(
      async () => {
        try {
          await run(args[0] ?? "", args.slice(1), {
            cwd: join(trees, service),
            env: { ...process.env, ...env[service] },
          });
          return true;
        } catch {
          return undefined;
        }
      },
      { timeoutMs: 60_000, what: `${service} health check` },
    );
  }

  function start(service: string): RunningProcess {
    const [command, ...args] = targets.get(service)?.cmd ?? [];
    const proc = startProcess(command ?? "", args, env[service] ?? {}, { cwd: join(trees, service) });
    procs[service] = proc;
    return proc;
  }

  before(async () => {
    [trees, db, redis, upstream] = await Promise.all([
      mkdtemp(join(tmpdir(), "terse-trees-")).then((dir) => buildServices(dir)),
      createTestDatabase("containers"),
      freshRedis("deploy"),
      startFakeProvider(),
    ]);
    const [cp, grpc, dp, metrics] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const ports = {
      CONTROL_PLANE_PORT: String(cp),
      GRPC_PORT: String(grpc),
      DATA_PLANE_PORT: String(dp),
      METRICS_PORT: String(metrics),
    };
    env.migrate = localEnv("migrate", {});
    env["control-plane"] = localEnv("control-plane", {
      CONTROL_PLANE_PORT: ports.CONTROL_PLANE_PORT,
      GRPC_PORT: ports.GRPC_PORT,
    });
    // A drain delay long enough to watch readiness turn false while requests are still served.
    env["data-plane"] = {
      ...localEnv("data-plane", { DATA_PLANE_PORT: ports.DATA_PLANE_PORT }),
      SHUTDOWN_DRAIN_DELAY_MS: "800",
    };
    env["metering-worker"] = {
      ...localEnv("metering-worker", { METRICS_PORT: ports.METRICS_PORT }),
      GRPC_PORT: ports.GRPC_PORT,
    };
    env["metering-worker"].CONTROL_PLANE_GRPC_URL = `127.0.0.1:${ports.GRPC_PORT}`;
    delete env["metering-worker"].GRPC_PORT;
  });

  after(async () => {
    await Promise.all(Object.values(procs).map((p) => p.stop("SIGKILL")));
    await upstream?.close();
    await redis?.flushdb();
    redis?.disconnect();
    await db?.drop();
    if (trees) await rm(trees, { recursive: true, force: true });
  });

  it("migrate: the one-shot command applies the migrations and exits 0", async () => {
    const [command, ...args] = compose.services.migrate?.command ?? [];
    const { stdout } = await run(command ?? "", args, {
      cwd: join(trees, "control-plane"),
      env: { PATH: process.env.PATH, ...env.migrate },
    });
    expect(JSON.parse(stdout)).to.include({ msg: "migrations applied" });
    const tables = await db.query<{ n: string }>(
      "SELECT count(*) AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL",
    );
    expect(Number(tables.rows[0]?.n)).to.be.greaterThan(0);
  });

  it("control-plane, data-plane and metering-worker start from their trees and pass their health checks", async () => {
    start("control-plane");
    await healthy("control-plane");
    start("data-plane");
    start("metering-worker");
    await Promise.all([healthy("data-plane"), healthy("metering-worker")]);
    for (const [service, variable] of [
      ["control-plane", "CONTROL_PLANE_PORT"],
      ["data-plane", "DATA_PLANE_PORT"],
      ["metering-worker", "METRICS_PORT"],
    ] as const) {
      const live = await fetch(`http://127.0.0.1:${env[service]?.[variable]}/healthz`);
      expect(live.status, `${service} /healthz`).to.equal(200);
      const metrics = await (await fetch(`http://127.0.0.1:${env[service]?.[variable]}/metrics`)).text();
      expect(metrics, `${service} /metrics`).to.match(/^# HELP /m);
    }
  });

  let rawKey = "";
  it("the bundled admin CLI and the control plane's API give a service key", async () => {
    const cwd = join(trees, "control-plane");
    const email = "containers@example.com";
    const password = "containers-password-1";
    await run(
      "node",
      [
        "services/control-plane/dist/admin.mjs",
        "accounts:create",
        "--email",
        email,
        "--password",
        password,
        "--plan",
        "pro",
      ],
      {
        cwd,
        env: { PATH: process.env.PATH, ...env["control-plane"] },
      },
    );
    const base = `http://127.0.0.1:${env["control-plane"]?.CONTROL_PLANE_PORT}`;
    const login = await fetch(`${base}/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password }),
    });
    const { access_token } = (await login.json()) as { access_token: string };
    const created = await fetch(`${base}/v1/auth/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${access_token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "containers" }),
    });
    expect(created.status).to.equal(201);
    rawKey = ((await created.json()) as { raw_key: string }).raw_key;
  });

  it("the data plane's /metrics counts requests, their duration, key-cache lookups and refusals", async () => {
    const dataPlane = `http://127.0.0.1:${env["data-plane"]?.DATA_PLANE_PORT}`;
    const call = (key: string) =>
      fetch(`${dataPlane}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "x-provider-key": PROVIDER_KEY, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
      });
    expect((await call(rawKey)).status).to.equal(200);
    // A key never issued is looked up and missed; a malformed one (its checksum broken)
    // is refused before any lookup, so it counts as a refusal but not as a miss.
    expect((await call(generateRawKey())).status).to.equal(401);
    expect((await call(`${rawKey.slice(0, -4)}zzzz`)).status).to.equal(401);
    const metrics = await (await fetch(`${dataPlane}/metrics`)).text();
    for (const line of [
      'terse_proxy_requests_total{provider="openai",status="200"} 1',
      'terse_proxy_requests_total{provider="openai",status="401"} 2',
      'terse_proxy_request_duration_seconds_count{provider="openai",status="200"} 1',
      'terse_auth_cache_lookups_total{result="hit"} 1',
      'terse_auth_cache_lookups_total{result="miss"} 1',
      'terse_proxy_refusals_total{code="invalid_api_key"} 2',
    ]) {
      expect(metrics.split("\n"), line).to.include(line);
    }
    expect(metrics).to.match(/^terse_upstream_time_to_first_byte_seconds_count\{provider="openai"\} 1$/m);
  });

  it("on SIGTERM the data plane turns unready, finishes the stream in flight, meters it and exits 0", async () => {
    const dataPlane = `http://127.0.0.1:${env["data-plane"]?.DATA_PLANE_PORT}`;
    upstream.set({ chunkDelayMs: 150, text: "one two three four five six" });
    const res = await fetch(`${dataPlane}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${rawKey}`,
        "x-provider-key": PROVIDER_KEY,
        "content-type": "application/json",
      },
      body: JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "count" }] }),
    });
    expect(res.status).to.equal(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let streamed = decoder.decode((await reader.read()).value);

    const proc = procs["data-plane"] as RunningProcess;
    proc.child.kill("SIGTERM");
    // Readiness turns false at once while the listener still serves (the drain delay).
    await waitFor(
      async () => ((await fetch(`${dataPlane}/readyz`).catch(() => null))?.status === 503 ? true : undefined),
      { timeoutMs: 5_000, what: "/readyz 503 after SIGTERM" },
    );
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      streamed += decoder.decode(chunk.value, { stream: true });
    }
    const text = streamed
      .split("\n")
      .filter((l) => l.startsWith("data: {"))
      .map(
        (l) =>
          (JSON.parse(l.slice(6)) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? "",
      )
      .join("");
    expect(text).to.equal("one two three four five six");
    expect(streamed.trimEnd().endsWith("data: [DONE]")).to.equal(true);
    expect(await proc.exited).to.equal(0);
    // New connections are refused once it is gone; the stream's usage reached Postgres.
    const refused = await fetch(`${dataPlane}/healthz`).then(
      () => false,
      () => true,
    );
    expect(refused).to.equal(true);
    await waitFor(
      async () => {
        const r = await db.query<{ n: string }>("SELECT count(*) AS n FROM usage_events");
        // The call of the metrics test, and the stream.
        return Number(r.rows[0]?.n) === 2 ? true : undefined;
      },
      { timeoutMs: 20_000, what: "the stream's usage event in Postgres" },
    );
  });

  it("the control plane and the worker stop cleanly on SIGTERM", async () => {
    for (const service of ["metering-worker", "control-plane"]) {
      expect(await procs[service]?.stop("SIGTERM"), service).to.equal(0);
    }
  });
});
