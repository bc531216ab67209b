import { KEY_LAST_USED_KEY } from "@terse/keys";
import { expect } from "chai";
import { recordKeyUse } from "../src/domain/key-use.ts";
import { createAccount, createKey, type Harness, startHarness } from "./harness.ts";

// The data plane's notes of keys it authenticated (model lists, token counts, refusals
// no usage event records) reach last_used_at: taken from Redis at once, moved forward
// only, foreign or malformed entries ignored.

describe("last_used_at from the data plane's notes", () => {
  let h: Harness;
  let keyA: string;
  let keyB: string;

  before(async () => {
    h = await startHarness("key_use");
    const account = await createAccount(h, "pro");
    keyA = (await createKey(h, account, { name: "a" })).id;
    keyB = (await createKey(h, account, { name: "b" })).id;
  });
  after(() => h.stop());

  const lastUsed = async (id: string) =>
    (await h.prisma.serviceKey.findUniqueOrThrow({ where: { id } })).lastUsedAt?.toISOString() ?? null;

  it("moves each noted key's last_used_at to its note and empties the notes", async () => {
    const at = Date.parse("2026-11-20T10:00:00.000Z");
    await h.redis.hset(KEY_LAST_USED_KEY, keyA, String(at), "key_unknown", String(at), "bad id!", "1", keyB, "x");
    expect(await recordKeyUse({ db: h.prisma, redis: h.redis }, at)).to.equal(2);
    expect(await lastUsed(keyA)).to.equal("2026-11-20T10:00:00.000Z");
    expect(await lastUsed(keyB), "a note that is no time").to.equal(null);
    expect(await h.redis.exists(KEY_LAST_USED_KEY)).to.equal(0);
  });

  it("never moves it back, and takes a note from a clock far ahead as now", async () => {
    const now = Date.parse("2026-11-21T10:00:00.000Z");
    await h.redis.hset(KEY_LAST_USED_KEY, keyA, String(Date.parse("2026-11-19T00:00:00.000Z")));
    await recordKeyUse({ db: h.prisma, redis: h.redis }, now);
    expect(await lastUsed(keyA)).to.equal("2026-11-20T10:00:00.000Z");
    await h.redis.hset(KEY_LAST_USED_KEY, keyA, String(now + 86_400_000));
    await recordKeyUse({ db: h.prisma, redis: h.redis }, now);
    expect(await lastUsed(keyA)).to.equal("2026-11-21T10:01:00.000Z");
  });

  it("is nothing to do when nothing was noted", async () => {
    expect(await recordKeyUse({ db: h.prisma, redis: h.redis })).to.equal(0);
  });
});
