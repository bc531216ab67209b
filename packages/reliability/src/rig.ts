import { type FakeProvider, startFakeProvider } from "@terse/fake-provider";
import {
  createTestDatabase,
  type PostgresServer,
  type RedisServer,
  startPostgresServer,
  startRedisServer,
  type TestDatabase,
} from "@terse/testkit";
import { type System, startSystem } from "./system.ts";

/** Everything a fault test or the soak stands on, started and removed together. */
export interface Rig {
  system: System;
  redis: RedisServer;
  fake: FakeProvider;
  /** Present with `ownPostgres`: the cluster the test may stop and start. */
  postgres: PostgresServer | undefined;
  close(): Promise<void>;
}

export interface RigOptions {
  /** More environment for every service (timeouts, intervals). */
  env?: Record<string, string>;
  /**
   * A Postgres cluster of the rig's own (seconds to initdb), for tests that stop it;
   * otherwise a scratch database on the shared server.
   */
  ownPostgres?: boolean;
  /** Keep every request the fake upstream receives (default false: load runs send tens of thousands). */
  recordUpstream?: boolean;
}

/**
 * A Redis of its own (the test may kill or flush it), a database, the fake upstream
 * (recording counts only unless `recordUpstream`), and the three services as
 * processes on them.
 */
export async function startRig(label: string, options: RigOptions = {}): Promise<Rig> {
  const [database, redis, fake] = await Promise.all([
    options.ownPostgres ? startPostgresServer() : createTestDatabase(label),
    startRedisServer(),
    startFakeProvider({ record: options.recordUpstream ?? false }),
  ]);
  const postgres = options.ownPostgres ? (database as PostgresServer) : undefined;
  const removeDatabase = () => (postgres ? postgres.destroy() : (database as TestDatabase).drop());
  let system: System;
  try {
    system = await startSystem({
      redisUrl: redis.url,
      databaseUrl: database.url,
      upstreamUrl: fake.url,
      env: options.env,
    });
  } catch (err) {
    await Promise.all([redis.destroy(), fake.close(), removeDatabase()]);
    throw err;
  }
  return {
    system,
    redis,
    fake,
    postgres,
    async close() {
      await system.close();
      await Promise.all([redis.destroy(), fake.close()]);
      await removeDatabase();
    },
  };
}
