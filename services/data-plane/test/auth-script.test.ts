import { generateRawKey, hashKey, rateLimitKeyFor } from "@terse/keys";
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
