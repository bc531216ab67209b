import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const TSX = join(REPO_ROOT, "node_modules", ".bin", "tsx");

export interface RunningProcess {
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves when a line matching `pattern` appears; rejects on exit or timeout. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends a signal and waits for exit; returns the exit code (or signal name). */
  stop(signal?: NodeJS.Signals): Promise<number | string>;
  exited: Promise<number | string>;
}

/** Runs a TypeScript entry point of the repo as a real process, as a container would. */
export function startTs(entry: string, env: Record<string, string>, args: string[] = []): RunningProcess {
  return startProcess(TSX, [join(REPO_ROOT, entry), ...args], env);
}

/**
 * Every process started and not yet exited. They run in process groups of their own, so
 * nothing stops them when the test run dies: a run that exits or is sent SIGTERM (a CI
 * time limit, `timeout`) takes them down with it. (A SIGKILL or a crash of the run
 * cannot be caught.)
 */
const running = new Set<ChildProcess>();

function killAll(): void {
  for (const child of running) {
    if (child.pid === undefined) continue;
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}
process.once("exit", killAll);
process.once("SIGTERM", () => {
  killAll();
  process.exit(143);
});

export function startProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
  options: { cwd?: string } = {},
): RunningProcess {
  const child = spawn(command, args, {
    cwd: options.cwd ?? REPO_ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group: tsx runs the program in a child process, and a signal to
    // the group reaches both (SIGKILL to the tsx parent alone would orphan the child).
    detached: true,
  });
  running.add(child);
  child.once("exit", () => running.delete(child));
  let out = "";
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<number | string>((resolve) => {
    child.on("exit", (code, signal) => {
      resolve(code ?? signal ?? "unknown");
      for (const l of listeners) l();
    });
  });
  return {
    child,
    exited,
    output: () => out,
    waitForOutput(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${pattern} in output:\n${out.slice(-2000)}`));
        }, timeoutMs);
        const check = () => {
          const m = out.match(pattern);
          if (m) {
            clearTimeout(timer);
            listeners.delete(check);
            resolve(m[0]);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(timer);
            listeners.delete(check);
            reject(new Error(`process exited before ${pattern}:\n${out.slice(-2000)}`));
          }
        };
        listeners.add(check);
        check();
      });
    },
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        // tsx relays SIGTERM/SIGINT to its child itself (sending them to the group too would
        // deliver them twice and defeat graceful shutdown); SIGKILL cannot be relayed.
        if (signal === "SIGKILL") process.kill(-child.pid, signal);
        else child.kill(signal);
      }
      return exited;
    },
  };
}
