import { createServer, type Server } from "node:http";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

export interface WorkerMetrics {
  registry: Registry;
  events: Counter<"outcome">;
  grpcErrors: Counter;
  callEvents: Histogram;
  queueDepth: Gauge;
  queueLag: Gauge;
  deadLetters: Gauge;
}

export function createWorkerMetrics(defaultMetrics: boolean): WorkerMetrics {
  const registry = new Registry();
  if (defaultMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    events: new Counter({
      name: "terse_usage_events_total",
      help: "Usage events by outcome",
      labelNames: ["outcome"],
      registers: [registry],
    }),
    grpcErrors: new Counter({
      name: "terse_metering_grpc_errors_total",
      help: "Failed RecordUsage attempts (each is retried, by the client or by BullMQ)",
      registers: [registry],
    }),
    callEvents: new Histogram({
      name: "terse_metering_call_events",
      help: "Events per RecordUsage call (jobs in hand share a call)",
      buckets: [1, 5, 20, 100, 250, 500, 1000],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: "terse_usage_queue_depth",
      help: "Jobs of the usage queue not yet recorded (in work, waiting, or delayed while the control plane is away)",
      registers: [registry],
    }),
    queueLag: new Gauge({
      name: "terse_usage_queue_lag_seconds",
      help: "Age of the oldest job not yet recorded (in work, waiting, or delayed while the control plane is away)",
      registers: [registry],
    }),
    deadLetters: new Gauge({
      name: "terse_usage_dead_letter_jobs",
      help: "Jobs in the usage queue's failed set: events set aside as unrecordable, and batches out of retries",
      registers: [registry],
    }),
  };
}

/** /metrics, /healthz (process up) and /readyz (consuming) on the metrics port. */
export function startProbeServer(
  metrics: WorkerMetrics,
  at: { port: number; host: string },
  ready: () => Promise<boolean>,
  refresh: () => Promise<void>,
): Server {
  const server = createServer(async (req, res) => {
    if (req.url === "/healthz")
      return void res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
    if (req.url === "/readyz") {
      const ok = await ready().catch(() => false);
      return void res
        .writeHead(ok ? 200 : 503, { "content-type": "application/json" })
        .end(JSON.stringify({ status: ok ? "ready" : "not ready" }));
    }
    if (req.url === "/metrics") {
      await refresh().catch(() => undefined);
      return void res
        .writeHead(200, { "content-type": metrics.registry.contentType })
        .end(await metrics.registry.metrics());
    }
    res.writeHead(404).end();
  });
  server.listen(at.port, at.host);
  return server;
}
