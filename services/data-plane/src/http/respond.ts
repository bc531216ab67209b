import { randomFillSync } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import { ApiError } from "@terse/errors";
import type { Logger } from "@terse/logger";

/** Ids drawn per refill of the random pool. */
const IDS_PER_POOL = 256;
const ID_BYTES = 16;
const pool = Buffer.alloc(IDS_PER_POOL * ID_BYTES);
let next = IDS_PER_POOL;

/**
 * The id of one request, in X-Terse-Request-Id, the logs and the usage event (whose
 * event_id the metering path deduplicates on): 128 random bits in hex. Drawn from a pool
 * refilled every 256 ids, as randomUUID draws from its own, but without the UUID's
 * dashes to format and strip again on every request.
 */
export function newRequestId(): string {
  if (next === IDS_PER_POOL) {
    randomFillSync(pool);
    next = 0;
  }
  const at = next++ * ID_BYTES;
  return `req_${pool.toString("hex", at, at + ID_BYTES)}`;
}

/**
 * The status recorded (metrics, usage event) for a call whose caller hung up before it
 * was answered: nginx's "client closed request". Never sent: there is no one to send it to.
 */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * Writes the proxy's own error answer: the one envelope, with the request id under each
 * name a client reads it by (the OpenAI SDKs' x-request-id, the Anthropic SDKs' request-id).
 */
export function sendError(res: ServerResponse, err: unknown, requestId: string, logger: Logger): number {
  const apiError = err instanceof ApiError ? err : new ApiError("internal_error");
  if (!(err instanceof ApiError)) logger.error({ err, req_id: requestId }, "unexpected error in the proxy");
  if (res.headersSent) {
    res.destroy();
    return apiError.status;
  }
  const body = JSON.stringify(apiError.toEnvelope());
  res.writeHead(apiError.status, {
    ...apiError.headers,
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(body),
    "X-Request-Id": requestId,
    "Request-Id": requestId,
    "X-Terse-Request-Id": requestId,
  });
  res.end(body);
  return apiError.status;
}

/**
 * Relays one chunk of `source` to the caller; while the caller's side is full, `source`
 * waits (paused until it drains), so a relayed answer holds no more than the caller has yet to take.
 */
export function writeChunk(res: ServerResponse, source: Readable, chunk: string | Buffer): void {
  if (res.destroyed || chunk.length === 0) return;
  if (!res.write(chunk)) {
    source.pause();
    res.once("drain", () => source.resume());
  }
}
