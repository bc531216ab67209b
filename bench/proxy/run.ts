// Proxy benchmark (issue 3): `npx tsx bench/proxy/run.ts` (needs `apt-get install wrk nginx`).
// Side by side and interleaved (A B C D E F, A B C D E F): the fake upstream called directly,
// nginx proxy_pass, a bare http-proxy (the floor of our stack), a bare undici proxy (the same
// off the stack), the lean floor (the work issue 3 requires, on the stack, none of terse's
// code: lean-floor.mjs), the Portkey AI gateway (@portkey-ai/gateway 1.15 from npm), and
// the terse data plane with auth, rate limit and metering on, compression off and on. A 2 KB
// chat-completion body, wrk at 32 and 128 connections; then the same body streamed, the
// answer BENCH_STREAM_WORDS (300) events long, at 32 connections; the floors and terse at one
// paced rate; the lean floor and each terse target under load at once; then sequential
// streams' time to first byte, with terse's own Server-Timing stages. CPU per request is read from
// /proc for the proxy's own processes over each run.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createTestDatabase,
  freePort,
  freshRedis,
  REPO_ROOT,
  type RunningProcess,
  seededRandom,
  startProcess,
  startTs,
  testRedisUrl,
} from "@terse/testkit";
import { buildServices } from "../../scripts/build-services.mjs";
import { childPids, cpuSeconds, median, rssMb, settle, startScript, syscalls } from "./procs.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const DP_WORKERS = process.env.BENCH_DP_WORKERS ?? "1";
/** Only the targets whose names start with one of these (comma-separated), e.g. "terse (instruction". */
const ONLY = (process.env.BENCH_TARGETS ?? "").split(",").filter(Boolean);
/**
 * A data-plane tree built earlier (`buildServices(dir)` of scripts/build-services.mjs, e.g. of
 * the commit before a change): served beside the current one as "terse baseline", for a
 * before/after measured side by side in one run.
 */
const BASELINE_TREES = process.env.BENCH_DP_BASELINE;
/** Streams per target in the time-to-first-byte measurement (sequential, targets interleaved). */
const STREAMS = Number(process.env.BENCH_STREAMS ?? 200);
/** The data plane's node flags as its image has them (Dockerfile), and extra ones, e.g. BENCH_DP_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof". */
const NODE_FLAGS = ["--min-semi-space-size=16", ...(process.env.BENCH_DP_NODE_FLAGS ?? "").split(" ").filter(Boolean)];
/** The lean floor's, e.g. BENCH_FLOOR_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof-floor" (it exits on SIGTERM, so the profile is written). */
const FLOOR_NODE_FLAGS = (process.env.BENCH_FLOOR_NODE_FLAGS ?? "").split(" ").filter(Boolean);
/** The baseline data plane's flags, when they differ (a flag measured side by side: the same tree twice, one with it). */
const BASELINE_NODE_FLAGS = process.env.BENCH_DP_BASELINE_NODE_FLAGS?.split(" ").filter(Boolean) ?? NODE_FLAGS;
const tmp = mkdtempSync(join(tmpdir(), "terse-bench-"));
// The service trees alone are some 50 MB a run: gone however the run ends.
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

for (const tool of ["wrk", "nginx"]) {
  if (spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0) {
    console.error(`${tool} is missing: apt-get install -y wrk nginx`);
    process.exit(1);
  }
}

const BODY = JSON.stringify({
  model: "gpt-4o-mini",
  messages: [
    { role: "system", content: "You are a careful assistant. ".repeat(20) },
    { role: "user", content: "Summarise the following notes in three bullet points. ".repeat(26) },
  ],
});

/** Words in each answer of the streamed-answers phase: an answer of some length, as agents stream them. */
const STREAM_WORDS = Number(process.env.BENCH_STREAM_WORDS ?? 300);
/** `BENCH_STREAMED=0` skips the streamed-answers phase (a profile of the JSON runs alone). */
const STREAMED = process.env.BENCH_STREAMED !== "0";
/**
 * `BENCH_PACED=0` skips the paced phase: the floors and terse at one request rate, half
 * of what the slowest of them served at 32 connections, so that no target is the
 * bottleneck. At full load a proxy's every write wakes a sleeping peer (wrk, the
 * upstream), which on a 2-core VM costs it more per request the more it saturates its
 * core; at an equal rate each pays for its own work alone.
 */
