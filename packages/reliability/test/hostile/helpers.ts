import { connect } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { KEY_LAST_USED_KEY } from "@terse/keys";
import { expect } from "chai";
import type { Redis } from "ioredis";

// Shared by the hostile-input suites: raw HTTP for what fetch refuses to send, and the
// checks every refusal must pass (the envelope, no internals).

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Writes `request` byte for byte to the server of `url` and reads the answer until the
 * server closes the connection (requests must say `Connection: close`, or be malformed).
 */
export function rawRequest(url: string, request: string | Buffer, timeoutMs = 10_000): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error("no answer in time")), timeoutMs);
    socket.on("data", (c: Buffer) => chunks.push(c));
    // The server may answer and close before it read everything we wrote: that is fine.
    socket.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code !== "EPIPE" && err.code !== "ECONNRESET") {
        clearTimeout(timer);
        reject(err);
      }
    });
    socket.on("close", () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString("latin1");
      const [head = "", ...rest] = text.split("\r\n\r\n");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const status = Number(statusLine.split(" ")[1]);
      if (!Number.isInteger(status)) {
        reject(new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`));
        return;
      }
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(":");
        if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status, headers, body: rest.join("\r\n\r\n") });
    });
    // No half-close after writing: the proxy takes a caller's FIN for a hang-up.
    socket.write(request);
  });
}

/** Signs of internals a response must never show. */
const INTERNALS = /\bat [\w.<>]+ \(|\.ts:\d+|node_modules|\/work\/|Error: |prisma|SELECT |ioredis/i;

export function expectNoInternals(body: string): void {
  expect(body, "internals in the response body").not.to.match(INTERNALS);
}

export interface Envelope {
  error: { message: string; type: string; code: string; param?: string };
}

/** A 4xx of ours: the status, the one envelope, nothing internal. */
export function expectRefusal(status: number, body: string, expected: number | number[]): Envelope {
  const allowed = Array.isArray(expected) ? expected : [expected];
  expect(allowed, `status ${status}: ${body.slice(0, 300)}`).to.include(status);
  expectNoInternals(body);
  const parsed = JSON.parse(body) as Envelope;
  expect(parsed.error.message).to.be.a("string");
  expect(parsed.error.type).to.be.a("string");
  expect(parsed.error.code).to.be.a("string");
  return parsed;
}

const ORIGINAL_PROTO_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));

/** The names of anything added to Object.prototype since start (a polluted prototype shows up everywhere). */
export function prototypeAdditions(): string[] {
  return Object.getOwnPropertyNames(Object.prototype).filter((n) => !ORIGINAL_PROTO_NAMES.has(n));
}

/**
 * heapUsed after a full collection. Without node --expose-gc the flag is turned on at
 * run time and gc() taken from a fresh context (V8 installs it there).
 */
export function heapUsed(): number {
  let gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as () => void;
  }
  gc();
  return process.memoryUsage().heapUsed;
}

export const MB = 1024 * 1024;

/**
 * The data plane's key cache and quota state, what a refused call must leave alone: not
 * the rate-limit windows (credits move them) nor the keys' last-use notes (a call refused
 * for its body still used its key: DESIGN.md section 7's last_used_at).
 */
export async function refusalState(redis: Redis): Promise<string> {
  const keys = (await redis.keys("svc:*")).filter((k) => !k.startsWith("svc:rl:") && k !== KEY_LAST_USED_KEY).sort();
  const values = await Promise.all(keys.map((k) => redis.dumpBuffer(k)));
  return JSON.stringify({ keys, values: values.map((v) => v?.toString("base64")) });
}
