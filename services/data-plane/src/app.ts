import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type DataPlaneConfig, httpServerOptions } from "@terse/config";
import { ApiError, answerClientError } from "@terse/errors";
import type { Logger } from "@terse/logger";
import { resolveOperation } from "@terse/wire-formats";
import { Redis } from "ioredis";
import { KeyLease } from "@terse/key-leases";
import { Authenticator, type LocalAuth } from "./domain/authenticate.ts";
import { KeyCopies } from "./domain/key-copies.ts";
import { QuotaView } from "./domain/quota-view.ts";
import { RateCredits } from "./domain/rate-credits.ts";
import { createProxyMetrics, type ProxyMetrics } from "./http/metrics.ts";
import { createProxyHandler, pathOf } from "./http/proxy.ts";
import { newRequestId, sendError } from "./http/respond.ts";
import { AuthScript } from "./infra/auth-script.ts";
import { KeyUseNotes } from "./infra/key-use.ts";
import { RecallStore } from "./infra/recall-store.ts";
import { settledWithin } from "./infra/settled-within.ts";
import { UsagePublisher } from "./infra/usage-publisher.ts";

export interface DataPlane {
  server: Server;
  publisher: UsagePublisher;
  quota: QuotaView;
  /** Readiness false, no new connections, in-flight requests finish (bounded), then everything closes. */
  /** Readiness off, `drainDelayMs` still serving, then the listener closes and in-flight work gets `graceMs`. */
  shutdown(graceMs: number, drainDelayMs?: number): Promise<void>;
}

/** Builds the data plane from config: main.ts and the tests start it the same way. */
export async function createDataPlane(config: DataPlaneConfig, logger: Logger): Promise<DataPlane> {
  // Fail fast while Redis is away: auth answers 503 at once instead of queueing requests.
  // Auto-pipelining sends the script calls of concurrent requests in one write: under
  // load, one syscall for many requests instead of one each.
  const redis = new Redis(config.REDIS_URL, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    enableAutoPipelining: true,
  });
  const subscriber = new Redis(config.REDIS_URL, { lazyConnect: true });
  const queueConnection = new Redis(config.REDIS_URL, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    lazyConnect: true,
  });
  for (const c of [redis, subscriber, queueConnection]) c.on("error", () => undefined);
  await Promise.all([redis.connect(), subscriber.connect(), queueConnection.connect()]);

  const metrics = createProxyMetrics({ defaultMetrics: config.NODE_ENV !== "test" });
  const quota = new QuotaView(redis, subscriber, logger);
  await quota.start();
  const publisher = new UsagePublisher(queueConnection, logger, {
    maxBuffered: config.USAGE_BUFFER_MAX_EVENTS,
    dropped: metrics.usageDropped,
  });
  await publisher.ready(); // a data plane that cannot meter does not start
  const script = new AuthScript(redis, config.RATE_CREDIT_SECONDS);
  const local = await startLocalAuth(config, redis, subscriber, script, logger, metrics);
  const keyUse = new KeyUseNotes(redis);
  const authenticator = new Authenticator(redis, script, quota, local?.auth, (keyId, nowMs) =>
    keyUse.note(keyId, nowMs),
  );
  const recallStore = new RecallStore(redis, config.RECALL_TTL_SECONDS, logger);
  const proxy = createProxyHandler({ config, authenticator, publisher, logger, metrics, recallStore });
  const lifecycle = { shuttingDown: false };

  const server = createServer(httpServerOptions(config), (req, res) => {
    // A throw out of a request listener is an uncaught exception: the process would die.
    try {
      dispatch(req, res);
    } catch (err) {
      sendError(res, err, newRequestId(), logger);
    }
  }).on("clientError", answerClientError);

  function dispatch(req: IncomingMessage, res: ServerResponse): void {
    const path = pathOf(req.url);
    if (lifecycle.shuttingDown) res.setHeader("Connection", "close");
    const resolved = resolveOperation(path, req.headers);
    if (resolved) {
      if (req.method !== resolved.op.method) {
        return void fail(req, res, new ApiError("method_not_allowed", { headers: { Allow: resolved.op.method } }));
      }
      return void proxy(req, res, resolved);
    }
    if (req.method === "GET" && path === "/healthz") return void json(res, 200, { status: "ok" });
    if (req.method === "GET" && path === "/readyz") return void readiness(res);
    if (req.method === "GET" && path === "/metrics") return void exposeMetrics(res);
    fail(req, res, new ApiError("route_not_found"));
  }

  /** An answer of the dispatcher's own (404, 405), logged like every proxy answer: a caller can see what it called. */
  function fail(req: IncomingMessage, res: ServerResponse, err: ApiError): void {
    const start = process.hrtime.bigint();
    const id = newRequestId();
    const status = sendError(res, err, id, logger);
    const ms = Math.round(Number(process.hrtime.bigint() - start) / 1e5) / 10;
    logger.info({ req_id: id, method: req.method, path: pathOf(req.url), status, ms }, "refused");
  }

  async function readiness(res: ServerResponse): Promise<void> {
    if (lifecycle.shuttingDown) return json(res, 503, { status: "shutting down" });
    try {
      await redis.ping();
      json(res, 200, { status: "ready" });
    } catch {
      json(res, 503, { status: "redis unreachable" });
    }
  }

  async function exposeMetrics(res: ServerResponse): Promise<void> {
    metrics.usageBuffered.set(publisher.buffered);
    const body = await metrics.registry.metrics();
    res.writeHead(200, { "Content-Type": metrics.registry.contentType }).end(body);
  }

  async function shutdown(graceMs: number, drainDelayMs = 0): Promise<void> {
    lifecycle.shuttingDown = true; // /readyz answers 503, responses say Connection: close
    await new Promise((resolve) => setTimeout(resolve, drainDelayMs));
    // Requests in flight get the grace period; the usage events they leave get what is
    // left of it and a fifth more (at least a second), so a Redis away for a while at
    // shutdown loses nothing, and nothing waits past that on a Redis that never answers.
    const deadline = performance.now() + graceMs + Math.max(1_000, graceMs / 5);
    const left = () => deadline - performance.now();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    await closed;
    clearTimeout(timer);
    await settledWithin(local?.stop(), left());
    await publisher.drain(left());
    quota.stop();
    await publisher.close();
    for (const c of [redis, subscriber, queueConnection]) c.disconnect();
  }

  return { server, publisher, quota, shutdown };
}

