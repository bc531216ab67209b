import { execFile } from "node:child_process";
import { chownSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./wait.ts";

const run = promisify(execFile);

/**
 * A Postgres cluster of the test's own (initdb in a temporary directory), which the
 * test may stop and start: the machine's shared server is never stopped. Postgres
 * refuses to run as root, so when we are root the cluster belongs to the `postgres`
 * user and its commands run as that user.
 */
export interface PostgresServer {
  /** The cluster's `postgres` database; the services migrate it on start. */
  url: string;
  /** Fast shutdown: open connections are cut, as when a managed database fails over. */
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/** The newest installed server's bin directory (Debian: /usr/lib/postgresql/<major>/bin). */
function binDir(): string {
  const majors = readdirSync("/usr/lib/postgresql")
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  if (!majors[0]) throw new Error("no Postgres server installed under /usr/lib/postgresql");
  return join("/usr/lib/postgresql", majors[0], "bin");
}

async function asOwner(command: string, args: string[]): Promise<void> {
  const bin = join(binDir(), command);
  if (userInfo().uid === 0) await run("runuser", ["-u", "postgres", "--", bin, ...args]);
  else await run(bin, args);
}

export async function startPostgresServer(): Promise<PostgresServer> {
  const dir = mkdtempSync(join(tmpdir(), "terse-pg-"));
  if (userInfo().uid === 0) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    chownSync(dir, Number(stdout), Number(gid));
  }
  const data = join(dir, "data");
  const port = await freePort();
  // fsync off: the cluster lives for one test run; durability is not what is tested here.
  await asOwner("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const server: PostgresServer = {
    url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    start: () => asOwner("pg_ctl", ["-D", data, "-o", options, "-l", join(dir, "log"), "-w", "start"]),
    stop: () => asOwner("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]),
    async destroy() {
      await server.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}
