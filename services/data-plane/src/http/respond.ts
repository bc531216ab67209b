import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { ApiError } from "@terse/errors";
import type { Logger } from "@terse/logger";

/** The id of one request, in X-Terse-Request-Id, the logs and the usage event. */
export function newRequestId(): string {
  return `req_${randomUUID().replaceAll("-", "")}`;
}

/**
 * The status recorded (metrics, usage event) for a call whose caller hung up before it
 * was answered: nginx's "client closed request". Never sent: there is no one to send it to.
 */
export const CLIENT_CLOSED_REQUEST = 499;

/** Writes the proxy's own error answer: the one envelope, with both request-id headers. */
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
    "X-Terse-Request-Id": requestId,
  });
  res.end(body);
  return apiError.status;
}
