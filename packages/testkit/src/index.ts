export { createTestDatabase, type TestDatabase } from "./postgres.ts";
export { freshRedis, TEST_REDIS_DB, testRedisUrl } from "./redis.ts";
export { close, freePort, listen, waitFor } from "./wait.ts";
export { REPO_ROOT, startProcess, startTs, type RunningProcess } from "./process.ts";
