import { Redis } from "ioredis";

/**
 * The control plane's Redis client. Commands fail fast instead of queueing while Redis
 * is unreachable: a key write must answer 503 `auth cache unavailable` at once, not
 * hang until a reconnect (and then land after the Postgres transaction gave up).
 */
export function createRedis(url: string): Redis {
  return new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 5_000,
    connectTimeout: 5_000,
  });
}
