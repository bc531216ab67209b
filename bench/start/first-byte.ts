// What a person who follows the README gets: the whole system as `npm start` runs it (the
// bundles under plain node, the data plane on every core), beside the same bundles in one
// process and beside `npm run dev` (the sources under tsx, one process: what `npm start`
// ran before), all three in front of one fake provider (packages/fake-provider), and the
// fake called directly. Time to first byte of streams and the data plane's CPU per stream.
//
//   npx tsx bench/start/first-byte.ts
//
// The systems run side by side and the measurements interleave (direct, A, B, C, direct,
// A, ...), so a busy machine slows each alike. Rounds of 4 concurrent streams (as the
// issue measured) and sequential streams, kept-alive connections and a new one per
// stream; the first round (cold code) apart; terse's Server-Timing splits its share; and
// plain calls 16 at a time. `npm run dev` restarts a service when a source changes: run
// this on a tree nobody edits meanwhile. BENCH_VARIANTS='[{"label", "launcher"?, "args",
// "env"}]' replaces the three, e.g. to add `"env": {"LOG_LEVEL": "warn"}`. ROUNDS: 100.
// The launchers share the database terse_bench_start (created on first run).
import { readdirSync, readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { join } from "node:path";
import { freePort, REPO_ROOT, type RunningProcess, startProcess, startTs } from "@terse/testkit";

const ROUNDS = Number(process.env.ROUNDS ?? 100);
const CONCURRENCY = 4;
const bodyOf = (stream: boolean) =>
  JSON.stringify({ model: "gpt-4o-mini", stream, messages: [{ role: "user", content: "hi" }] });

/** BENCH_VARIANTS (JSON, the same shape) replaces these, to try other settings side by side. */
const VARIANTS: { label: string; launcher?: string; args: string[]; env: Record<string, string> }[] = process.env
  .BENCH_VARIANTS
  ? JSON.parse(process.env.BENCH_VARIANTS)
  : [
      { label: "npm run dev (tsx, 1 process; npm start before)", args: ["--dev"], env: {} },
      { label: "bundles, 1 process", args: [], env: { DATA_PLANE_WORKERS: "1" } },
      { label: "npm start (bundles, every core)", args: [], env: {} },
    ];

interface Target {
  label: string;
  /** Asks for a stream (default) or a plain JSON answer. */
  stream?: boolean;
  url: string;
  headers: Record<string, string>;
  /** The data plane's processes (none for the fake called directly). */
  pids: number[];
}

/** Server-Timing stages (auth, body, compression, upstream) of one response, ms. */
type Stages = Record<string, number>;

interface Sample {
  ms: number;
  stages: Stages;
}

function stagesOf(header: string | undefined): Stages {
  const stages: Stages = {};
  for (const m of (header ?? "").matchAll(/(\w+);(?:desc="[^"]*";)?dur=([\d.]+)/g)) stages[m[1] ?? ""] = Number(m[2]);
  return stages;
}

/** ms from sending the request to the first byte of the response body. */
function firstByte(t: Target, agent: Agent | false): Promise<Sample> {
  const body = bodyOf(t.stream !== false);
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const req = request(
      t.url,
      {
        method: "POST",
        agent,
        headers: { ...t.headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`${t.label}: status ${res.statusCode}`));
        const stages = stagesOf(res.headers["server-timing"] as string | undefined);
        res.once("data", () => resolve({ ms: Number(process.hrtime.bigint() - start) / 1e6, stages }));
        res.resume();
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)] ?? 0;

/** Pids of `root` and all its descendants whose command line mentions `mark`. */
function pidsOf(root: number, mark: string): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {}
  }
  const inTree = (pid: number): boolean => pid === root || (pid > 1 && inTree(parent.get(pid) ?? 0));
  return [...parent.keys()].filter((pid) => {
    if (!inTree(pid)) return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(mark);
    } catch {
      return false;
    }
  });
}

/** CPU seconds of `pids`, in user space and in the kernel. */
function cpuSeconds(pids: number[]): { user: number; system: number } {
  const cpu = { user: 0, system: 0 };
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      cpu.user += Number(f[11]) / 100;
      cpu.system += Number(f[12]) / 100;
    } catch {}
  }
  return cpu;
}

interface Result {
  samples: Sample[];
  /** µs of CPU per stream, user and kernel. */
  cpu: { user: number; system: number };
}

/** `rounds` rounds of `width` concurrent streams to each target in turn. */
async function measure(targets: Target[], rounds: number, width: number, fresh: boolean): Promise<Result[]> {
  const agents = targets.map(() => new Agent({ keepAlive: true }));
  const results: Result[] = targets.map(() => ({ samples: [], cpu: { user: 0, system: 0 } }));
  const cpu0 = targets.map((t) => cpuSeconds(t.pids));
  for (let r = 0; r < rounds; r++) {
    for (const [i, t] of targets.entries()) {
      const samples = await Promise.all(
        Array.from({ length: width }, () => firstByte(t, fresh ? false : (agents[i] as Agent))),
      );
      results[i]?.samples.push(...samples);
    }
  }
  for (const [i, t] of targets.entries()) {
    const r = results[i] as Result;
    const now = cpuSeconds(t.pids);
    const before = cpu0[i] ?? { user: 0, system: 0 };
    r.cpu = {
      user: ((now.user - before.user) * 1e6) / r.samples.length,
      system: ((now.system - before.system) * 1e6) / r.samples.length,
    };
  }
  for (const a of agents) a.destroy();
  return results;
}