const PACED = process.env.BENCH_PACED !== "0";
/**
 * `BENCH_TOGETHER=0` skips the phase where the lean floor and terse take load at the same
 * time (32 connections each, one wrk each): on a shared VM the host's other guests make
 * whole runs of a target 1.5x dearer or not (rounds of one build read 0.95 and 1.69 in
 * one run), and targets measured one after the other may fall into different states;
 * measured at once, both are in the one state there is.
 */
const TOGETHER = process.env.BENCH_TOGETHER !== "0";
/** The same request, streamed: the fake upstream sends `STREAM_WORDS` events, one write each. */
const STREAM_BODY = JSON.stringify({ ...JSON.parse(BODY), stream: true, max_tokens: STREAM_WORDS });

function toMs(v: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v.trim());
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === "us" ? n / 1000 : m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : n * 60_000;
}

/** What the benchmark sends load to: a URL, the headers it needs, and the processes whose CPU is its. */
interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  pids: number[];
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  /** Read and write system calls per request (sockets, mostly). */
  syscallsPerReq: number;
  requests: number;
  errors: number;
}

/**
 * One wrk run. `delayMs`: each connection waits that long before each request (wrk's
 * delay()), which paces the load at about connections / delay, below what the target
 * can serve, instead of as fast as it answers.
 */
function wrk(
  url: string,
  headers: Record<string, string>,
  connections: number,
  pids: number[],
  body = BODY,
  delayMs?: number,
): Run {
  const script = wrkScript("post.lua", headers, body, delayMs);
  const before = cpuSeconds(pids);
  const callsBefore = syscalls(pids);
  const out = execFileSync("wrk", wrkArgs(connections, script, url)).toString();
  return runOf(out, cpuSeconds(pids) - before, syscalls(pids) - callsBefore);
}

/** The Lua script of a run: the request, and the pacing when asked for. */
function wrkScript(name: string, headers: Record<string, string>, body: string, delayMs?: number): string {
  const script = join(tmp, name);
  writeFileSync(
    script,
    [
      `wrk.method = "POST"`,
      `wrk.body = ${JSON.stringify(body)}`,
      `wrk.headers["Content-Type"] = "application/json"`,
      ...Object.entries(headers).map(([k, v]) => `wrk.headers["${k}"] = "${v}"`),
      ...(delayMs === undefined ? [] : [`function delay() return ${delayMs} end`]),
    ].join("\n"),
  );
  return script;
}

const wrkArgs = (connections: number, script: string, url: string) => [
  "-t2",
  `-c${connections}`,
  `-d${SECONDS}s`,
  "--latency",
  "-s",
  script,
  url,
];

/** A run's figures from wrk's output and the CPU seconds and system calls its target's processes spent meanwhile. */
function runOf(out: string, cpu: number, calls: number): Run {
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const errors = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    p50: toMs(/50%\s+(\S+)/.exec(out)?.[1] ?? ""),
    p99: toMs(/99%\s+(\S+)/.exec(out)?.[1] ?? ""),
    cpuUsPerReq: requests > 0 ? (cpu * 1e6) / requests : 0,
    syscallsPerReq: requests > 0 ? calls / requests : 0,
    requests,
    errors,
  };
}

/**
 * Runs wrk against several targets at the same time, `connections` each, the same body:
 * each target's CPU per request is then read while the machine is in one state for all of
 * them (see TOGETHER). Rejects, naming the target, if a wrk fails.
 */
async function wrkTogether(targets: Target[], connections: number): Promise<Run[]> {
  const started = targets.map((t, i) => {
    const script = wrkScript(`together-${i}.lua`, t.headers, BODY);
    const cpu = cpuSeconds(t.pids);
    const calls = syscalls(t.pids);
    const child = spawn("wrk", wrkArgs(connections, script, t.url));
    let out = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    const exited = new Promise<string>((resolve, reject) =>
      child.once("close", (code) =>
        code === 0 ? resolve(out) : reject(new Error(`wrk for ${t.name} exited ${code}`)),
      ),
    );
    return { t, cpu, calls, exited };
  });
  const outs = await Promise.all(started.map((s) => s.exited));
  return started.map((s, i) => runOf(outs[i] as string, cpuSeconds(s.t.pids) - s.cpu, syscalls(s.t.pids) - s.calls));
}

