import { Redis } from "ioredis";

const REDIS_BASE = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/**
 * Redis database numbers by test area, so suites that run at the same time (two
 * developers, or a test beside `npm start`) never flush each other's data. 0 is left
 * for development.
 */
export const TEST_REDIS_DB = {
  keys: 1,
  controlPlane: 2,
  dataPlane: 3,
  metering: 4,
  dashboard: 5,
  deploy: 6,
  e2e: 7,
  compression: 8,
  bench: 9,
  hostile: 10,
  faults: 11,
  leases: 12,
} as const;

export function testRedisUrl(area: keyof typeof TEST_REDIS_DB): string {
  return `${REDIS_BASE}/${TEST_REDIS_DB[area]}`;
}

/** A client on the area's database, emptied first. Close it in `after`. */
export async function freshRedis(area: keyof typeof TEST_REDIS_DB): Promise<Redis> {
  const redis = new Redis(testRedisUrl(area), { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  await redis.flushdb();
  return redis;
}
