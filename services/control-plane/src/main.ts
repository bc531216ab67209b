// The control plane as a process: config, migrations, key-cache resync, HTTP and gRPC,
// graceful shutdown. `pnpm --filter
// @terse/control-plane start`, or `tsx services/control-plane/src/main.ts`.
import { boundHostPort, controlPlaneEnv, loadConfigOrExit } from "@terse/config";
import { createDb, type Db, migrate } from "@terse/db";
import { KEY_USE_NOTE_MS } from "@terse/keys";
import { createLogger, type Logger } from "@terse/logger";
import type { Redis } from "ioredis";
import { createApp, createHttpServer } from "./app.ts";
import type { Lifecycle } from "./context.ts";
import { resyncKeyCache } from "./domain/cache-resync.ts";
import { recordKeyUse } from "./domain/key-use.ts";
import { warmUpPasswords } from "./domain/passwords.ts";
import { startGrpcServer } from "./grpc/server.ts";
import { KeyCache } from "./infra/key-cache.ts";
import { KeyStore } from "./infra/key-store.ts";
import { createRedis } from "./infra/redis.ts";

/** How often the generation stamp is checked; a missing stamp (Redis flushed or replaced) triggers a resync. */
const CACHE_WATCH_INTERVAL_MS = 5_000;

/**
 * Runs `task` every `ms`, never two at once (a slow run skips the next turn); a failure
 * is logged and the next turn tries again.
 */
function repeat(ms: number, task: () => Promise<unknown>, onFailure: (err: unknown) => void): NodeJS.Timeout {
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    try {
      await task();
    } catch (err) {
      onFailure(err);
    } finally {
      running = false;
    }
  }, ms);
  return timer.unref();
}

/** Watches the generation stamp and rebuilds the cache when Redis lost it. */
function watchKeyCache(deps: { db: Db; redis: Redis; logger: Logger; leaseTtlMs: number }): NodeJS.Timeout {
  const cache = new KeyCache(deps.redis, { leaseTtlMs: deps.leaseTtlMs });
  const store = new KeyStore(deps.db);
  const check = async () => {
    if (await cache.hasGeneration()) return;
    deps.logger.warn("key cache generation stamp missing; resyncing");
    await resyncKeyCache({ db: deps.db, store, cache, logger: deps.logger });
  };
  return repeat(CACHE_WATCH_INTERVAL_MS, check, (err) => deps.logger.warn({ err }, "key cache check failed; retrying"));
}

/** Carries the data plane's notes of keys used into `last_used_at`, every few seconds. */
function watchKeyUse(deps: { db: Db; redis: Redis; logger: Logger }): NodeJS.Timeout {
  const fail = (err: unknown) => deps.logger.warn({ err }, "recording keys' last use failed; retrying");
  return repeat(KEY_USE_NOTE_MS, () => recordKeyUse(deps), fail);
}

async function main(): Promise<void> {
  const config = loadConfigOrExit(controlPlaneEnv);
  const logger = createLogger({ service: "control-plane", level: config.LOG_LEVEL });
  if (config.MIGRATE_ON_START) {
    const migrated = await migrate(config.DATABASE_URL);
    if (migrated.applied.length > 0) logger.info({ applied: migrated.applied }, "migrations applied");
  }

  const db = createDb(config.DATABASE_URL);
  const redis = createRedis(config.REDIS_URL);
  redis.on("error", (err) => logger.warn({ err: err.message }, "redis connection error"));
  await redis.connect();
  const leaseTtlMs = config.KEY_LEASE_TTL_MS;
  await resyncKeyCache({ db, store: new KeyStore(db), cache: new KeyCache(redis, { leaseTtlMs }), logger });
  await warmUpPasswords();
  const watcher = watchKeyCache({ db, redis, logger, leaseTtlMs });
  const keyUse = watchKeyUse({ db, redis, logger });

  const lifecycle: Lifecycle = { shuttingDown: false };
  const server = createHttpServer(createApp({ config, db, redis, logger, lifecycle }), config);
  let grpc: Awaited<ReturnType<typeof startGrpcServer>> | undefined;

  const shutdown = async (signal: string) => {
    if (lifecycle.shuttingDown) return;
    lifecycle.shuttingDown = true; // /readyz answers 503 from now on
    logger.info({ signal }, "shutting down");
    clearInterval(watcher);
    clearInterval(keyUse);
    // Load balancers see the 503 and stop routing here while we still serve.
    await new Promise((resolve) => setTimeout(resolve, config.SHUTDOWN_DRAIN_DELAY_MS));
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Keep-alive connections go as soon as their request in flight is answered...
    const reaper = setInterval(() => server.closeIdleConnections(), 100);
    // ...and in-flight requests get the grace period, then their connections are cut.
    const force = setTimeout(() => server.closeAllConnections(), config.SHUTDOWN_GRACE_MS).unref();
    await Promise.all([closed, grpc?.stop()]);
    clearInterval(reaper);
    clearTimeout(force);
    await db.$disconnect();
    await redis.quit().catch(() => redis.disconnect());
    logger.info("stopped");
    process.exit(0);
  };
  // Every signal, not only the first: a second one must not kill the process mid-shutdown.
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.CONTROL_PLANE_PORT, config.BIND_HOST, resolve);
  });
  grpc = await startGrpcServer({ config, db, redis, logger }); // the metering worker's RecordUsage
  const address = boundHostPort(server.address());
  logger.info({ address, grpc: grpc.address }, "control plane started");
  process.stdout.write(`control-plane listening on http://${address} (gRPC ${grpc.address})\n`);
}

await main();