/**
 * The targets in the order of round `round`: as listed first, then shuffled (seeded, so a
 * run's order can be told again), so that no target always runs right after the same
 * one: what a target leaves behind (sockets, a warm or cold cache) falls on all alike.
 */
function inOrderOf<T>(round: number, targets: T[]): T[] {
  if (round === 0) return targets;
  const order = [...targets];
  const rnd = seededRandom(round);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [order[i], order[j]] = [order[j] as T, order[i] as T];
  }
  return order;
}

/**
 * Runs one measurement; when it fails (a target stopped answering), says which target and
 * what every process that has exited wrote last, before the run ends.
 */
function runOrExplain<T>(measure: () => T, target: string, procs: RunningProcess[]): T {
  try {
    return measure();
  } catch (err) {
    console.error(`${target}: the measurement failed`);
    for (const p of procs) {
      if (p.child.exitCode === null && p.child.signalCode === null) continue;
      console.error(`exited (${p.child.exitCode ?? p.child.signalCode}): ${p.child.spawnargs.join(" ")}`);
      console.error(p.output().slice(-4000));
    }
    throw err;
  }
}

/** Each Server-Timing stage a target's answers named (terse's), in ms, answer by answer: where its added time goes. */
const stages = new Map<string, Map<string, number[]>>();

function noteServerTiming(target: string, header: string | undefined): void {
  if (!header) return;
  const mine = stages.get(target) ?? new Map<string, number[]>();
  stages.set(target, mine);
  for (const m of header.matchAll(/(\w+)(?:;desc="[^"]*")?;dur=([\d.]+)/g)) {
    mine.set(m[1] as string, [...(mine.get(m[1] as string) ?? []), Number(m[2])]);
  }
}

/** Time to first byte of a streamed answer, sequentially, `n` times. */
async function ttfb(url: string, headers: Record<string, string>, n: number, target = ""): Promise<number[]> {
  const body = JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "hi" }] });
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    out.push(
      await new Promise<number>((resolve, reject) => {
        const start = process.hrtime.bigint();
        const req = request(
          url,
          {
            method: "POST",
            headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
          },
          (res) => {
            noteServerTiming(target, res.headers["server-timing"] as string | undefined);
            res.once("data", () => resolve(Number(process.hrtime.bigint() - start) / 1e6));
            res.resume();
          },
        );
        req.on("error", reject);
        req.end(body);
      }),
    );
  }
  return out;
}

