import type { AddressInfo } from "node:net";
import { type DataPlaneConfig, dataPlaneEnv, loadConfig } from "@terse/config";
import { type FakeProvider, startFakeProvider } from "@terse/fake-provider";
import {
  CACHE_GENERATION_KEY,
  type CachedKey,
  cacheKeyFor,
  encodeCachedKey,
  generateRawKey,
  hashKey,
  QUOTA_CHANNEL,
  quotaExceededKeyFor,
  quotaMonth,
} from "@terse/keys";
import { KeyChangeAnnouncer } from "@terse/key-leases";
import { createLogger } from "@terse/logger";
import { freshRedis, type TEST_REDIS_DB, testRedisUrl } from "@terse/testkit";
import { eventsOfBatch, USAGE_QUEUE, type UsageEvent } from "@terse/usage-events";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { createDataPlane, type DataPlane } from "../src/app.ts";

export const PROVIDER_KEY = "sk-proj-TESTPROVIDERKEY0123456789abcdefWXYZ";

/** Captured log lines of the proxy under test, to grep for secrets. */
export const logLines: string[] = [];

export interface Harness {
  url: string;
  plane: DataPlane;
  fake: FakeProvider;
  redis: Redis;
  config: DataPlaneConfig;
  /** Writes a key record into the cache as the control plane would, returns the raw key. */
  addKey(overrides?: Partial<CachedKey>): Promise<{ rawKey: string; record: CachedKey }>;
  /** Deletes the key's record and announces it, as the control plane's DELETE does before it returns. */
  revoke(rawKey: string): Promise<void>;
  /** Rewrites the key's record and announces it, as the control plane's PATCH does. */
  changeKey(rawKey: string, record: CachedKey): Promise<void>;
  markOverQuota(accountId: string): Promise<void>;
  /** Usage events enqueued so far. */
  events(): Promise<UsageEvent[]>;
  close(): Promise<void>;
}

let keySeq = 0;

/** A key record as the control plane writes it: a free plan's key with the defaults, and `overrides`. */
export function keyRecord(overrides: Partial<CachedKey> = {}): CachedKey {
  return {
    key_id: "key_test",
    account_id: "acct_test",
    plan: "free",
    rate_limit_rpm: 1000,
    intensity: "full",
    auto_compress_input: false,
    smart_detect_enabled: true,
    context_compress: false,
    context_compress_level: "standard",
    ...overrides,
  };
}

/** `area`: the Redis db of another test area (default: the data plane's own). */
export async function startHarness(
  env: Record<string, string> = {},
  area: keyof typeof TEST_REDIS_DB = "dataPlane",
): Promise<Harness> {
  const redis = await freshRedis(area);
  await redis.set(CACHE_GENERATION_KEY, String(Date.now()));
  const fake = await startFakeProvider();
  const config = loadConfig(dataPlaneEnv, {
    NODE_ENV: "test",
    REDIS_URL: testRedisUrl(area),
    OPENAI_BASE_URL: fake.url,
    ANTHROPIC_BASE_URL: fake.url,
    GEMINI_BASE_URL: fake.url,
    ...env,
  });
  const logger = createLogger({
    service: "data-plane",
    level: "info",
    destination: { write: (line: string) => void logLines.push(line) },
  });
  const plane = await createDataPlane(config, logger);
  await new Promise<void>((r) => plane.server.listen(0, "127.0.0.1", () => r()));
  const url = `http://127.0.0.1:${(plane.server.address() as AddressInfo).port}`;
  const announcer = new KeyChangeAnnouncer(redis, { leaseTtlMs: config.KEY_LEASE_TTL_MS });
  const queue = new Queue(USAGE_QUEUE, {
    connection: new Redis(testRedisUrl(area), { maxRetriesPerRequest: null }),
  });

  return {
    url,
    plane,
    fake,
    redis,
    config,
    async addKey(overrides = {}) {
      const rawKey = generateRawKey();
      keySeq++;
      const record = keyRecord({ key_id: `key_test${keySeq}`, account_id: `acct_test${keySeq}`, ...overrides });
      await redis.hset(cacheKeyFor(hashKey(rawKey)), encodeCachedKey(record));
      return { rawKey, record };
    },
    async revoke(rawKey) {
      await redis.del(cacheKeyFor(hashKey(rawKey)));
      await announcer.announce([hashKey(rawKey)]);
    },
    async changeKey(rawKey, record) {
      await redis.hset(cacheKeyFor(hashKey(rawKey)), encodeCachedKey(record));
      await announcer.announce([hashKey(rawKey)]);
    },
    async markOverQuota(accountId) {
      await redis.sadd(quotaExceededKeyFor(quotaMonth()), accountId);
      await redis.publish(QUOTA_CHANNEL, accountId);
    },
    async events() {
      const jobs = await queue.getJobs(["waiting", "delayed", "active", "completed", "failed"]);
      return jobs.flatMap((j) => (eventsOfBatch(j.data) ?? []) as UsageEvent[]);
    },
    async close() {
      await plane.shutdown(1_000);
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await fake.close();
      await redis.flushdb();
      redis.disconnect();
    },
  };
}

/** A JSON POST to the data plane at `url` as a raw HTTP client sends it, with the service key and the test provider key. */
export function postAsCaller(url: string, path: string, rawKey: string, body: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${rawKey}`, "x-provider-key": PROVIDER_KEY, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/**
 * The official SDKs pointed at the data plane at `url` with the service key `rawKey` and
 * the test provider key, as a user would set them up (README, docs/agents.md). `options`:
 * headers sent with every request, and a fetch of the test's own (to read the raw bytes).
 */
export function sdkClients(
  url: string,
  rawKey: string,
  options: { headers?: Record<string, string>; fetch?: typeof fetch } = {},
) {
  const headers = { "X-Provider-Key": PROVIDER_KEY, ...options.headers };
  const custom = options.fetch ? { fetch: options.fetch } : {};
  return {
    openai: () =>
      new OpenAI({ baseURL: `${url}/v1`, apiKey: rawKey, defaultHeaders: headers, maxRetries: 0, ...custom }),
    anthropic: () =>
      new Anthropic({ baseURL: url, authToken: rawKey, defaultHeaders: headers, maxRetries: 0, ...custom }),
    gemini: () =>
      new GoogleGenAI({
        apiKey: "unused-by-terse",
        httpOptions: { baseUrl: url, headers: { Authorization: `Bearer ${rawKey}`, ...headers }, ...custom },
      }),
  };
}
