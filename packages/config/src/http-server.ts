import type { ServerOptions } from "node:http";
import type { AddressInfo } from "node:net";

// What the HTTP services make of their bind and receive-limit settings, in one place.

export interface HttpReceiveLimits {
  HTTP_HEADERS_TIMEOUT_MS: number;
  HTTP_REQUEST_TIMEOUT_MS: number;
}

/** HTTP_HEADERS_TIMEOUT_MS and HTTP_REQUEST_TIMEOUT_MS as the options of `http.createServer`. */
export function httpServerOptions(limits: HttpReceiveLimits): ServerOptions {
  return {
    headersTimeout: limits.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeout: limits.HTTP_REQUEST_TIMEOUT_MS,
    // Node checks both limits on a timer, by default every 30 s: a 10 s limit would act
    // after up to 40 s. A tenth of the header limit (at most once a second) keeps each
    // within a tenth of its value; the check walks only connections mid-request.
    connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(limits.HTTP_HEADERS_TIMEOUT_MS / 10))),
  };
}

/** `host:port` of a bound socket: what a service prints is what it bound. */
export function boundHostPort(address: AddressInfo | string | null): string {
  if (address === null || typeof address === "string") return String(address);
  return joinHostPort(address.address, address.port);
}

/** `host:port`, an IPv6 address in brackets (`[::]:8081`), as URLs and gRPC want it. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}
