import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { envelopeFor, ERROR_CATALOGUE, type ErrorCode } from "./catalogue.ts";

/** Node's parser error codes, by what they mean for the caller. */
function codeOf(err: NodeJS.ErrnoException): ErrorCode {
  if (err.code === "HPE_HEADER_OVERFLOW") return "request_header_too_large";
  if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") return "request_timeout";
  return "malformed_request";
}

/**
 * Answers a request that Node's HTTP parser refused (malformed or oversized headers,
 * conflicting lengths) with the one envelope; Node's own answer is a bare status line.
 * Install on every HTTP server: `server.on("clientError", answerClientError)`.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // A response already under way on this connection (keep-alive) cannot be followed by
  // another; a reset or closed socket has no one to answer.
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (err.code === "ECONNRESET" || !socket.writable || inFlight) {
    socket.destroy();
    return;
  }
  const code = codeOf(err);
  const { status } = ERROR_CATALOGUE[code];
  const body = JSON.stringify(envelopeFor(code));
  // An id like every other answer's, so a caller's report of it can be told apart.
  const id = `req_${randomUUID().replaceAll("-", "")}`;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
  );
}
