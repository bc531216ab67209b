import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";

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

/** Names of the caller's headers that must not reach the upstream. */
export function requestHeadersToDrop(headers: IncomingHttpHeaders): string[] {
  const listed = String(headers.connection ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  // host is left alone: http-proxy (changeOrigin) has already set the upstream's.
  return [
    ...Object.keys(headers).filter((h) => HOP_BY_HOP.has(h) || TERSE_CREDENTIALS.has(h)),
    ...listed,
    "content-length",
  ];
}

/** Upstream response headers as relayed: unchanged but for hop-by-hop ones and, if the body is rewritten, its length. */
export function responseHeaders(headers: IncomingHttpHeaders, bodyRewritten: boolean): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (HOP_BY_HOP.has(name) || value === undefined) continue;
    if (bodyRewritten && name === "content-length") continue;
    out[name] = value;
  }
  return out;
}