function report(title: string, targets: Target[], results: Result[], withCpu: boolean): void {
  console.log(`\n${title}`);
  const direct = pct(results[0]?.samples.map((s) => s.ms) ?? [], 0.5);
  for (const [i, t] of targets.entries()) {
    const r = results[i] as Result;
    const p50 = pct(
      r.samples.map((s) => s.ms),
      0.5,
    );
    const stages = ["auth", "body", "compression", "upstream"]
      .map(
        (n) =>
          `${n} ${pct(
            r.samples.map((s) => s.stages[n] ?? 0),
            0.5,
          ).toFixed(2)}`,
      )
      .join(", ");
    const cpu =
      withCpu && i > 0
        ? `, CPU ${(r.cpu.user + r.cpu.system).toFixed(0)} µs/stream (user ${r.cpu.user.toFixed(0)}, kernel ${r.cpu.system.toFixed(0)})`
        : "";
    const added = i > 0 ? `, added ${(p50 - direct).toFixed(2)} ms; Server-Timing p50: ${stages}` : "";
    console.log(
      `  ${t.label.padEnd(50)} p50 ${p50.toFixed(2)} ms, p90 ${pct(
        r.samples.map((s) => s.ms),
        0.9,
      ).toFixed(2)}${added}${cpu}`,
    );
  }
}

async function startSystem(
  variant: (typeof VARIANTS)[number],
  upstreamUrl: string,
  procs: RunningProcess[],
): Promise<Target> {
  const [cp, grpc, dp, metrics] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const env = {
    ...(process.env as Record<string, string>),
    DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/terse_bench_start",
    CONTROL_PLANE_PORT: String(cp),
    GRPC_PORT: String(grpc),
    DATA_PLANE_PORT: String(dp),
    METRICS_PORT: String(metrics),
    OPENAI_BASE_URL: upstreamUrl,
    // Every plan's limits out of the way (the demo account's plan included).
    TERSE_PLANS: JSON.stringify(
      Object.fromEntries(
        ["free", "pro", "team", "enterprise"].map((p) => [
          p,
          { rate_limit_rpm: 1e9, monthly_tokens: 1e12, max_active_keys: 1000 },
        ]),
      ),
    ),
    ...variant.env,
  };
  const system = startTs(variant.launcher ?? "scripts/start.ts", env, variant.args);
  procs.push(system);
  await system.waitForOutput(/Ctrl-C stops everything/, 180_000);
  const base = `http://127.0.0.1:${cp}`;
  const login = await fetch(`${base}/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "demo@terse.local", password: "terse-demo-password" }),
  });
  const { access_token } = (await login.json()) as { access_token: string };
  const created = await fetch(`${base}/v1/auth/keys`, {
    method: "POST",
    headers: { authorization: `Bearer ${access_token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: `bench-${Date.now()}` }),
  });
  const { raw_key } = (await created.json()) as { raw_key?: string };
  if (!raw_key) throw new Error(`no key: ${created.status}`);
  return {
    label: variant.label,
    url: `http://127.0.0.1:${dp}/v1/chat/completions`,
    headers: { authorization: `Bearer ${raw_key}`, "x-provider-key": "sk-bench" },
    pids: pidsOf(system.child.pid ?? 0, "data-plane"),
  };
}

async function main(): Promise<void> {
  const procs: RunningProcess[] = [];
  try {
    const upstream = startProcess(
      process.execPath,
      [
        "--import",
        "tsx",
        "-e",
        `const { startFakeProvider } = await import("@terse/fake-provider");
         const f = await startFakeProvider({ record: false });
         console.log("fake ready on", f.url);`,
      ],
      {},
      { cwd: join(REPO_ROOT, "bench") },
    );
    procs.push(upstream);
    const upstreamUrl = (await upstream.waitForOutput(/fake ready on \S+/)).split(" ").at(-1) ?? "";
    const targets: Target[] = [
      {
        label: "direct (the fake provider)",
        url: `${upstreamUrl}/v1/chat/completions`,
        headers: { authorization: "Bearer sk-bench" },
        pids: [],
      },
    ];
    // One after the other: the first builds the bundles the others then find up to date.
    for (const v of VARIANTS) targets.push(await startSystem(v, upstreamUrl, procs));

    report("first round, 4 concurrent (cold code)", targets, await measure(targets, 1, CONCURRENCY, false), false);
    report(
      `${ROUNDS} rounds of 4 concurrent streams, kept-alive connections`,
      targets,
      await measure(targets, ROUNDS, CONCURRENCY, false),
      true,
    );
    const fresh = Math.ceil(ROUNDS / 3);
    report(
      `${fresh} rounds of 4 concurrent streams, a new connection each`,
      targets,
      await measure(targets, fresh, CONCURRENCY, true),
      false,
    );
    report(`${ROUNDS * 2} sequential streams, kept alive`, targets, await measure(targets, ROUNDS * 2, 1, false), true);
    // The CPU figure: plain (non-streamed) calls under load.
    for (const t of targets) t.stream = false;
    report(
      `${ROUNDS} rounds of 16 concurrent non-streamed calls, kept alive (time to first byte of the JSON body)`,
      targets,
      await measure(targets, ROUNDS, 16, false),
      true,
    );
    console.log(`\nload average at the end: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
  } finally {
    await Promise.all(procs.reverse().map((p) => p.stop("SIGINT")));
  }
}

await main();
