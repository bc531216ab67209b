import type { NextFunction, Request, Response } from "express";
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

// Prometheus metrics: request count and latency by route pattern (never the raw path:
// ids would explode the label set) and status. One registry per app.

export interface HttpMetrics {
  registry: Registry;
  middleware: (req: Request, res: Response, next: NextFunction) => void;
}

export function createHttpMetrics(options: { defaultMetrics: boolean }): HttpMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const labelNames = ["method", "route", "status"] as const;
  const requests = new Counter({
    name: "http_requests_total",
    help: "HTTP requests answered, by route and status",
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request latency, by route and status",
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  return {
    registry,
    middleware(req, res, next) {
      const end = duration.startTimer();
      res.on("finish", () => {
        const route = req.route ? `${req.baseUrl}${String(req.route.path)}` : "unmatched";
        const labels = { method: req.method, route, status: String(res.statusCode) };
        requests.inc(labels);
        end(labels);
      });
      next();
    },
  };
}
