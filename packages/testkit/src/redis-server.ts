import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunningProcess, startProcess } from "./process.ts";
import { freePort } from "./wait.ts";

/**
 * A redis-server of the test's own, which the test may kill, restart and flush: the
 * machine's shared Redis is never touched. It keeps an append-only file as production's
 * Redis does (docker-compose.yml: the usage queue lives there): fsynced every second by
 * default, so a clean restart loses nothing and a crash up to a second of writes;
 * `appendfsync: "always"` closes that window at a cost on every write.
 */
export interface RedisServer {
  url: string;
  port: number;
  /** Stops the server (SIGKILL: a crash; SIGTERM: a clean shutdown). */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port with the same data directory. */
  start(): Promise<void>;
  /** Suspends it (SIGSTOP): connections stay open and commands sent wait unanswered, as on a stalled host. */
  freeze(): void;
  /** Lets a frozen server go on (SIGCONT): the waiting commands are answered. */
  thaw(): void;
  /** Stops it and removes its data. */
  destroy(): Promise<void>;
}

export async function startRedisServer(options: { appendfsync?: "everysec" | "always" } = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), "terse-redis-"));
  const port = await freePort();
  let proc: RunningProcess | undefined;
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", ""];
  const signalIfRunning = (signal: NodeJS.Signals) => {
    const child = proc?.child;
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null)
      process.kill(child.pid, signal);
  };
  const server: RedisServer = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      const aof = ["--appendonly", "yes", "--appendfsync", options.appendfsync ?? "everysec"];
      proc = startProcess("redis-server", [...args, ...aof], {});
      await proc.waitForOutput(/Ready to accept connections/);
    },
    async stop(signal = "SIGKILL") {
      const exited = proc?.stop(signal);
      // A frozen server takes SIGKILL as it is; another signal waits until it runs again.
      // Continued only after the signal is sent: run before a kill, it could still answer
      // what a test froze it to hold unanswered.
      if (signal !== "SIGKILL") signalIfRunning("SIGCONT");
      await exited;
      proc = undefined;
    },
    freeze: () => signalIfRunning("SIGSTOP"),
    thaw: () => signalIfRunning("SIGCONT"),
    async destroy() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}
