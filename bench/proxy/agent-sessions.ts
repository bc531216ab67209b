// Agent-sized traffic through the proxy (issue 16): `npx tsx bench/proxy/agent-sessions.ts`.
// Real mini-swe-agent sessions (../shared/corpus/mini-swe-agent, read at run time, never
// copied) replayed as the agent sent them: OpenAI chat completions in its text protocol,
// request t holding the whole history up to the t-th user turn. 8 sessions at a time, each
// sending its requests in order, through
//   - the terse data plane as its image runs it (bundled tree, plain node, 1 process), with a
//     key that has context compression on at `standard`, and
//   - its floor for these bodies (agent-floor.mjs: the lean floor with the body compressed by
//     the same @terse/compression library at the same settings: parse, compress, serialise,
//     relay),
// both in front of the fake upstream of run.ts. Each round replays sessions of its own (the
// library remembers what it has seen: a session replayed twice would be all hits), through
// both targets, in alternating order. CPU per request comes from /proc for the target's
// processes; the library's own time per request from terse's `Server-Timing: compression`.
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CACHE_GENERATION_KEY, cacheKeyFor, encodeCachedKey, generateRawKey, hashKey } from "@terse/keys";
import { freePort, freshRedis, REPO_ROOT, type RunningProcess, startProcess, testRedisUrl } from "@terse/testkit";
import { build } from "esbuild";
import { buildServices } from "../../scripts/build-services.mjs";
import { asTextProtocol, loadFolder } from "../compression/corpus.ts";
import { toProvider } from "../compression/formats.ts";
import { childPids, cpuSeconds, median, rssMb, startScript } from "./procs.ts";

const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 8);
/** Sessions per round; each round replays sessions of its own. */
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LEVEL = "standard";
/** The data plane's node flags as its image has them (Dockerfile), and extra ones, e.g. BENCH_DP_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof". */
const NODE_FLAGS = ["--min-semi-space-size=16", ...(process.env.BENCH_DP_NODE_FLAGS ?? "").split(" ").filter(Boolean)];
/** The floor's, e.g. BENCH_FLOOR_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof-floor" (it exits on SIGTERM, so the profile is written). */
const FLOOR_NODE_FLAGS = (process.env.BENCH_FLOOR_NODE_FLAGS ?? "").split(" ").filter(Boolean);

