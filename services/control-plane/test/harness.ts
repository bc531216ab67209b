import type { Server } from "node:http";
import { type ControlPlaneConfig, controlPlaneEnv, loadConfig } from "@terse/config";
import { createDb, type Db, type Plan } from "@terse/db";
import { createLogger } from "@terse/logger";
import { CACHE_GENERATION_KEY } from "@terse/keys";
import {
  close,
  createTestDatabase,
  freshRedis,
  listen,
  type TEST_REDIS_DB,
  type TestDatabase,
  testRedisUrl,
} from "@terse/testkit";
import type { Redis } from "ioredis";
import { createApp, createHttpServer } from "../src/app.ts";
import type { AppDeps, Lifecycle } from "../src/context.ts";
import { AccountService } from "../src/domain/accounts.ts";
import { Tokens } from "../src/domain/tokens.ts";
import { AccountStore } from "../src/infra/account-store.ts";
import { createRedis } from "../src/infra/redis.ts";

// One control plane per suite: a scratch database, the control plane's Redis db, an
// in-process server on port 0, and everything it logged. Tests talk HTTP to it and
// look at Postgres and Redis directly.

export const TEST_JWT_SECRET = "control-plane-test-secret-0123456789abcdef";
export const TEST_PASSWORD = "correct horse battery staple";
const APP_CONNECTIONS = "terse-control-plane-test";

export interface Harness {
  url: string;
  db: TestDatabase;
  prisma: Db;
  /** The app's own Redis client. */
  appRedis: Redis;
  /** A separate client for the test's own reads. */
  redis: Redis;
  config: ControlPlaneConfig;
  lifecycle: Lifecycle;
  logs: string[];
  server: Server;
  stop(): Promise<void>;
}

export type RedisArea = keyof typeof TEST_REDIS_DB;

export function testConfig(
  env: Record<string, string> = {},
  redisArea: RedisArea = "controlPlane",
): ControlPlaneConfig {
  return loadConfig(controlPlaneEnv, {
    NODE_ENV: "test",
    JWT_SECRET: TEST_JWT_SECRET,
    INTERNAL_GRPC_TOKEN: "control-plane-test-grpc-token",
    REDIS_URL: testRedisUrl(redisArea),
    ...env,
  });
}

export async function startHarness(
  label: string,
  options: {
    env?: Record<string, string>;
    redis?: Redis;
    deps?: Partial<AppDeps>;
    /** The Redis db of another test area (default: the control plane's own). */
    redisArea?: RedisArea;
  } = {},
): Promise<Harness> {
  const db = await createTestDatabase(`cp_${label}`);
  const redis = await freshRedis(options.redisArea ?? "controlPlane");
  // What the control plane's start-up resync leaves (main.ts): without the stamp, every
  // key change would wait a whole lease for proxies that might not have seen a flush.
  await redis.set(CACHE_GENERATION_KEY, String(Date.now()));
  const config = testConfig({ DATABASE_URL: db.url, ...options.env }, options.redisArea);
  // Named, so stop() can see that every connection of the app is gone before the drop.
  const prisma = createDb(`${db.url}?application_name=${APP_CONNECTIONS}`, { poolSize: 12 });
  const appRedis = options.redis ?? createRedis(config.REDIS_URL);
  if (!options.redis) await appRedis.connect();
  const logs: string[] = [];
  const logger = createLogger({
    service: "control-plane",
    level: "info",
    destination: { write: (s: string) => logs.push(s) },
  });
  const lifecycle: Lifecycle = { shuttingDown: false };
  const app = createApp({ config, db: prisma, redis: appRedis, logger, lifecycle, ...options.deps });
  const server = createHttpServer(app, config);
  const url = await listen(server);
  return {
    url,
    db,
    prisma,
    appRedis,
    redis,
    config,
    lifecycle,
    logs,
    server,
    async stop() {
      server.closeAllConnections();
      await close(server);
      await prisma.$disconnect();
      appRedis.disconnect();
      await redis.flushdb();
      redis.disconnect();
      await db.untilDisconnected(APP_CONNECTIONS);
      await db.drop();
    },
  };
}

export interface TestAccount {
  id: string;
  email: string;
  token: string;
}

let accountCounter = 0;

/** An account with a password and a valid access token. */
export async function createAccount(h: Harness, plan: Plan = "free"): Promise<TestAccount> {
  accountCounter += 1;
  const email = `user${accountCounter}-${Date.now()}@example.com`;
  const accounts = new AccountService({ store: new AccountStore(h.prisma) });
  const account = await accounts.create(email, TEST_PASSWORD, plan);
  return { id: account.id, email, token: tokensFor(h).issue(account.id).access_token };
}

export function tokensFor(h: Harness): Tokens {
  return new Tokens({
    secret: h.config.JWT_SECRET,
    issuer: h.config.JWT_ISSUER,
    audience: h.config.JWT_AUDIENCE,
    ttlSeconds: h.config.JWT_TTL_SECONDS,
  });
}

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export interface ErrorBody {
  error: { message: string; type: string; code: string; param?: string };
}

/** One HTTP call. `body` is sent as JSON unless `raw` gives the exact bytes. */
export async function api<T = unknown>(
  h: Harness,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(`${h.url}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    // not JSON: the test sees the text
  }
  return { status: res.status, headers: res.headers, body: parsed as T };
}

export interface CreatedKey {
  id: string;
  raw_key: string;
  key_prefix: string;
  name: string;
  intensity: string;
  auto_compress_input: boolean;
  smart_detect_enabled: boolean;
  context_compress: boolean;
  context_compress_level: string;
  is_active: boolean;
  created_at: string;
  last_used_at: string | null;
}

export type ListedKey = Omit<CreatedKey, "raw_key"> & { rate_limit_rpm: number };

export async function createKey(
  h: Harness,
  account: TestAccount,
  body: Record<string, unknown> = {},
): Promise<CreatedKey> {
  const res = await api<CreatedKey>(h, "POST", "/v1/auth/keys", { token: account.token, body });
  if (res.status !== 201) throw new Error(`create key: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Everything a write could change: all key rows and all of the control plane's Redis. */
export async function snapshot(h: Harness): Promise<string> {
  const rows = await h.db.query("SELECT * FROM service_keys ORDER BY id");
  const accounts = await h.db.query("SELECT id, plan, updated_at FROM accounts ORDER BY id");
  const redisState: Record<string, unknown> = {};
  for (const key of (await h.redis.keys("svc:key:*")).sort()) redisState[key] = await h.redis.hgetall(key);
  return JSON.stringify({ rows: rows.rows, accounts: accounts.rows, redisState });
}
