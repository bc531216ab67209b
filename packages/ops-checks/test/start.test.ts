import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeProvider, startFakeProvider } from "@terse/fake-provider";
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
import { changedInputs } from "../../../scripts/build-services.mjs";

// `npm start` as the README's reader runs it, on this machine's Postgres and Redis: the
// services' bundles built (only when a source changed) and run under plain node, the
// data plane on every core, each port on 127.0.0.1 only, and Ctrl-C stopping it all.

/** A process of the tree under `root`: its pid and command line. */
interface Proc {
  pid: number;
  argv: string[];
}

function readProc(pid: number, file: string): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return ""; // gone meanwhile
  }
}

/** `root` and every process below it. */
function processTree(root: number): Proc[] {
  const parentOf = new Map<number, number>();
  for (const name of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    const stat = readProc(Number(name), "stat");
    if (stat) parentOf.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
  }
  const under = (pid: number): boolean => pid === root || (pid > 1 && under(parentOf.get(pid) ?? 0));
  return [...parentOf.keys()]
    .filter(under)
    .map((pid) => ({ pid, argv: readProc(pid, "cmdline").split("\0").filter(Boolean) }));
}

const alive = (pid: number) => readProc(pid, "stat") !== "";

/** Resolves true when a TCP connection to host:port is accepted, false when refused. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

const SERVICES = ["control-plane", "data-plane", "metering-worker"] as const;

describe("npm start", function () {
  this.timeout(240_000);

  let runtime: string;
  let db: TestDatabase;
  let redis: Redis;
  let upstream: FakeProvider;
  let system: RunningProcess;
  let started: Proc[] = [];
  const ports: Record<string, number> = {};

  before(async () => {
    [runtime, db, redis, upstream] = await Promise.all([
      mkdtemp(join(tmpdir(), "terse-start-")),
      createTestDatabase("start"),
      freshRedis("deploy"),
      startFakeProvider(),
    ]);
    for (const name of ["CONTROL_PLANE_PORT", "GRPC_PORT", "DATA_PLANE_PORT", "METRICS_PORT", "STALE"])
      ports[name] = await freePort();
    // The env file npm start wrote on an earlier run, holding a port the environment overrides.
    const envFile = join(runtime, "start.env");
    writeFileSync(
      envFile,
      [
        "JWT_SECRET=start-test-jwt-secret-0123456789abcdef",
        "INTERNAL_GRPC_TOKEN=start-test-grpc-token-0123",
        `DATA_PLANE_PORT=${ports.STALE}`,
      ].join("\n"),
    );
    // Neither CONTROL_PLANE_GRPC_URL, DATA_PLANE_WORKERS nor BIND_HOST: their defaults are under test.
    const env = {
      DATABASE_URL: db.url,
      REDIS_URL: testRedisUrl("deploy"),
      CONTROL_PLANE_PORT: String(ports.CONTROL_PLANE_PORT),
      GRPC_PORT: String(ports.GRPC_PORT),
      DATA_PLANE_PORT: String(ports.DATA_PLANE_PORT),
      METRICS_PORT: String(ports.METRICS_PORT),
      OPENAI_BASE_URL: upstream.url,
      LOG_LEVEL: "warn",
    };
    system = startProcess("npm", ["start", "--", "--runtime", runtime, "--dotenv", envFile], env);
    await system.waitForOutput(/Ctrl-C stops everything/, 200_000);
    started = processTree(system.child.pid ?? 0).filter((p) => p.argv.some((a) => a.endsWith("/dist/main.mjs")));
  });

  after(async () => {
    await system?.stop("SIGKILL");
    await upstream?.close();
    await redis?.flushdb();
    redis?.disconnect();
    await db?.drop();
    if (runtime) await rm(runtime, { recursive: true, force: true });
  });

  it("builds the bundles and runs each service under plain node, the data plane on every core", () => {
    expect(system.output()).to.include(`built the service bundles in ${runtime}`);
    const cores = availableParallelism();
    const expected = { "control-plane": 1, "data-plane": cores > 1 ? cores + 1 : 1, "metering-worker": 1 };
    for (const service of SERVICES) {
      // The primary by the path it was given, the cluster workers by the absolute one.
      const procs = started.filter((p) => p.argv.some((a) => a.endsWith(`services/${service}/dist/main.mjs`)));
      expect(procs.length, `${service} processes`).to.equal(expected[service]);
      for (const p of procs) {
        expect(p.argv[0], `${service} runs under`).to.equal(process.execPath);
        // No TypeScript loader, neither on the command line nor through NODE_OPTIONS.
        expect(p.argv.join(" ")).to.not.match(/tsx|--import|--require/);
        expect(
          readProc(p.pid, "environ")
            .split("\0")
            .find((v) => v.startsWith("NODE_OPTIONS=")) ?? "",
        ).to.not.match(/tsx/);
      }
    }
    if (cores > 1) expect(system.output()).to.include(`(${cores} workers)`);
  });

  it("prints each address it bound, the environment's port winning over the env file's", () => {
    const out = system.output();
    expect(out).to.match(
      new RegExp(
        `control-plane +http://127\\.0\\.0\\.1:${ports.CONTROL_PLANE_PORT} \\(gRPC 127\\.0\\.0\\.1:${ports.GRPC_PORT}\\)`,
      ),
    );
    expect(out).to.match(new RegExp(`data-plane +http://127\\.0\\.0\\.1:${ports.DATA_PLANE_PORT}`));
    expect(out).to.match(new RegExp(`metering-worker +http://127\\.0\\.0\\.1:${ports.METRICS_PORT}/metrics`));
  });

  it("listens on 127.0.0.1 only: another loopback address is refused on every port", async () => {
    for (const name of ["CONTROL_PLANE_PORT", "GRPC_PORT", "DATA_PLANE_PORT", "METRICS_PORT"]) {
      const port = ports[name] ?? 0;
      expect(await accepts("127.0.0.1", port), `${name} on 127.0.0.1`).to.equal(true);
      expect(await accepts("127.0.0.2", port), `${name} on 127.0.0.2`).to.equal(false);
    }
    expect(await accepts("127.0.0.1", ports.STALE ?? 0), "the env file's port").to.equal(false);
  });

  it("proxies a call and meters it through the gRPC port the worker derived from GRPC_PORT", async () => {
    const base = `http://127.0.0.1:${ports.CONTROL_PLANE_PORT}`;
    const login = await fetch(`${base}/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "demo@terse.local", password: "terse-demo-password" }),
    });
    expect(login.status).to.equal(200);
    const { access_token } = (await login.json()) as { access_token: string };
    const created = await fetch(`${base}/v1/auth/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${access_token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "start" }),
    });
    const { raw_key } = (await created.json()) as { raw_key: string };
    const res = await fetch(`http://127.0.0.1:${ports.DATA_PLANE_PORT}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${raw_key}`, "x-provider-key": "sk-start", "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).to.equal(200);
    await waitFor(
      async () => {
        const r = await db.query<{ n: string }>("SELECT count(*) AS n FROM usage_events");
        return Number(r.rows[0]?.n) === 1 ? true : undefined;
      },
      { timeoutMs: 30_000, what: "the call's usage event in Postgres" },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; the system said:\n${system.output().slice(-3000)}`);
    });
  });

  it("stops every process on Ctrl-C and exits 0", async () => {
    expect(started.length).to.be.greaterThan(2);
    // What a terminal does on Ctrl-C: SIGINT to the foreground process group (npm and below).
    // npm exits 0 only if its script's shell does not die of the signal too: the script
    // execs the launcher (package.json), which answers SIGINT by stopping the services.
    process.kill(-(system.child.pid ?? 0), "SIGINT");
    expect(await system.exited).to.equal(0);
    await waitFor(() => (started.some((p) => alive(p.pid)) ? undefined : true), {
      timeoutMs: 10_000,
      what: "every service process gone",
    });
  });

  it("rebuilds only when a file the last build read has changed", () => {
    const stampFile = join(runtime, "inputs.json");
    const stamp = JSON.parse(readFileSync(stampFile, "utf8")) as Record<string, string>;
    expect(stamp).to.have.property("services/data-plane/src/main.ts");
    expect(stamp).to.have.property("packages/db/prisma/migrations/"); // an asset directory's listing
    // Dependencies change only by an install; sources may be edited while this runs.
    const dependencies = Object.keys(stamp).filter((path) => path.startsWith("node_modules/"));
    expect(dependencies.length).to.be.greaterThan(100);
    expect(changedInputs(runtime).filter((path) => path.startsWith("node_modules/"))).to.deep.equal([]);
    const [changed = ""] = dependencies;
    writeFileSync(stampFile, JSON.stringify({ ...stamp, [changed]: "an older version" }));
    expect(changedInputs(runtime).filter((path) => path.startsWith("node_modules/"))).to.deep.equal([changed]);
  });
});
