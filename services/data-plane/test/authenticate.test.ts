import { ApiError } from "@terse/errors";
import {
  CACHE_GENERATION_KEY,
  type CachedKey,
  cacheKeyFor,
  encodeCachedKey,
  generateRawKey,
  hashKey,
} from "@terse/keys";
import { freshRedis } from "@terse/testkit";
import { expect } from "chai";
import type { Redis } from "ioredis";
import { Authenticator } from "../src/domain/authenticate.ts";
import type { QuotaView } from "../src/domain/quota-view.ts";
import { AuthScript } from "../src/infra/auth-script.ts";

// The 401-or-503 decision for a key whose record is absent, against a control plane
// that rewrites the cache at the worst moments. Driven directly: the races are a few
// microseconds wide through HTTP.

const NOBODY_OVER_QUOTA = { isExceeded: () => false } as unknown as QuotaView;

type Step = () => Promise<unknown>;

/** An AuthScript that runs the next queued steps just before and just after each lookup. */
class InterleavedScript extends AuthScript {
  readonly steps: { before?: Step; after?: Step }[] = [];

  override async run(...args: Parameters<AuthScript["run"]>) {
    const step = this.steps.shift();
    await step?.before?.();
    const result = await super.run(...args);
    await step?.after?.();
    return result;
  }
}

describe("authenticator: absent records while the cache is rewritten", () => {
  let redis: Redis;
  let script: InterleavedScript;
  let auth: Authenticator;
  const rawKey = generateRawKey();
  const record: CachedKey = {
    key_id: "key_1",
    account_id: "acct_1",
    plan: "free",
    rate_limit_rpm: 60,
    intensity: "full",
    auto_compress_input: false,
    smart_detect_enabled: false,
    context_compress: false,
    context_compress_level: "standard",
  };
  const writeRecord = () => redis.hset(cacheKeyFor(hashKey(rawKey)), encodeCachedKey(record));
  const admit = () => auth.admit(`Bearer ${rawKey}`, "sk-provider", Date.now());

  /** A refusal is a verdict, not an exception: its status and message as the caller would get them. */
  async function refusal(): Promise<{ status: number; message: string }> {
    const verdict = await admit();
    if (verdict.ok) throw new Error("admitted");
    const err = new ApiError(verdict.code);
    return { status: err.status, message: err.message };
  }

  before(async () => {
    redis = await freshRedis("dataPlane");
  });
  beforeEach(async () => {
    await redis.flushdb();
    script = new InterleavedScript(redis);
    auth = new Authenticator(redis, script, NOBODY_OVER_QUOTA);
  });
  after(async () => {
    await redis.flushdb();
    redis.disconnect();
  });

  /** The control plane's resync, done: the record, then the stamp. */
  const resynced = (generation: string) => async () => {
    await writeRecord();
    await redis.set(CACHE_GENERATION_KEY, generation);
  };

  it("admits a valid key whose resync finishes between its lookup and the stamp check (never 401)", async () => {
    // Redis was flushed; the resync completes just after the lookup found nothing.
    script.steps.push({ after: resynced("g1") });
    const verdict = await admit();
    expect(verdict.ok && verdict.admitted.key.key_id).to.equal("key_1");
  });

  it("answers 503, not 401, when Redis is flushed again and resynced around the second look", async () => {
    script.steps.push({ after: resynced("g1") }, { before: () => redis.flushdb(), after: resynced("g2") });
    expect(await refusal()).to.deep.equal({ status: 503, message: "auth cache unavailable" });
  });

  it("answers 401 for an absent key while the cache is whole, and 503 while it is not", async () => {
    await redis.set(CACHE_GENERATION_KEY, "g1");
    expect(await refusal()).to.deep.equal({ status: 401, message: "Invalid API key" });
    await redis.del(CACHE_GENERATION_KEY);
    expect(await refusal()).to.deep.equal({ status: 503, message: "auth cache unavailable" });
  });
});
