import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

export interface ProxyMetrics {
  registry: Registry;
  requests: Counter<"provider" | "status">;
  duration: Histogram<"provider" | "status">;
  authLookups: Counter<"result">;
  refusals: Counter<"code">;
  upstreamTtfb: Histogram<"provider">;
  clientAborts: Counter;
  usageDropped: Counter;
  usageBuffered: Gauge;
  /** One answered request: its count and duration, by provider and status. */
  answered(provider: string, status: number, seconds: number): void;
  upstreamTtfbOf(provider: string): { observe(seconds: number): void };
  authLookupsOf(result: string): { inc(): void };
}

/**
 * A metric's child per label set, made once: `labels()` checks the label names and
 * builds the label object each time it is called, and the hot path would call it a few
 * times per request. The sets are few (providers x statuses, hit/miss).
 */
function childrenOf<C>(make: (...values: string[]) => C): (...values: string[]) => C {
  const children = new Map<string, C>();
  return (...values) => {
    const key = values.join("\u0000");
    let child = children.get(key);
    if (child === undefined) {
      child = make(...values);
      children.set(key, child);
    }
    return child;
  };
}

/** Prometheus metrics of one data-plane process (each cluster worker serves its own /metrics). */
export function createProxyMetrics(options: { defaultMetrics: boolean }): ProxyMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const metrics = {
    registry,
    requests: new Counter({
      name: "terse_proxy_requests_total",
      help: "Proxy requests by provider and the status returned to the caller",
      labelNames: ["provider", "status"],
      registers: [registry],
    }),
    duration: new Histogram({
      name: "terse_proxy_request_duration_seconds",
      help: "Whole request time as the caller sees it (streams: to the last byte), by provider and status",
      labelNames: ["provider", "status"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [registry],
    }),
    authLookups: new Counter({
      name: "terse_auth_cache_lookups_total",
      help: "Service-key lookups in the Redis key cache: hit (key found) or miss (unknown or revoked)",
      labelNames: ["result"],
      registers: [registry],
    }),
    refusals: new Counter({
      name: "terse_proxy_refusals_total",
      help: "Requests answered by the proxy itself, by error code (auth, rate limit, quota, bad input)",
      labelNames: ["code"],
      registers: [registry],
    }),
    upstreamTtfb: new Histogram({
      name: "terse_upstream_time_to_first_byte_seconds",
      help: "Time from sending the request upstream to the response head",
      labelNames: ["provider"],
      buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    clientAborts: new Counter({
      name: "terse_proxy_client_aborts_total",
      help: "Requests whose caller hung up before the answer ended (upstream aborted)",
      registers: [registry],
    }),
    usageDropped: new Counter({
      name: "terse_usage_events_dropped_total",
      help: "Usage events dropped because the buffer was full while Redis was unreachable",
      registers: [registry],
    }),
    usageBuffered: new Gauge({
      name: "terse_usage_events_buffered",
      help: "Usage events waiting to be enqueued",
      registers: [registry],
    }),
  };
  const outcome = childrenOf((provider, status) => ({
    requests: metrics.requests.labels(provider, status),
    duration: metrics.duration.labels(provider, status),
  }));
  return {
    ...metrics,
    answered(provider, status, seconds) {
      const child = outcome(provider, String(status));
      child.requests.inc();
      child.duration.observe(seconds);
    },
    upstreamTtfbOf: childrenOf((provider) => metrics.upstreamTtfb.labels(provider)),
    authLookupsOf: childrenOf((result) => metrics.authLookups.labels(result)),
  };
}
