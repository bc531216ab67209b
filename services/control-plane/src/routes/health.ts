import type { Express, Request, Response } from "express";
import type { AppContext } from "../context.ts";
import type { HttpMetrics } from "../http/metrics.ts";

// /healthz: the process is up. /readyz: Postgres and Redis answer and we are not
// shutting down (load balancers stop sending traffic). /metrics: Prometheus.

const READY_TIMEOUT_MS = 2_000;

async function reachable(check: () => Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check().then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

export function register(app: Express, ctx: AppContext, metrics: HttpMetrics): void {
  app.get("/healthz", (_req: Request, res: Response) => {
    res.json({ status: "ok" });
  });

  app.get("/readyz", async (_req: Request, res: Response) => {
    const [postgres, redis] = await Promise.all([
      reachable(() => ctx.db.$queryRaw`SELECT 1`),
      reachable(() => ctx.redis.ping()),
    ]);
    const ready = postgres && redis && !ctx.lifecycle.shuttingDown;
    res
      .status(ready ? 200 : 503)
      .json({ status: ready ? "ok" : "unavailable", postgres, redis, shutting_down: ctx.lifecycle.shuttingDown });
  });

  app.get("/metrics", async (_req: Request, res: Response) => {
    res.set("Content-Type", metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
