export { createTestDatabase, type TestDatabase } from "./postgres.ts";
export { type PostgresServer, startPostgresServer } from "./postgres-server.ts";
export { REPO_ROOT, type RunningProcess, startProcess, startTs } from "./process.ts";
export { seededRandom } from "./random.ts";
export { freshRedis, TEST_REDIS_DB, testRedisUrl } from "./redis.ts";
export { type RedisServer, startRedisServer } from "./redis-server.ts";
export {
  assertRequestTimeout,
  type SlowClientResult,
  slowClient,
  truncatedRequest,
} from "./slow-client.ts";
export { close, freePort, listen, waitFor } from "./wait.ts";