async function main() {
  const procs: RunningProcess[] = [];
  const upstreamPort = await freePort();
  const upstream = await startScript(procs, "upstream.mjs", [upstreamPort], /upstream ready/);

  const barePort = await freePort();
  const bare = await startScript(procs, "bare-http-proxy.mjs", [upstreamPort, barePort], /bare ready/);

  const undiciPort = await freePort();
  const bareUndici = await startScript(procs, "bare-undici.mjs", [upstreamPort, undiciPort], /bare-undici ready/);

  // The Portkey AI gateway from npm (its streaming needs @hono/node-server 1.13.8, pinned
  // in bench/package.json), pointed at the same fake upstream through its custom host.
  const portkeyPort = await freePort();
  const portkey = startProcess(
    process.execPath,
    [
      join(REPO_ROOT, "bench/node_modules/@portkey-ai/gateway/build/start-server.js"),
      `--port=${portkeyPort}`,
      "--headless",
    ],
    { NODE_ENV: "production" },
  );
  procs.push(portkey);
  await portkey.waitForOutput(/Ready for connections/, 30_000);
  const portkeyHeaders = {
    "x-portkey-provider": "openai",
    "x-portkey-custom-host": `http://127.0.0.1:${upstreamPort}/v1`,
    Authorization: "Bearer sk-bench",
  };

  const nginxPort = await freePort();
  writeFileSync(
    join(tmp, "nginx.conf"),
    `worker_processes 1; pid ${tmp}/nginx.pid; error_log ${tmp}/error.log; daemon off;
events { worker_connections 4096; }
http { access_log off;
  upstream fake { server 127.0.0.1:${upstreamPort}; keepalive 256; }
  server { listen 127.0.0.1:${nginxPort};
    location / { proxy_pass http://fake; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; } } }`,
  );
  const nginx = startProcess("nginx", ["-c", join(tmp, "nginx.conf"), "-p", tmp], {});
  procs.push(nginx);

  // Keys come from the real control plane, with a plan whose rpm is raised through TERSE_PLANS.
  const db = await createTestDatabase("bench_proxy");
  const redis = await freshRedis("bench");
  const leanPort = await freePort();
  const lean = await startScript(
    procs,
    "lean-floor.mjs",
    [upstreamPort, leanPort, testRedisUrl("bench")],
    /lean ready/,
    FLOOR_NODE_FLAGS,
  );
  const [cpPort, dpPort, grpcPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const env = {
    NODE_ENV: "production",
    // Per-request access lines off, as nginx's here (access_log off); BENCH_LOG_LEVEL=info measures them.
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "warn",
    DATABASE_URL: db.url,
    REDIS_URL: testRedisUrl("bench"),
    JWT_SECRET: "b".repeat(40),
    INTERNAL_GRPC_TOKEN: "bench-internal-token-0123",
    CONTROL_PLANE_PORT: String(cpPort),
    GRPC_PORT: String(grpcPort),
    DATA_PLANE_PORT: String(dpPort),
    DATA_PLANE_WORKERS: DP_WORKERS,
    OPENAI_BASE_URL: `http://127.0.0.1:${upstreamPort}`,
    TERSE_PLANS: JSON.stringify({ enterprise: { rate_limit_rpm: 1_000_000_000 } }),
  };
  const cp = startTs("services/control-plane/src/main.ts", env);
  await cp.waitForOutput(/listening/, 60_000);
  execFileSync(
    join(REPO_ROOT, "node_modules/.bin/tsx"),
    [
      "services/control-plane/src/cli/admin.ts",
      "accounts:create",
      "--email",
      "b@example.com",
      "--password",
      "bench-password",
      "--plan",
      "enterprise",
    ],
    { cwd: REPO_ROOT, env: { ...process.env, ...env } },
  );
  const login = (await (
    await fetch(`http://127.0.0.1:${cpPort}/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "b@example.com", password: "bench-password" }),
    })
  ).json()) as { access_token: string };
  const key = async (settings: object) =>
    (
      (await (
        await fetch(`http://127.0.0.1:${cpPort}/v1/auth/keys`, {
          method: "POST",
          headers: { authorization: `Bearer ${login.access_token}`, "content-type": "application/json" },
          body: JSON.stringify(settings),
        })
      ).json()) as { raw_key: string }
    ).raw_key;
  const keyOff = await key({ name: "off", smart_detect_enabled: false, intensity: "full" });
  const keyOn = await key({
    name: "on",
    smart_detect_enabled: true,
    auto_compress_input: true,
    context_compress: true,
  });
  await cp.stop(); // not on the request path
  // Without compression a key still gets the response instruction; "off" here means the
  // request-rewriting features off, the instruction on (what every key does).
  // The data plane as its image runs it: the bundled runtime tree under plain node.
  const trees = await buildServices(join(tmp, "trees"));
  const startDataPlane = async (treesDir: string, port: number, flags = NODE_FLAGS) => {
    const dp = startProcess(
      process.execPath,
      [...flags, "services/data-plane/dist/main.mjs"],
      { ...env, DATA_PLANE_PORT: String(port) },
      { cwd: join(treesDir, "data-plane") },
    );
    procs.push(dp);
    await dp.waitForOutput(/data-plane listening/, 60_000);
    return childPids(dp.child.pid ?? 0);
  };
  const dpPids = await startDataPlane(trees, dpPort);
  const basePort = BASELINE_TREES ? await freePort() : 0;
  const basePids = BASELINE_TREES ? await startDataPlane(BASELINE_TREES, basePort, BASELINE_NODE_FLAGS) : [];

  const targets: Target[] = [
    {
      name: "direct",
      url: `http://127.0.0.1:${upstreamPort}/v1/chat/completions`,
      headers: {},
      pids: [upstream.child.pid ?? 0],
    },
    {
      name: "nginx proxy_pass",
      url: `http://127.0.0.1:${nginxPort}/v1/chat/completions`,
      headers: {},
      pids: childPids(nginx.child.pid ?? 0),
    },
    {
      name: "bare http-proxy",
      url: `http://127.0.0.1:${barePort}/v1/chat/completions`,
      headers: {},
      pids: [bare.child.pid ?? 0],
    },
    {
      name: "bare undici proxy",
      url: `http://127.0.0.1:${undiciPort}/v1/chat/completions`,
      headers: {},
      pids: [bareUndici.child.pid ?? 0],
    },
    {
      name: "lean floor",
      url: `http://127.0.0.1:${leanPort}/v1/chat/completions`,
      headers: {},
      pids: [lean.child.pid ?? 0],
    },
    {
      name: "Portkey gateway",
      url: `http://127.0.0.1:${portkeyPort}/v1/chat/completions`,
      headers: portkeyHeaders,
      pids: childPids(portkey.child.pid ?? 0),
    },
    {
      name: "terse (instruction only)",
      url: `http://127.0.0.1:${dpPort}/v1/chat/completions`,
      headers: { Authorization: `Bearer ${keyOff}`, "X-Provider-Key": "sk-bench" },
      pids: dpPids,
    },
    {
      name: "terse (all compression on)",
      url: `http://127.0.0.1:${dpPort}/v1/chat/completions`,
      headers: { Authorization: `Bearer ${keyOn}`, "X-Provider-Key": "sk-bench" },
      pids: dpPids,
    },
    ...(BASELINE_TREES
      ? [
          {
            name: "terse baseline (instruction only)",
            url: `http://127.0.0.1:${basePort}/v1/chat/completions`,
            headers: { Authorization: `Bearer ${keyOff}`, "X-Provider-Key": "sk-bench" },
            pids: basePids,
          },
          {
            name: "terse baseline (all compression on)",
            url: `http://127.0.0.1:${basePort}/v1/chat/completions`,
            headers: { Authorization: `Bearer ${keyOn}`, "X-Provider-Key": "sk-bench" },
            pids: basePids,
          },
        ]
      : []),
  ];
  const selected = (name: string) => ONLY.length === 0 || ONLY.some((o) => name.startsWith(o));
  // Every run starts on a quiet machine: no target still at work on the run before it.
  const everyPid = [...new Set(targets.flatMap((t) => t.pids))];
  const quietly = <T>(name: string, measure: () => T): T => {
    const waited = settle(everyPid);
    if (waited > 1000) console.log(`(${name}: the targets were busy ${Math.round(waited)} ms after the run before)`);
    return measure();
  };
  const results = new Map<string, Run[]>();
  for (const connections of [32, 128]) {
    for (let round = 0; round < ROUNDS; round++) {
      for (const t of inOrderOf(round, targets)) {
        if (!selected(t.name)) continue;
        if (connections === 128 && t.name.endsWith("(all compression on)")) continue;
        const r = quietly(t.name, () => runOrExplain(() => wrk(t.url, t.headers, connections, t.pids), t.name, procs));
        const k = `${t.name}@${connections}`;
        results.set(k, [...(results.get(k) ?? []), r]);
      }
    }
  }
  // Streamed answers of some length, as agents read them: what a proxy does per event.
  const streamedTargets = targets.filter(
    (t) => ["bare http-proxy", "lean floor"].includes(t.name) || t.name.endsWith("(instruction only)"),
  );
  for (let round = 0; round < (STREAMED ? ROUNDS : 0); round++) {
    for (const t of inOrderOf(round, streamedTargets)) {
      if (!selected(t.name)) continue;
      const r = quietly(t.name, () =>
        runOrExplain(() => wrk(t.url, t.headers, 32, t.pids, STREAM_BODY), `${t.name}, streamed`, procs),
      );
      results.set(`${t.name}@streamed`, [...(results.get(`${t.name}@streamed`) ?? []), r]);
    }
  }
  const rss = rssMb(dpPids);

  // The same requests at one paced rate for the floors and terse (see PACED).
  const pacedTargets = targets.filter(
    (t) => selected(t.name) && (["bare http-proxy", "lean floor"].includes(t.name) || t.name.startsWith("terse")),
  );
  const slowest = Math.min(...pacedTargets.map((t) => median((results.get(`${t.name}@32`) ?? []).map((r) => r.rps))));
  const pacedDelayMs = Number.isFinite(slowest) && slowest > 0 ? Math.ceil((32 * 1000) / (slowest / 2)) : 0;
  for (let round = 0; round < (PACED && pacedDelayMs > 0 ? ROUNDS : 0); round++) {
    for (const t of inOrderOf(round, pacedTargets)) {
      const r = quietly(t.name, () =>
        runOrExplain(() => wrk(t.url, t.headers, 32, t.pids, BODY, pacedDelayMs), `${t.name}, paced`, procs),
      );
      results.set(`${t.name}@paced`, [...(results.get(`${t.name}@paced`) ?? []), r]);
    }
  }

  // The lean floor and each terse target under load at the same time (see TOGETHER).
  const floor = targets.find((t) => t.name === "lean floor" && selected(t.name));
  const togetherTargets = targets.filter((t) => selected(t.name) && t.name.startsWith("terse"));
  for (let round = 0; floor && TOGETHER && round < ROUNDS; round++) {
    for (const t of inOrderOf(round, togetherTargets)) {
      settle(everyPid);
      const [f, r] = await wrkTogether([floor, t], 32);
      results.set(`${t.name}@together`, [...(results.get(`${t.name}@together`) ?? []), r as Run]);
      results.set(`lean floor@together with ${t.name}`, [
        ...(results.get(`lean floor@together with ${t.name}`) ?? []),
        f as Run,
      ]);
    }
  }

  // Streams one at a time, the targets taking turns in blocks (A B C .., A B C ..) so that
  // a busy spell of the machine falls on all of them alike.
  const streamTargets = targets.filter(
    (t) =>
      ["direct", "bare http-proxy", "lean floor", "Portkey gateway"].includes(t.name) ||
      t.name.endsWith("(instruction only)"),
  );
  const streams = new Map<string, number[]>(streamTargets.map((t) => [t.name, []]));
  const BLOCK = 20;
  for (let done = 0; done < STREAMS; done += BLOCK) {
    for (const t of streamTargets) {
      if (t.name !== "direct" && !selected(t.name)) continue;
      streams.get(t.name)?.push(...(await ttfb(t.url, t.headers, Math.min(BLOCK, STREAMS - done), t.name)));
    }
  }
  const ttDirect = median(streams.get("direct") ?? []);
  const addedTtfb = (name: string) => median(streams.get(name) ?? []) - ttDirect;

  // A figure wrk did not print (or printed in a form not parsed) is left out; rounds give their median.
  const avg = (k: string, f: (r: Run) => number) => median((results.get(k) ?? []).map(f));
  /** A ratio to another target, round by round (the rounds are interleaved), then the median. */
  /** Round by round, `k`'s figure over `of`'s in the same round. */
  const ratios = (k: string, of: string, f: (r: Run) => number) => {
    const b = results.get(of) ?? [];
    return (results.get(k) ?? []).map((r, i) => (b[i] ? f(r) / f(b[i] as Run) : Number.NaN));
  };
  const ratio = (k: string, of: string, f: (r: Run) => number) => median(ratios(k, of, f));
  const rows = [
    "| target | connections | requests/s | x lean floor | x direct | x nginx | x Portkey | p50 ms | p99 ms | added p50 / p99 ms | CPU µs per request | CPU x lean floor | CPU x bare http-proxy | syscalls per request | non-2xx |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const connections of [32, 128]) {
    const direct = `direct@${connections}`;
    const nginxK = `nginx proxy_pass@${connections}`;
    const portkeyK = `Portkey gateway@${connections}`;
    const bareK = `bare http-proxy@${connections}`;
    const leanK = `lean floor@${connections}`;
    for (const t of targets) {
      const k = `${t.name}@${connections}`;
      if (!results.has(k)) continue;
      const rps = avg(k, (r) => r.rps);
      rows.push(
        `| ${t.name} | ${connections} | ${Math.round(rps)} | ${ratio(k, leanK, (r) => r.rps).toFixed(2)} | ${(rps / avg(direct, (r) => r.rps)).toFixed(3)} | ${(rps / avg(nginxK, (r) => r.rps)).toFixed(3)} | ${(rps / avg(portkeyK, (r) => r.rps)).toFixed(1)} | ${avg(k, (r) => r.p50).toFixed(2)} | ${avg(k, (r) => r.p99).toFixed(2)} | ${(avg(k, (r) => r.p50) - avg(direct, (r) => r.p50)).toFixed(2)} / ${(avg(k, (r) => r.p99) - avg(direct, (r) => r.p99)).toFixed(2)} | ${Math.round(avg(k, (r) => r.cpuUsPerReq))} | ${ratio(k, leanK, (r) => r.cpuUsPerReq).toFixed(2)} | ${ratio(k, bareK, (r) => r.cpuUsPerReq).toFixed(2)} | ${avg(k, (r) => r.syscallsPerReq).toFixed(1)} | ${avg(k, (r) => r.errors)} |`,
      );
    }
  }
  const cpu = (r: Run) => r.cpuUsPerReq;
  /** A phase's table at 32 connections (`phase`: "streamed", "paced"): rate and CPU per request against both floors. */
  const phaseTable = (phase: string, title: string, targetsOf: typeof targets, unit: string) => {
    const measured = targetsOf.filter((t) => results.has(`${t.name}@${phase}`));
    if (measured.length === 0) return [];
    return [
      "",
      title,
      "",
      `| target | ${unit}s/s | CPU µs per ${unit} | CPU x lean floor | CPU x bare http-proxy | non-2xx |`,
      "|---|---|---|---|---|---|",
      ...measured.map((t) => {
        const k = `${t.name}@${phase}`;
        return `| ${t.name} | ${Math.round(avg(k, (r) => r.rps))} | ${Math.round(avg(k, cpu))} | ${ratio(k, `lean floor@${phase}`, cpu).toFixed(2)} | ${ratio(k, `bare http-proxy@${phase}`, cpu).toFixed(2)} | ${avg(k, (r) => r.errors)} |`;
      }),
    ];
  };
  rows.push(
    ...phaseTable(
      "streamed",
      `Streamed answers of ${STREAM_WORDS} words (one event each), 32 connections:`,
      streamedTargets,
      "answer",
    ),
    ...phaseTable(
      "paced",
      `Paced: 32 connections, each waiting ${pacedDelayMs} ms before each request (half the slowest of these targets' requests/s at 32 connections):`,
      pacedTargets,
      "request",
    ),
  );
  const atOnce = togetherTargets.filter((t) => results.has(`${t.name}@together`));
  /** Round by round, a terse target's CPU per request over the floor's in the same run at once; then the median. */
  const togetherRatios = (name: string) => ratios(`${name}@together`, `lean floor@together with ${name}`, cpu);
  if (atOnce.length > 0)
    rows.push(
      "",
      "At once: the lean floor and one terse target under load at the same time, 32 connections each (one wrk each):",
      "",
      "| target | requests/s | CPU µs per request | lean floor beside it: requests/s, CPU µs per request | CPU x lean floor (round by round) |",
      "|---|---|---|---|---|",
      ...atOnce.map((t) => {
        const k = `${t.name}@together`;
        const f = `lean floor@together with ${t.name}`;
        const each = togetherRatios(t.name)
          .map((x) => x.toFixed(2))
          .join(", ");
        return `| ${t.name} | ${Math.round(avg(k, (r) => r.rps))} | ${Math.round(avg(k, cpu))} | ${Math.round(avg(f, (r) => r.rps))}, ${Math.round(avg(f, cpu))} | ${median(togetherRatios(t.name)).toFixed(2)} (${each}) |`;
      }),
    );
  rows.push(
    "",
    `Stream time to first byte, ${STREAMS} sequential streams per target (interleaved in blocks of ${BLOCK}), p50: direct ${ttDirect.toFixed(2)} ms; added by ${[
      ...streams,
    ]
      .filter(([name, xs]) => name !== "direct" && xs.length > 0)
      .map(([name]) => `${name} ${addedTtfb(name).toFixed(2)} ms`)
      .join(", ")}.`,
    ...[...stages].map(
      ([name, byStage]) =>
        `${name}, its own Server-Timing, p50: ${[...byStage].map(([stage, xs]) => `${stage} ${median(xs).toFixed(2)} ms`).join(", ")}.`,
    ),
  );
  rows.push(
    `Data-plane RSS after the runs: ${rssMb(dpPids).toFixed(0)} MB (${rss.toFixed(0)} MB right after load), ${DP_WORKERS} worker process(es), ${SECONDS} s per run, ${ROUNDS} interleaved rounds.`,
  );
  const t32 = (name: string, f: (r: Run) => number) => ratio(`${name}@32`, "lean floor@32", f);
  const cpuOff = t32("terse (instruction only)", cpu);
  const cpuOn = t32("terse (all compression on)", cpu);
  const rpsOff = t32("terse (instruction only)", (r) => r.rps);
  const ttTerse = addedTtfb("terse (instruction only)");
  const ttBare = addedTtfb("bare http-proxy");
  const met = (ok: boolean) => (ok ? "yes" : "no");
  // The median hides how far apart the rounds were: each round's ratio, in order.
  const byRound = (name: string, f: (r: Run) => number) =>
    ratios(`${name}@32`, "lean floor@32", f)
      .map((x) => (Number.isFinite(x) ? x.toFixed(2) : "-"))
      .join(", ");
  rows.push(
    "",
    ...["terse (instruction only)", "terse (all compression on)", "terse baseline (instruction only)"]
      .filter((name) => results.has(`${name}@32`))
      .map(
        (name) =>
          `${name} at 32, round by round: CPU x lean floor ${byRound(name, cpu)}; requests/s x lean floor ${byRound(name, (r) => r.rps)}.`,
      ),
  );
  rows.push(
    "",
    "| target (issue 16) | measured | met |",
    "|---|---|---|",
    `| CPU per request, instruction only, <= 1.25x lean floor | ${cpuOff.toFixed(2)}x | ${met(cpuOff <= 1.25)} |`,
    `| CPU per request, all compression on, <= 1.5x lean floor | ${cpuOn.toFixed(2)}x | ${met(cpuOn <= 1.5)} |`,
    `| throughput at 32 connections >= 0.8x lean floor | ${rpsOff.toFixed(2)}x | ${met(rpsOff >= 0.8)} |`,
    // "Today's" figure: the baseline build's in this run when there is one, else the team's +0.68 ms.
    BASELINE_TREES
      ? `| added stream TTFB p50 <= half the baseline build's (${addedTtfb("terse baseline (instruction only)").toFixed(2)} ms) | ${ttTerse.toFixed(2)} ms | ${met(ttTerse <= addedTtfb("terse baseline (instruction only)") / 2)} |`
      : `| added stream TTFB p50 <= half of +0.68 ms (0.34) | ${ttTerse.toFixed(2)} ms | ${met(ttTerse <= 0.34)} |`,
    ...["terse (instruction only)", "terse (all compression on)"]
      .filter((name) => results.has(`${name}@together`))
      .map((name) => {
        const x = median(togetherRatios(name));
        const bound = name.endsWith("(instruction only)") ? 1.25 : 1.5;
        return `| (the same, the two under load at once) CPU per request, ${name.slice(7, -1)}, <= ${bound}x lean floor | ${x.toFixed(2)}x | ${met(x <= bound)} |`;
      }),
    `| (not issue 16's measure) CPU per request, instruction only, paced, x lean floor | ${ratio("terse (instruction only)@paced", "lean floor@paced", cpu).toFixed(2)}x | - |`,
    `| added stream TTFB p50 <= 1.5x the bare http-proxy's (${ttBare.toFixed(2)} ms) | ${(ttTerse / ttBare).toFixed(2)}x | ${met(ttTerse <= 1.5 * ttBare)} |`,
  );
  console.log(rows.join("\n"));

  for (const p of procs) await p.stop();
  await redis.flushdb();
  redis.disconnect();
  await db.drop();
  process.exit(0);
}

await main();
