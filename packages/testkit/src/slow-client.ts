import { connect } from "node:net";

/** What a server did with a request sent too slowly. */
export interface SlowClientResult {
  /** Everything the server wrote before it closed the connection. */
  response: string;
  /** The status of its answer, if it answered. */
  status: number | undefined;
  /** The body of its answer. */
  body: string;
  /** ms from the connection to the server closing it. */
  closedAfterMs: number;
}

/**
 * A caller that never finishes its request: writes `head` on a raw connection, then one
 * more `trickle` every `everyMs` (a slowloris sender; no trickle: it just stops, as a body
 * shorter than its Content-Length does) until the server closes the connection, or fails
 * after `giveUpMs`.
 */
export function slowClient(
  url: string,
  head: string,
  options: { trickle?: string; everyMs?: number; giveUpMs?: number } = {},
): Promise<SlowClientResult> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let response = "";
    let started = 0;
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server held a request sent too slowly open for ${options.giveUpMs ?? 20_000} ms`));
    }, options.giveUpMs ?? 20_000);
    socket.once("connect", () => {
      started = performance.now();
      socket.write(head);
      const { trickle } = options;
      if (trickle) timer = setInterval(() => socket.writable && socket.write(trickle), options.everyMs ?? 50);
    });
    socket.on("data", (chunk) => {
      response += chunk.toString();
    });
    socket.on("error", () => undefined); // a reset ends it as a close does
    socket.once("close", () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      const status = Number(response.match(/^HTTP\/1\.1 (\d{3}) /)?.[1]) || undefined;
      const body = response.slice(response.indexOf("\r\n\r\n") + 4);
      resolve({ response, status, body, closedAfterMs: performance.now() - started });
    });
  });
}

/** A request that says its body is 100 bytes longer than what it sends, and then waits. */
export function truncatedRequest(path: string, headers: Record<string, string>, body: string): string {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  return [
    `POST ${path} HTTP/1.1`,
    "Host: terse",
    ...lines,
    `Content-Length: ${Buffer.byteLength(body) + 100}`,
    "",
    body,
  ].join("\r\n");
}

/**
 * Throws unless the server answered `408 request_timeout` (the envelope) and closed the
 * connection no sooner than `limitMs` after it opened, and well before Node's own default
 * limits and their 30 s check would have (`withinMs`).
 */
export function assertRequestTimeout(result: SlowClientResult, limitMs: number, withinMs = 10_000): void {
  const code =
    result.status === 408 ? (JSON.parse(result.body) as { error?: { code?: string } }).error?.code : undefined;
  if (code !== "request_timeout") throw new Error(`expected 408 request_timeout, got:\n${result.response}`);
  // Node's deadline starts at the request's first byte, a moment after the connection.
  if (result.closedAfterMs < limitMs - 10 || result.closedAfterMs > withinMs)
    throw new Error(`closed after ${result.closedAfterMs.toFixed(0)} ms, expected ${limitMs} to ${withinMs}`);
}
