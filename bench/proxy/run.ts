// Proxy benchmark (issue 3): `npx tsx bench/proxy/run.ts` (needs `apt-get install wrk nginx`).
// Side by side and interleaved (A B C D E F, A B C D E F): the fake upstream called directly,
// nginx proxy_pass, a bare http-proxy (the floor of our stack), a bare undici proxy (the same
// off the stack), the lean floor (the work issue 3 requires, on the stack, none of terse's
// code: lean-floor.mjs), the Portkey AI gateway (@portkey-ai/gateway 1.15 from npm), and
// the terse data plane with auth, rate limit and metering on, compression off and on. A 2 KB
// chat-completion body, wrk at 32 and 128 connections. CPU per request is read from /proc
// for the proxy's own processes over each run.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createTestDatabase,
  freePort,
  freshRedis,
  REPO_ROOT,
  type RunningProcess,
  startProcess,
  startTs,
  testRedisUrl,
} from "@terse/testkit";
import { buildServices } from "../../scripts/build-services.mjs";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const DP_WORKERS = process.env.BENCH_DP_WORKERS ?? "1";
/** Only the targets whose names start with one of these (comma-separated), e.g. "terse (instruction". */
const ONLY = (process.env.BENCH_TARGETS ?? "").split(",").filter(Boolean);
/** Extra node flags for the data plane, e.g. BENCH_DP_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof". */
const NODE_FLAGS = (process.env.BENCH_DP_NODE_FLAGS ?? "").split(" ").filter(Boolean);
const CLK_TCK = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim());
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

/** CPU seconds (user + system) of processes, from /proc/<pid>/stat. */
function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // exited
    }
  }
  return ticks / CLK_TCK;
}

function rssMb(pids: number[]): number {
  let kb = 0;
  for (const pid of pids) {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    kb += Number(m?.[1] ?? 0);
  }
  return kb / 1024;
}

const childPids = (pid: number): number[] => {
  const out = spawnSync("pgrep", ["-P", String(pid)])
    .stdout.toString()
    .trim();
  const kids = out ? out.split("\n").map(Number) : [];
  return [pid, ...kids.flatMap(childPids)];
};

function toMs(v: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v.trim());
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === "us" ? n / 1000 : m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : n * 60_000;
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  requests: number;
  errors: number;
}

function wrk(url: string, headers: Record<string, string>, connections: number, pids: number[]): Run {
  const script = join(tmp, "post.lua");
  writeFileSync(
    script,
    [
      `wrk.method = "POST"`,
      `wrk.body = ${JSON.stringify(BODY)}`,
      `wrk.headers["Content-Type"] = "application/json"`,
      ...Object.entries(headers).map(([k, v]) => `wrk.headers["${k}"] = "${v}"`),
    ].join("\n"),
  );
  const before = cpuSeconds(pids);
  const out = execFileSync("wrk", [
    "-t2",
    `-c${connections}`,
    `-d${SECONDS}s`,
    "--latency",
    "-s",
    script,
    url,
  ]).toString();
  const cpu = cpuSeconds(pids) - before;
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const errors = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    p50: toMs(/50%\s+(\S+)/.exec(out)?.[1] ?? ""),
    p99: toMs(/99%\s+(\S+)/.exec(out)?.[1] ?? ""),
    cpuUsPerReq: requests > 0 ? (cpu * 1e6) / requests : 0,
    requests,
    errors,
  };
}

