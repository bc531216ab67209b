import { cacheKeyFor, encodeCachedKey, generateRawKey, hashKey, rateLimitKeyFor } from "@terse/keys";
import { freshRedis } from "@terse/testkit";
import { expect } from "chai";
import type { Redis } from "ioredis";
import { AuthScript } from "../src/infra/auth-script.ts";

describe("auth script: giving back a counted slot", () => {
  let redis: Redis;
  let script: AuthScript;
  const keyHash = hashKey(generateRawKey());
  const window = rateLimitKeyFor(keyHash);

  before(async () => {
    redis = await freshRedis("dataPlane");
    script = new AuthScript(redis);
  });
  after(async () => {
    await redis.flushdb();
    redis.disconnect();
  });

  it("takes one call off the second's bucket", async () => {
    await redis.hset(window, "1000", "3");
    await script.uncount(keyHash, 1000);
    expect(await redis.hget(window, "1000")).to.equal("2");
  });

  it("leaves no negative bucket when Redis lost the window in between (restart, FLUSHALL)", async () => {
    await redis.del(window);
    await script.uncount(keyHash, 1000);
    expect(await redis.exists(window)).to.equal(0);
    await redis.hset(window, "1000", "0");
    await script.uncount(keyHash, 1000);
    expect(await redis.hget(window, "1000")).to.equal("0");
  });
});

describe("auth script: the sliding window", () => {
  let redis: Redis;
  let script: AuthScript;
  const keyHash = hashKey(generateRawKey());
  const window = rateLimitKeyFor(keyHash);
  const run = async (second: number, count = true) => {
    const lookup = await script.run(keyHash, second, count);
    if (lookup.kind === "absent") throw new Error("the key record is missing");
    return { kind: lookup.kind, remaining: lookup.remaining, reset: lookup.resetSeconds };
  };

  before(async () => {
    redis = await freshRedis("dataPlane");
    script = new AuthScript(redis);
    await redis.hset(
      cacheKeyFor(keyHash),
      encodeCachedKey({
        key_id: "key_w",
        account_id: "acct_w",
        plan: "free",
        rate_limit_rpm: 5,
        intensity: "full",
        auto_compress_input: false,
        smart_detect_enabled: false,
        context_compress: false,
        context_compress_level: "standard",
      }),
    );
  });
  beforeEach(() => redis.del(window));
  after(async () => {
    await redis.flushdb();
    redis.disconnect();
  });

  it("counts the last 60 seconds: older calls drop out, the reset names the earliest second still counted", async () => {
    for (let i = 0; i < 3; i++) await run(1000);
    expect(await run(1030)).to.deep.equal({ kind: "allowed", remaining: 1, reset: 30 });
    expect(await run(1030)).to.deep.equal({ kind: "allowed", remaining: 0, reset: 30 });
    expect(await run(1059)).to.deep.equal({ kind: "limited", remaining: 0, reset: 1 });
    // At 1060 the second 1000 is out of the window: its three calls no longer count.
    expect(await run(1060)).to.deep.equal({ kind: "allowed", remaining: 2, reset: 30 });
    // The earliest second still counted (1030) stays the reset's anchor without a walk.
    expect(await run(1061)).to.deep.equal({ kind: "allowed", remaining: 1, reset: 29 });
    // Long after, nothing counts; the window then holds only the new call.
    expect(await run(1200)).to.deep.equal({ kind: "allowed", remaining: 4, reset: 60 });
    expect(Object.keys(await redis.hgetall(window)).sort()).to.deep.equal(["1200", "n", "t"]);
    expect(await redis.ttl(window)).to.be.within(1, 61);
  });

  it("a look without counting leaves no window behind", async () => {
    expect(await run(1000, false)).to.deep.equal({ kind: "allowed", remaining: 5, reset: 60 });
    expect(await redis.exists(window)).to.equal(0);
  });

  it("sums a window of buckets alone (written before the running sum) once, then counts on", async () => {
    await redis.hset(window, "990", "2", "1000", "2");
    expect(await run(1010)).to.deep.equal({ kind: "allowed", remaining: 0, reset: 40 });
    expect((await run(1010)).kind).to.equal("limited");
    expect(await redis.hget(window, "n")).to.equal("5");
  });

  it("a slot given back is free again, in the bucket and in the sum", async () => {
    for (let i = 0; i < 5; i++) await run(1000);
    expect((await run(1000)).kind).to.equal("limited");
    await script.uncount(keyHash, 1000);
    expect(await run(1000)).to.deep.equal({ kind: "allowed", remaining: 0, reset: 60 });
    expect((await run(1000)).kind).to.equal("limited");
  });
});
