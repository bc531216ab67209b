import { rememberedChars } from "@terse/compression";
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { BoundCounter, BoundHistogram } from "./bound-metrics.ts";

export interface ProxyMetrics {
  registry: Registry;
  refusals: Counter<"code">;
  clientAborts: Counter;
  /** Recall rounds: upstream calls terse made to continue an answer after a terse_recall call. */
  recallRounds: Counter;
  usageDropped: Counter;
  usageBuffered: Gauge;
  /** Key changes taken from the control plane (copies dropped, acknowledged). */
  keyChanges: Counter;
  /** Times this process's key lease lapsed (every copy dropped until renewed). */
  keyLeaseLapses: Counter;
  /** One answered request: its count and duration, by provider and status. */
  answered(provider: string, status: number, seconds: number): void;
  upstreamTtfbOf(provider: string): { observe(seconds: number): void };
  authLookupsOf(result: string): { inc(): void };
}

/**
 * A child per label set, made once: the label sets of the per-request metrics are few
 * (providers x statuses, hit/miss). Looked up by one Map per label (no key joined per call).
 */
function childrenOf<C>(make: (value: string) => C): (value: string) => C {
  const children = new Map<string, C>();
  return (value) => {
    let child = children.get(value);
    if (child === undefined) {
      child = make(value);
      children.set(value, child);
    }
    return child;
  };
}

/**
 * Prometheus metrics of one data-plane process (each cluster worker serves its own
 * /metrics). The four recorded on every request are bound-metrics.ts's; the rest are
 * prom-client's.
 */
export function createProxyMetrics(options: { defaultMetrics: boolean }): ProxyMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const requests = new BoundCounter(
    "terse_proxy_requests_total",
    "Proxy requests by provider and the status returned to the caller",
    ["provider", "status"],
    registry,
  );
  const duration = new BoundHistogram(
    "terse_proxy_request_duration_seconds",
    "Whole request time as the caller sees it (streams: to the last byte), by provider and status",
    ["provider", "status"],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registry,
  );
  const authLookups = new BoundCounter(
    "terse_auth_cache_lookups_total",
    "Service-key lookups: local (this process's copy, with a rate credit: no round trip), hit (found in the Redis key cache) or miss (unknown or revoked)",
    ["result"],
    registry,
  );
  new Gauge({
    name: "terse_compression_remembered_chars",
    help: "Characters compression remembers between requests in this process (forms, session states and trails, counts); bounded, 132 million at most",
    registers: [registry],
    collect() {
      this.set(rememberedChars());
    },
  });
  const upstreamTtfb = new BoundHistogram(
    "terse_upstream_time_to_first_byte_seconds",
    "Time from sending the request upstream to the response head",
    ["provider"],
    [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registry,
  );
  // By provider, then by status as a number: no String(status) per request.
  const outcome = childrenOf((provider) => {
    const byStatus = new Map<number, { requests: { inc(): void }; duration: { observe(value: number): void } }>();
    return (status: number) => {
      let child = byStatus.get(status);
      if (child === undefined) {
        child = {
          requests: requests.child(provider, String(status)),
          duration: duration.child(provider, String(status)),
        };
        byStatus.set(status, child);
      }
      return child;
    };
  });
  return {
    registry,
    refusals: new Counter({
      name: "terse_proxy_refusals_total",
      help: "Requests answered by the proxy itself, by error code (auth, rate limit, quota, bad input)",
      labelNames: ["code"],
      registers: [registry],
    }),
    clientAborts: new Counter({
      name: "terse_proxy_client_aborts_total",
      help: "Requests whose caller hung up before the answer ended (upstream aborted)",
      registers: [registry],
    }),
    recallRounds: new Counter({
      name: "terse_recall_rounds_total",
      help: "Upstream calls terse made to continue an answer after answering the model's terse_recall call",
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
    keyChanges: new Counter({
      name: "terse_key_changes_total",
      help: "Key changes announced by the control plane and taken by this process (its copies dropped)",
      registers: [registry],
    }),
    keyLeaseLapses: new Counter({
      name: "terse_key_lease_lapses_total",
      help: "Times this process's key lease lapsed: every copy dropped, keys read from Redis until it is renewed",
      registers: [registry],
    }),
    answered(provider, status, seconds) {
      const child = outcome(provider)(status);
      child.requests.inc();
      child.duration.observe(seconds);
    },
    upstreamTtfbOf: childrenOf((provider) => upstreamTtfb.child(provider)),
    authLookupsOf: childrenOf((result) => authLookups.child(result)),
  };
}
