import { readFileSync } from "node:fs";
import { type AddressInfo, createServer, type Server } from "node:net";

/**
 * Polls until `check` returns a value other than undefined/false, or fails with the
 * last error after the deadline. The way tests wait for something to happen: never a
 * fixed sleep.
 */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<Exclude<T, false | undefined>> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as Exclude<T, false | undefined>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const reason = lastError instanceof Error ? `: ${lastError.message}` : "";
      throw new Error(`timed out waiting for ${options.what ?? "condition"}${reason}`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 20));
  }
}

/** Listens on 127.0.0.1 on a free port and returns `http://127.0.0.1:<port>`. */
export async function listen(server: Server): Promise<string> {
  return `http://127.0.0.1:${await listenOn(server, 0)}`;
}

/** Listens on `port` of 127.0.0.1 (0: any free one); the port it has. */
async function listenOn(server: Server, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

export async function close(server: Server): Promise<void> {
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/**
 * A port that was free a moment ago, for processes that must be told their port up front.
 * Taken below the kernel's range for outgoing connections' ports (32768-60999 here): a port
 * from that range, as binding port 0 gives, may be taken as the local end of any outgoing
 * connection between this check and the process's bind, which a loaded CI run met (a
 * worker's metrics port in use, EADDRINUSE). Tried at random, each checked by a bind.
 */
export async function freePort(): Promise<number> {
  const below = outgoingPortsStart();
  for (let attempt = 0; below - LOWEST_PORT >= 1_000 && attempt < 50; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (below - LOWEST_PORT));
    if (await canListen(port)) return port;
  }
  return listenedPort(0);
}

/** The lowest port a test process is given: above the services' usual ports (5432, 6379, 8080, 9464). */
const LOWEST_PORT = 10_000;

/** Where the kernel's range for outgoing connections starts (Linux's default where it cannot be read). */
function outgoingPortsStart(): number {
  try {
    const range = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8");
    const low = Number(range.trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

async function canListen(port: number): Promise<boolean> {
  try {
    await listenedPort(port);
    return true;
  } catch {
    return false;
  }
}

/** Listens on `port` of 127.0.0.1 (0: any) and closes again; the port it had. */
async function listenedPort(port: number): Promise<number> {
  const server = createServer();
  const bound = await listenOn(server, port);
  await close(server);
  return bound;
}
