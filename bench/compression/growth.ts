// The library's time per request as a session grows (issue 16's "last tenth against
// first"), without the proxy around it: `npx tsx bench/compression/growth.ts [--sessions 64]
// [--format openai] [--tool-calls] [--level standard] [--dump FILE]`.
// Real mini-swe-agent sessions of 20+ user turns, spread over the corpus, replayed as
// bench/proxy/agent-sessions.ts replays them (OpenAI chat in the text protocol by default),
// 8 at a time in turn, each request parsed afresh and compressed with recall on as the
// data plane does. Reports the median over sessions of (mean time of the last tenth of
// requests) / (mean of the first tenth), in wall and CPU time, and time per 100 KB for
// requests of 100 KB+. The JIT is warmed on other sessions first, and the memory is
// then emptied: the sessions start cold, in a process that has run for a while.
// `--dump FILE` writes a digest of every request's result (body, tokens saved, cuts), to
// compare two builds' outputs line by line.
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import {
  type CompressionSettings,
  type ContextCompressLevel,
  compressRequest,
  forgetRemembered,
  type Provider,
} from "@terse/compression";
import { asTextProtocol, loadFolder, type Session } from "./corpus.ts";
import { toProvider } from "./formats.ts";
import { percentile } from "./metrics.ts";

const arg = (name: string, fallback: string): string => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? (process.argv[at + 1] ?? fallback) : fallback;
};
const SESSIONS = Number(arg("sessions", "64"));
const FORMAT = arg("format", "openai") as Provider;
const LEVEL = arg("level", "standard") as ContextCompressLevel;
const TEXT_PROTOCOL = !process.argv.includes("--tool-calls");
const DUMP = arg("dump", "");
const CONCURRENT = 8;
const WARM_UP = 16;

const settings: CompressionSettings = {
  intensity: "full",
  auto_compress_input: false,
  smart_detect_enabled: false,
  context_compress: true,
  context_compress_level: LEVEL,
  recall: true,
};

/** A session's requests as the agent sent them: the body of each as JSON text, made when asked (the benchmark holds no corpus-sized heap). */
function requestsOf(session: Session): (() => string)[] {
  const ps = toProvider(FORMAT, TEXT_PROTOCOL ? asTextProtocol(session) : session);
  return session.messages.flatMap((m, i) =>
    m.role === "user" ? [() => JSON.stringify(ps.body(ps.perMessage.slice(0, i + 1).flat()))] : [],
  );
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/** Mean time of a session's last tenth of requests over that of its first tenth. */
function growth(xs: number[]): number {
  const n = Math.max(1, Math.round(xs.length / 10));
  return mean(xs.slice(-n)) / mean(xs.slice(0, n));
}

function main() {
  const all = loadFolder("mini-swe-agent").filter((s) => s.messages.filter((m) => m.role === "user").length >= 20);
  const step = Math.max(1, Math.floor(all.length / SESSIONS));
  const chosen = all.filter((_, i) => i % step === 0).slice(0, SESSIONS);
  const requests = chosen.map(requestsOf);
  // The JIT warmed up on sessions outside the measured ones (a serving process has seen
  // every code path long before): cold code paths otherwise cost 5-15 ms the first time.
  for (const session of all.filter((_, i) => i % step === 1).slice(0, WARM_UP)) {
    for (const wire of requestsOf(session)) compressRequest(FORMAT, JSON.parse(wire()), settings);
  }
  forgetRemembered();
  const times = chosen.map(() => [] as number[]);
  const cpuTimes = chosen.map(() => [] as number[]);
  const per100k: number[] = [];
  const cpuPer100k: number[] = [];
  const dump: string[] = [];

  for (let from = 0; from < chosen.length; from += CONCURRENT) {
    const group = requests.slice(from, from + CONCURRENT);
    const longest = Math.max(...group.map((r) => r.length));
    for (let t = 0; t < longest; t++) {
      for (const [k, reqs] of group.entries()) {
        const wire = reqs[t]?.();
        if (wire === undefined) continue;
        const body = JSON.parse(wire);
        const cpu0 = process.cpuUsage();
        const t0 = process.hrtime.bigint();
        const result = compressRequest(FORMAT, body, settings);
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        const cpu = process.cpuUsage(cpu0);
        const cpuMs = (cpu.user + cpu.system) / 1000;
        times[from + k]?.push(ms);
        cpuTimes[from + k]?.push(cpuMs);
        if (wire.length >= 100_000) {
          per100k.push(ms / (wire.length / 100_000));
          cpuPer100k.push(cpuMs / (wire.length / 100_000));
        }
        if (DUMP) dump.push(`${from + k} ${t} ${digestOf(result)}`);
      }
    }
  }

  const ratios = times.map(growth);
  const cpuRatios = cpuTimes.map(growth);
  const firsts = times.flatMap((xs) => xs.slice(0, Math.max(1, Math.round(xs.length / 10))));
  const lasts = times.flatMap((xs) => xs.slice(-Math.max(1, Math.round(xs.length / 10))));
  const all1 = times.flat();
  console.log(
    `${chosen.length} sessions, ${all1.length} requests, ${FORMAT}${TEXT_PROTOCOL ? " text protocol" : ""}, ${LEVEL}, recall on`,
  );
  console.log(
    `per request: p50 ${percentile(all1, 50).toFixed(3)} ms, p99 ${percentile(all1, 99).toFixed(3)} ms; first tenth mean ${mean(firsts).toFixed(3)} ms, last tenth ${mean(lasts).toFixed(3)} ms`,
  );
  console.log(
    `last tenth / first tenth per session: median ${percentile(ratios, 50).toFixed(2)}x (quartiles ${percentile(ratios, 25).toFixed(2)}-${percentile(ratios, 75).toFixed(2)}x)`,
  );
  console.log(
    `  in CPU time: median ${percentile(cpuRatios, 50).toFixed(2)}x (quartiles ${percentile(cpuRatios, 25).toFixed(2)}-${percentile(cpuRatios, 75).toFixed(2)}x)`,
  );
  if (per100k.length > 0) {
    console.log(
      `per 100 KB (${per100k.length} requests of 100 KB+): p50 ${percentile(per100k, 50).toFixed(3)} ms, p99 ${percentile(per100k, 99).toFixed(3)} ms`,
    );
    console.log(
      `  in CPU time: p50 ${percentile(cpuPer100k, 50).toFixed(3)} ms, p99 ${percentile(cpuPer100k, 99).toFixed(3)} ms`,
    );
  }
  if (DUMP) writeFileSync(DUMP, `${dump.sort().join("\n")}\n`);
}

function digestOf(result: ReturnType<typeof compressRequest>): string {
  const cuts = [...(result.cuts ?? new Map()).entries()].sort(([a], [b]) => a.localeCompare(b));
  const text = JSON.stringify([
    result.body,
    result.input_tokens_before,
    result.input_tokens_after,
    result.reason,
    cuts,
  ]);
  return createHash("sha1").update(text).digest("hex");
}

main();