/**
 * This process's copies of key records and its rate credits (docs/operations.md), so a
 * known key with a credit is admitted without a round trip. Without credits
 * (RATE_CREDIT_SECONDS=0) every call goes to Redis anyway, and copies would save nothing.
 */
async function startLocalAuth(
  config: DataPlaneConfig,
  redis: Redis,
  subscriber: Redis,
  script: AuthScript,
  logger: Logger,
  metrics: ProxyMetrics,
): Promise<{ auth: LocalAuth; stop(): Promise<void> } | undefined> {
  if (config.RATE_CREDIT_SECONDS === 0) return undefined;
  const credits = new RateCredits(script, {
    holdSeconds: config.RATE_CREDIT_SECONDS,
    settleMs: config.RATE_CREDIT_SETTLE_MS,
    onSettleFailed: (keys) => logger.warn({ keys }, "rate credits could not be settled; they stay counted as used"),
  });
  const lease = new KeyLease(redis, subscriber, {
    ttlMs: config.KEY_LEASE_TTL_MS,
    onDrop: (keys) => {
      copies.drop(keys);
      credits.retire(keys);
    },
    onEvent: (event) => {
      if (event.kind === "change") return metrics.keyChanges.inc();
      metrics.keyLeaseLapses.inc();
      logger.warn({ reason: event.reason }, "key lease lapsed: copies dropped, every key asks Redis until renewed");
    },
  });
  const copies = new KeyCopies(lease);
  await lease.start();
  return {
    auth: { copies, credits },
    async stop() {
      await lease.stop();
      await credits.drain();
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) }).end(text);
}
