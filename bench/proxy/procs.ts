// What the proxy benchmarks (run.ts, agent-sessions.ts) share: the CPU and memory of a
// target's processes from /proc, their bench scripts started, and medians.
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, type RunningProcess, startProcess } from "@terse/testkit";

const CLK_TCK = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim());

/** CPU seconds (user + system) of processes, from /proc/<pid>/stat. */
export function cpuSeconds(pids: number[]): number {
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

/** Read and write system calls `pids` made so far (/proc/<pid>/io): a proxy's socket work per request. */
export function syscalls(pids: number[]): number {
  let calls = 0;
  for (const pid of pids) {
    try {
      const io = readFileSync(`/proc/${pid}/io`, "utf8");
      calls += Number(/syscr: (\d+)/.exec(io)?.[1] ?? 0) + Number(/syscw: (\d+)/.exec(io)?.[1] ?? 0);
    } catch {
      // exited
    }
  }
  return calls;
}

/**
 * Waits until `pids` together use less than `share` of a core over a `windowMs` window (or
 * `deadlineMs` passed), and says how long that took: a target still busy with the last
 * run's backlog (a queue drained late, a collection) would otherwise spend the next
 * target's run on its cores. A benchmark's pause, not a test's synchronisation.
 */
export function settle(pids: number[], share = 0.1, windowMs = 200, deadlineMs = 10_000): number {
  const started = performance.now();
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    const before = cpuSeconds(pids);
    Atomics.wait(pause, 0, 0, windowMs);
    const busy = (cpuSeconds(pids) - before) / (windowMs / 1000);
    const waited = performance.now() - started;
    if (busy < share || waited > deadlineMs) return waited;
  }
}

/** Resident memory of processes, MB. */
export function rssMb(pids: number[]): number {
  let kb = 0;
  for (const pid of pids) {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    kb += Number(m?.[1] ?? 0);
  }
  return kb / 1024;
}

/** A process and its descendants. */
export const childPids = (pid: number): number[] => {
  const out = spawnSync("pgrep", ["-P", String(pid)])
    .stdout.toString()
    .trim();
  const kids = out ? out.split("\n").map(Number) : [];
  return [pid, ...kids.flatMap(childPids)];
};

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** One of the bench's own scripts (`bench/proxy/<script>`) under plain node, once it says it is ready. */
export async function startScript(
  procs: RunningProcess[],
  script: string,
  args: (string | number)[],
  ready: RegExp,
  nodeFlags: string[] = [],
): Promise<RunningProcess> {
  const proc = startProcess(
    process.execPath,
    [...nodeFlags, join(REPO_ROOT, "bench/proxy", script), ...args.map(String)],
    {},
  );
  procs.push(proc);
  await proc.waitForOutput(ready);
  return proc;
}