/** Time to first byte of a streamed answer, sequentially, `n` times. */
async function ttfb(url: string, headers: Record<string, string>, n: number): Promise<number[]> {
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

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** One of the bench's own scripts (`bench/proxy/<script>`) under plain node, once it says it is ready. */
async function startScript(
  procs: RunningProcess[],
  script: string,
  args: (string | number)[],
  ready: RegExp,
): Promise<RunningProcess> {
  const proc = startProcess(process.execPath, [join(REPO_ROOT, "bench/proxy", script), ...args.map(String)], {});
  procs.push(proc);
  await proc.waitForOutput(ready);
  return proc;
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
  const dp = startProcess(process.execPath, [...NODE_FLAGS, "services/data-plane/dist/main.mjs"], env, {
    cwd: join(trees, "data-plane"),
  });
  procs.push(dp);
  await dp.waitForOutput(/data-plane listening/, 60_000);
  const dpPids = childPids(dp.child.pid ?? 0);

  const targets: { name: string; url: string; headers: Record<string, string>; pids: number[] }[] = [
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
  ];
  const results = new Map<string, Run[]>();
  for (const connections of [32, 128]) {
    for (let round = 0; round < ROUNDS; round++) {
      for (const t of targets) {
        if (ONLY.length > 0 && !ONLY.some((o) => t.name.startsWith(o))) continue;
        if (connections === 128 && t.name === "terse (all compression on)") continue;
        const r = wrk(t.url, t.headers, connections, t.pids);
        const k = `${t.name}@${connections}`;
        results.set(k, [...(results.get(k) ?? []), r]);
      }
    }
  }
  const rss = rssMb(dpPids);
  const target = (name: string) => targets.find((t) => t.name === name) ?? { url: "", headers: {} };
  const ttDirect = await ttfb(target("direct").url, {}, 200);
  const ttTerse = await ttfb(target("terse (instruction only)").url, target("terse (instruction only)").headers, 200);
  const ttPortkey = await ttfb(target("Portkey gateway").url, target("Portkey gateway").headers, 200);

  // A figure wrk did not print (or printed in a form not parsed) is left out of the mean.
  const avg = (k: string, f: (r: Run) => number) => {
    const xs = (results.get(k) ?? []).map(f).filter((x) => Number.isFinite(x));
    return xs.length === 0 ? Number.NaN : xs.reduce((s, x) => s + x, 0) / xs.length;
  };
  const rows = [
    "| target | connections | requests/s | x direct | x nginx | x Portkey | p50 ms | p99 ms | added p50 / p99 ms | CPU µs per request | CPU x bare http-proxy | non-2xx |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const connections of [32, 128]) {
    const direct = `direct@${connections}`;
    const nginxK = `nginx proxy_pass@${connections}`;
    const portkeyK = `Portkey gateway@${connections}`;
    const bareK = `bare http-proxy@${connections}`;
    for (const t of targets) {
      const k = `${t.name}@${connections}`;
      if (!results.has(k)) continue;
      const rps = avg(k, (r) => r.rps);
      rows.push(
        `| ${t.name} | ${connections} | ${Math.round(rps)} | ${(rps / avg(direct, (r) => r.rps)).toFixed(3)} | ${(rps / avg(nginxK, (r) => r.rps)).toFixed(3)} | ${(rps / avg(portkeyK, (r) => r.rps)).toFixed(1)} | ${avg(k, (r) => r.p50).toFixed(2)} | ${avg(k, (r) => r.p99).toFixed(2)} | ${(avg(k, (r) => r.p50) - avg(direct, (r) => r.p50)).toFixed(2)} / ${(avg(k, (r) => r.p99) - avg(direct, (r) => r.p99)).toFixed(2)} | ${Math.round(avg(k, (r) => r.cpuUsPerReq))} | ${(avg(k, (r) => r.cpuUsPerReq) / avg(bareK, (r) => r.cpuUsPerReq)).toFixed(2)} | ${avg(k, (r) => r.errors)} |`,
      );
    }
  }
  rows.push(
    "",
    `Stream time to first byte, 200 sequential streams: direct p50 ${median(ttDirect).toFixed(2)} ms, through terse ${median(ttTerse).toFixed(2)} ms (added ${(median(ttTerse) - median(ttDirect)).toFixed(2)} ms), through Portkey ${median(ttPortkey).toFixed(2)} ms (added ${(median(ttPortkey) - median(ttDirect)).toFixed(2)} ms).`,
  );
  rows.push(
    `Data-plane RSS after the runs: ${rssMb(dpPids).toFixed(0)} MB (${rss.toFixed(0)} MB right after load), ${DP_WORKERS} worker process(es), ${SECONDS} s per run, ${ROUNDS} interleaved rounds.`,
  );
  console.log(rows.join("\n"));

  for (const p of procs) await p.stop();
  await redis.flushdb();
  redis.disconnect();
  await db.drop();
  process.exit(0);
}

await main();
