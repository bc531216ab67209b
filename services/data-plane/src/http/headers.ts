import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";
import { providerKeyForms, withoutKeyForms } from "../domain/redact.ts";

/** RFC 9110 hop-by-hop headers: meaningful for one connection only, never forwarded. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** Caller headers that are ours: the service key and the provider key never leave the proxy. */
const TERSE_CREDENTIALS = new Set(["authorization", "x-provider-key", "x-api-key", "x-goog-api-key"]);

/**
 * Ours to answer, not the upstream's: the proxy read the whole body already (Node sent
 * the 100 Continue), and the body forwarded is a new one, plain (any coding the caller
 * used was undone) and of a known length. `X-Terse-Recall` is a request to terse.
 */
const ANSWERED_HERE = new Set(["expect", "content-length", "content-encoding", "x-terse-recall"]);

/**
 * The headers the upstream receives: the caller's, less hop-by-hop ones (and those its
 * Connection header names), our credentials and what the proxy answered itself, plus the
 * provider's own (its key where the provider wants it) and the new body's length (none
 * for a request without a body). The
 * usage tap reads the body, so it is asked for uncompressed. `host` is left for
 * http-proxy (changeOrigin) to set to the upstream's.
 */
export function upstreamRequestHeaders(
  caller: IncomingHttpHeaders,
  provider: Record<string, string>,
  contentLength: number | undefined,
): IncomingHttpHeaders {
  const listed = namedByConnection(caller.connection);
  const out: IncomingHttpHeaders = {};
  // for-in over Node's header object (a plain own-property record): no entries array per request.
  for (const name in caller) {
    if (HOP_BY_HOP.has(name) || TERSE_CREDENTIALS.has(name) || ANSWERED_HERE.has(name) || listed?.has(name)) continue;
    out[name] = caller[name];
  }
  Object.assign(out, provider);
  if (contentLength !== undefined) out["content-length"] = String(contentLength);
  out["accept-encoding"] = "identity";
  return out;
}

/**
 * The headers a Connection header names (hop-by-hop for this connection), lower-case;
 * undefined when it names none but itself ("keep-alive", "close": the common case).
 */
function namedByConnection(connection: string | undefined): Set<string> | undefined {
  if (connection === undefined) return undefined;
  const lower = connection.toLowerCase();
  if (lower === "keep-alive" || lower === "close") return undefined;
  return new Set(lower.split(",").map((h) => h.trim()));
}

/**
 * Whether an upstream answer is relayed as a refusal: read whole, the provider key taken
 * out of its body, no stream filter or recall. A provider answers a model call with a 2xx;
 * a redirect's body (and its Location) may echo the request's URL, which for Gemini holds the key.
 */
export const isUpstreamRefusal = (status: number): boolean => status >= 300;

/**
 * Upstream response headers as relayed: unchanged but for hop-by-hop ones, the length of a
 * rewritten body, and the provider key wherever a value echoes it (a Location holding
 * Gemini's `key`, a gateway's debugging header).
 */
export function responseHeaders(
  headers: IncomingHttpHeaders,
  bodyRewritten: boolean,
  providerKey: string,
): OutgoingHttpHeaders {
  const forms = providerKeyForms(providerKey);
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) {
    const value = headers[name];
    if (HOP_BY_HOP.has(name) || value === undefined) continue;
    if (bodyRewritten && name === "content-length") continue;
    out[name] = typeof value === "string" ? withoutKeyForms(value, forms) : value.map((v) => withoutKeyForms(v, forms));
  }
  return out;
}