const tmp = mkdtempSync(join(tmpdir(), "terse-agent-bench-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

interface Replayed {
  /** Requests of one session, in order: the compression stage's ms (terse only) and the body's size. */
  compressionMs: number[];
  bytes: number[];
}

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  pids: number[];
}

/** A session's requests as the agent sent them: the body of each, as JSON text. */
function requestsOf(session: ReturnType<typeof loadFolder>[number]): () => Generator<string> {
  const openai = toProvider("openai", asTextProtocol(session));
  return function* () {
    for (const [i, m] of session.messages.entries()) {
      if (m.role !== "user") continue;
      yield JSON.stringify(openai.body(openai.perMessage.slice(0, i + 1).flat()));
    }
  };
}

const keepAlive = new Agent({ keepAlive: true, maxSockets: CONCURRENT });

/** One POST; resolves with the `compression` duration of its Server-Timing (NaN when there is none). */
function post(target: Target, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      target.url,
      {
        method: "POST",
        agent: keepAlive,
        headers: { ...target.headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on("end", () => {
          if (res.statusCode !== 200) reject(new Error(`${target.name}: status ${res.statusCode}`));
          const timing = /(?:^|, )compression;dur=([\d.]+)/.exec(String(res.headers["server-timing"] ?? ""));
          resolve(timing ? Number(timing[1]) : Number.NaN);
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** The sessions through one target, CONCURRENT at a time, each in order; its CPU per request. */
async function replay(target: Target, sessions: (() => Generator<string>)[]) {
  const replayed: Replayed[] = [];
  let next = 0;
  let requests = 0;
  const cpuBefore = cpuSeconds(target.pids);
  const started = process.hrtime.bigint();
  const worker = async () => {
    while (next < sessions.length) {
      const session = sessions[next++] as () => Generator<string>;
      const r: Replayed = { compressionMs: [], bytes: [] };
      for (const body of session()) {
        r.compressionMs.push(await post(target, body));
        r.bytes.push(body.length);
        requests++;
      }
      replayed.push(r);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENT }, worker));
  const cpu = cpuSeconds(target.pids) - cpuBefore;
  return {
    replayed,
    requests,
    cpuUsPerRequest: (cpu * 1e6) / requests,
    seconds: Number(process.hrtime.bigint() - started) / 1e9,
  };
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))] ?? 0;
/** The first and last tenth (at least one request) of a session's figures. */
const tenths = (xs: number[]) => {
  const n = Math.max(1, Math.round(xs.length / 10));
  return { first: xs.slice(0, n), last: xs.slice(-n) };
};

async function main() {
  // Sessions long enough to have a first and a last tenth apart, spread over the corpus.
  const all = loadFolder("mini-swe-agent").filter((s) => s.messages.filter((m) => m.role === "user").length >= 20);
  // One more set of sessions warms both targets up (JIT, pools) unmeasured.
  const wanted = SESSIONS * (ROUNDS + 1);
  const step = Math.max(1, Math.floor(all.length / wanted));
  const chosen = all.filter((_, i) => i % step === 0).slice(0, wanted);
  if (chosen.length < wanted) throw new Error(`only ${chosen.length} sessions of 20+ turns; asked for ${wanted}`);

  const procs: RunningProcess[] = [];
  const redisUrl = testRedisUrl("bench");
  const redis = await freshRedis("bench");
  const upstreamPort = await freePort();
  await startScript(procs, "upstream.mjs", [upstreamPort], /upstream ready/);

  // The floor's library: @terse/compression bundled as the data plane's bundle holds it.
  const compressionBundle = join(tmp, "compression.mjs");
  await build({
    entryPoints: [join(REPO_ROOT, "packages/compression/src/index.ts")],
    outfile: compressionBundle,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    logLevel: "warning",
  });
  const floorPort = await freePort();
  const floor = await startScript(
    procs,
    "agent-floor.mjs",
    [upstreamPort, floorPort, redisUrl, compressionBundle, LEVEL],
    /agent-floor ready/,
    FLOOR_NODE_FLAGS,
  );

  // The key, written to the key cache as the control plane writes it (its record and the
  // cache's generation stamp).
  const rawKey = generateRawKey();
  await redis.hset(
    cacheKeyFor(hashKey(rawKey)),
    encodeCachedKey({
      key_id: "key_agentbench",
      account_id: "acct_agentbench",
      plan: "enterprise",
      rate_limit_rpm: 1_000_000_000,
      intensity: "full",
      auto_compress_input: false,
      smart_detect_enabled: false,
      context_compress: true,
      context_compress_level: LEVEL,
    }),
  );
  await redis.set(CACHE_GENERATION_KEY, `agent-bench-${Date.now()}`);

  const dpPort = await freePort();
  const trees = await buildServices(join(tmp, "trees"));
  const dp = startProcess(
    process.execPath,
    [...NODE_FLAGS, "services/data-plane/dist/main.mjs"],
    {
      NODE_ENV: "production",
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "warn",
      REDIS_URL: redisUrl,
      DATA_PLANE_PORT: String(dpPort),
      DATA_PLANE_WORKERS: "1",
      OPENAI_BASE_URL: `http://127.0.0.1:${upstreamPort}`,
      MAX_BODY_BYTES: String(64 * 1024 * 1024),
      // BENCH_RECALL=false: the same key without recall (no tool, plain markers), to see its share.
      RECALL_ENABLED: process.env.BENCH_RECALL ?? "true",
      TERSE_PLANS: JSON.stringify({ enterprise: { rate_limit_rpm: 1_000_000_000 } }),
    },
    { cwd: join(trees, "data-plane") },
  );
  procs.push(dp);
  await dp.waitForOutput(/data-plane listening/, 60_000);

  const terse: Target = {
    name: "terse (context compression, standard)",
    url: `http://127.0.0.1:${dpPort}/v1/chat/completions`,
    headers: { Authorization: `Bearer ${rawKey}`, "X-Provider-Key": "sk-bench" },
    pids: childPids(dp.child.pid ?? 0),
  };
  const floorTarget: Target = {
    name: "floor (parse, compress, serialise, relay)",
    url: `http://127.0.0.1:${floorPort}/v1/chat/completions`,
    headers: {},
    pids: [floor.child.pid ?? 0],
  };

  const cpu: Record<string, number[]> = { [terse.name]: [], [floorTarget.name]: [] };
  const ratios: number[] = [];
  const sessionsOfTerse: Replayed[] = [];
  let requests = 0;
  let bytes = 0;
  const warmUp = chosen.slice(ROUNDS * SESSIONS).map(requestsOf);
  for (const target of [terse, floorTarget]) await replay(target, warmUp);
  for (let round = 0; round < ROUNDS; round++) {
    const sessions = chosen.slice(round * SESSIONS, (round + 1) * SESSIONS).map(requestsOf);
    const order = round % 2 === 0 ? [terse, floorTarget] : [floorTarget, terse];
    const perRound: Record<string, number> = {};
    for (const target of order) {
      const r = await replay(target, sessions);
      perRound[target.name] = r.cpuUsPerRequest;
      cpu[target.name]?.push(r.cpuUsPerRequest);
      if (target === terse) {
        sessionsOfTerse.push(...r.replayed);
        requests += r.requests;
        bytes += r.replayed.flatMap((s) => s.bytes).reduce((s, b) => s + b, 0);
      }
      console.error(
        `round ${round + 1}: ${target.name}: ${r.requests} requests in ${r.seconds.toFixed(1)} s, ${Math.round(r.cpuUsPerRequest)} µs CPU each`,
      );
    }
    ratios.push((perRound[terse.name] ?? 0) / (perRound[floorTarget.name] ?? 1));
  }

  // The library's own time: a session's last tenth of requests against its first tenth.
  const firstMs: number[] = [];
  const lastMs: number[] = [];
  const firstKb: number[] = [];
  const lastKb: number[] = [];
  const perSession: number[] = [];
  for (const s of sessionsOfTerse) {
    const ms = tenths(s.compressionMs);
    const kb = tenths(s.bytes);
    firstMs.push(...ms.first);
    lastMs.push(...ms.last);
    firstKb.push(...kb.first.map((b) => b / 1024));
    lastKb.push(...kb.last.map((b) => b / 1024));
    perSession.push(mean(ms.last) / mean(ms.first));
  }
  // Per session (the target's reading): a few sessions with a large result early would
  // otherwise hide the growth of the others in a pooled mean.
  const growth = median(perSession);
  const pooled = mean(lastMs) / mean(firstMs);
  const cpuRatio = median(ratios);
  const row = (t: Target) =>
    `| ${t.name} | ${Math.round(median(cpu[t.name] ?? []))} | ${(t === terse ? cpuRatio : 1).toFixed(2)} |`;
  console.log(
    [
      `${chosen.length} mini-swe-agent sessions (text protocol, OpenAI chat), ${requests} requests of ${(bytes / requests / 1024).toFixed(0)} KB on average (${(bytes / 1024 / 1024).toFixed(0)} MB in all), ${CONCURRENT} sessions at a time, ${ROUNDS} rounds of ${SESSIONS} sessions, context compression ${LEVEL}.`,
      "",
      "| target | CPU µs per request (median of rounds) | x floor (median of the rounds' ratios) |",
      "|---|---|---|",
      row(terse),
      row(floorTarget),
      "",
      `CPU x floor, round by round: ${ratios.map((r) => r.toFixed(2)).join(", ")}.`,
      `Compression library per request (terse's Server-Timing), first tenth of each session: ${mean(firstMs).toFixed(2)} ms mean (bodies ${mean(firstKb).toFixed(0)} KB); last tenth: ${mean(lastMs).toFixed(2)} ms (bodies ${mean(lastKb).toFixed(0)} KB): ${pooled.toFixed(2)}x pooled; per session, median ${growth.toFixed(2)}x (quartiles ${quantile(perSession, 0.25).toFixed(2)}-${quantile(perSession, 0.75).toFixed(2)}x).`,
      `RSS after the runs: data plane ${rssMb(terse.pids).toFixed(0)} MB, floor ${rssMb(floorTarget.pids).toFixed(0)} MB.`,
      "",
      "| target (issue 16) | measured | met |",
      "|---|---|---|",
      `| CPU per request <= 1.3x the floor for these bodies | ${cpuRatio.toFixed(2)}x | ${cpuRatio <= 1.3 ? "yes" : "no"} |`,
      `| compression time, last tenth <= 1.5x first tenth (median of sessions) | ${growth.toFixed(2)}x | ${growth <= 1.5 ? "yes" : "no"} |`,
    ].join("\n"),
  );

  for (const p of procs) await p.stop();
  keepAlive.destroy();
  await redis.flushdb();
  redis.disconnect();
  process.exit(0);
}

await main();
