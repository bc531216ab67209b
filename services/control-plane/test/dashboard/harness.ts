import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type ControlPlaneConfig, controlPlaneEnv, dataPlaneEnv, loadConfig } from "@terse/config";
import { createDataPlane, type DataPlane } from "@terse/data-plane/src/app.ts";
import { createDb, type Db, type Plan } from "@terse/db";
import { type FakeProvider, startFakeProvider } from "@terse/fake-provider";
import { createLogger } from "@terse/logger";
import { close, createTestDatabase, freshRedis, listen, type TestDatabase, testRedisUrl } from "@terse/testkit";
import type { Redis } from "ioredis";
import { type BrowserContext, chromium } from "playwright-core";
import { createApp, createHttpServer } from "../../src/app.ts";
import { AccountService } from "../../src/domain/accounts.ts";
import { resyncKeyCache } from "../../src/domain/cache-resync.ts";
import { AccountStore } from "../../src/infra/account-store.ts";
import { KeyCache } from "../../src/infra/key-cache.ts";
import { KeyStore } from "../../src/infra/key-store.ts";
import { createRedis } from "../../src/infra/redis.ts";

// The whole product as a person meets it: the real control plane (createApp, a scratch
// Postgres, the dashboard's own Redis db), which serves the dashboard, the real data plane on
// the same Redis (so a key made in the browser works on the proxy at once), a fake
// upstream, and Debian's Chromium driven by playwright-core.

export const PASSWORD = "dashboard test password 42";
const JWT_SECRET = "dashboard-test-secret-0123456789abcdefghij";
const APP_CONNECTIONS = "terse-dashboard-test";
const here = fileURLToPath(new URL(".", import.meta.url));
export const BUILD_SCRIPT = join(here, "..", "..", "dashboard", "build.mjs");
/**
 * Screens are always taken (a screenshot that fails is a failure), but they land in the
 * README's docs/screenshots only with TERSE_SCREENSHOTS=1: a test run leaves the tree clean.
 */
export const SCREENSHOT_DIR =
  process.env.TERSE_SCREENSHOTS === "1"
    ? join(here, "..", "..", "..", "..", "docs", "screenshots")
    : join(tmpdir(), "terse-dashboard-screenshots");
export const CHROMIUM = "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** The bundle the tests load is the one built from the source as it is now. */
export function buildDashboard(): void {
  execFileSync(process.execPath, [BUILD_SCRIPT], { stdio: ["ignore", "inherit", "inherit"] });
}

export interface Stack {
  url: string;
  proxyUrl: string;
  config: ControlPlaneConfig;
  db: TestDatabase;
  prisma: Db;
  redis: Redis;
  fake: FakeProvider;
  /** Every line the control plane and the data plane logged. */
  logs: string[];
  stop(): Promise<void>;
}

export async function startStack(label: string): Promise<Stack> {
  buildDashboard();
  const db = await createTestDatabase(`dash_${label}`);
  const redis = await freshRedis("dashboard");
  const config = loadConfig(controlPlaneEnv, {
    NODE_ENV: "test",
    JWT_SECRET,
    INTERNAL_GRPC_TOKEN: "dashboard-test-grpc-token",
    REDIS_URL: testRedisUrl("dashboard"),
    DATABASE_URL: db.url,
  });
  const prisma = createDb(`${db.url}?application_name=${APP_CONNECTIONS}`, { poolSize: 8 });
  const appRedis = createRedis(config.REDIS_URL);
  await appRedis.connect();
  const logs: string[] = [];
  const logger = createLogger({
    service: "dashboard-test",
    level: "info",
    destination: { write: (s: string) => logs.push(s) },
  });
  // The data plane answers 503 until the cache is stamped whole, as main.ts does at start.
  await resyncKeyCache({
    db: prisma,
    store: new KeyStore(prisma),
    cache: new KeyCache(appRedis, { leaseTtlMs: config.KEY_LEASE_TTL_MS }),
    logger,
  });

  const app = createApp({ config, db: prisma, redis: appRedis, logger });
  const server: Server = createHttpServer(app, config);
  const url = await listen(server);

  const fake = await startFakeProvider();
  const plane: DataPlane = await createDataPlane(
    loadConfig(dataPlaneEnv, {
      NODE_ENV: "test",
      REDIS_URL: testRedisUrl("dashboard"),
      OPENAI_BASE_URL: fake.url,
      ANTHROPIC_BASE_URL: fake.url,
      GEMINI_BASE_URL: fake.url,
    }),
    createLogger({ service: "data-plane", level: "info", destination: { write: (s: string) => logs.push(s) } }),
  );
  await new Promise<void>((r) => plane.server.listen(0, "127.0.0.1", () => r()));
  const proxyUrl = `http://127.0.0.1:${(plane.server.address() as AddressInfo).port}`;

  return {
    url,
    proxyUrl,
    config,
    db,
    prisma,
    redis,
    fake,
    logs,
    async stop() {
      await plane.shutdown(1_000);
      await fake.close();
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

let accounts = 0;

/** An account made through the control plane's own domain code, as the admin CLI does. */
export async function createAccount(stack: Stack, plan: Plan = "free"): Promise<{ id: string; email: string }> {
  accounts += 1;
  const email = `dash${accounts}-${Date.now()}@example.com`;
  const account = await new AccountService({ store: new AccountStore(stack.prisma) }).create(email, PASSWORD, plan);
  return { id: account.id, email };
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Chromium with a fresh profile in a temporary directory, removed on close. */
export async function launchBrowser(viewport = { width: 1280, height: 900 }): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "terse-dashboard-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
    locale: "en-US",
    timezoneId: "UTC",
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A request through the proxy with a service key: the status and the upstream's answer. */
export async function useOnProxy(stack: Stack, rawKey: string): Promise<number> {
  const res = await fetch(`${stack.proxyUrl}/v1/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${rawKey}`,
      "x-provider-key": "sk-proj-DASHBOARDTESTPROVIDERKEY0123456789",
    },
    body: JSON.stringify({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "Say hello to the dashboard." }],
    }),
  });
  await res.arrayBuffer();
  return res.status;
}
