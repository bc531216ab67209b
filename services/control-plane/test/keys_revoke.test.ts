import { cacheKeyFor, hashKey, recallKeyFor } from "@terse/keys";
import { expect } from "chai";
import { itRejectsBadInput, NOT_JSON, UNKNOWN_FIELD } from "./bad-input.ts";
import {
  api,
  type CreatedKey,
  createAccount,
  createKey,
  type Harness,
  type ListedKey,
  startHarness,
  type TestAccount,
} from "./harness.ts";

describe("DELETE /v1/auth/keys/{id}", () => {
  let h: Harness;
  let account: TestAccount;
  let key: CreatedKey;

  before(async () => {
    h = await startHarness("keys_revoke");
    account = await createAccount(h, "pro");
    key = await createKey(h, account, { name: "doomed", intensity: "ultra" });
  });
  after(() => h.stop());

  const revoke = (id: string) => api<ListedKey>(h, "DELETE", `/v1/auth/keys/${id}`, { token: account.token });

  describe("bad input", () => {
    itRejectsBadInput(
      () => h,
      () => ({ method: "DELETE", path: `/v1/auth/keys/${key.id}`, token: account.token }),
      [...NOT_JSON, UNKNOWN_FIELD],
    );
  });

  describe("happy", () => {
    it("answers 200 with the record in the list shape, is_active false, the key gone from Redis", async () => {
      expect(await h.redis.exists(cacheKeyFor(hashKey(key.raw_key)))).to.equal(1);
      const res = await revoke(key.id);
      // Checked right after the response: the record was removed BEFORE it was sent.
      expect(await h.redis.exists(cacheKeyFor(hashKey(key.raw_key)))).to.equal(0);
      expect(res.status).to.equal(200);
      expect(res.body).to.include({
        id: key.id,
        name: "doomed",
        intensity: "ultra",
        is_active: false,
        rate_limit_rpm: 600,
      });
      expect(res.body).not.to.have.property("raw_key");
    });

    it("keeps the record (soft delete) with its revocation time", async () => {
      const row = await h.db.query("SELECT is_active, revoked_at FROM service_keys WHERE id = $1", [key.id]);
      expect(row.rows[0]?.is_active).to.equal(false);
      expect(row.rows[0]?.revoked_at).to.be.instanceOf(Date);
      const list = await api<ListedKey[]>(h, "GET", "/v1/auth/keys", { token: account.token });
      expect(list.body.map((k) => k.id)).to.include(key.id);
    });

    it("answers 200 and the same record again for a revoked key, changing nothing", async () => {
      const before = await h.db.query("SELECT * FROM service_keys WHERE id = $1", [key.id]);
      const res = await revoke(key.id);
      expect(res.status).to.equal(200);
      expect(res.body.is_active).to.equal(false);
      const after = await h.db.query("SELECT * FROM service_keys WHERE id = $1", [key.id]);
      expect(after.rows).to.deep.equal(before.rows);
    });

    it("removes a stray cache record of an already revoked key", async () => {
      await h.redis.hset(cacheKeyFor(hashKey(key.raw_key)), { key_id: key.id });
      await revoke(key.id);
      expect(await h.redis.exists(cacheKeyFor(hashKey(key.raw_key)))).to.equal(0);
    });

    it("leaves the account's other keys in Redis", async () => {
      const keep = await createKey(h, account, { name: "keep" });
      const drop = await createKey(h, account, { name: "drop" });
      await revoke(drop.id);
      expect(await h.redis.exists(cacheKeyFor(hashKey(keep.raw_key)))).to.equal(1);
    });

    it("removes the account's recall originals with its last active key, and only the account's", async () => {
      const owner = await createAccount(h, "pro");
      const neighbour = await createAccount(h, "pro");
      const first = await createKey(h, owner, { name: "first" });
      const second = await createKey(h, owner, { name: "second" });
      const texts = [recallKeyFor(owner.id, "0123456789ab"), recallKeyFor(owner.id, "ba9876543210")];
      const theirs = recallKeyFor(neighbour.id, "0123456789ab");
      for (const name of [...texts, theirs]) await h.redis.set(name, "cut output", "EX", 3600);
      const revokeOwn = (id: string) => api<ListedKey>(h, "DELETE", `/v1/auth/keys/${id}`, { token: owner.token });
      expect((await revokeOwn(first.id)).status).to.equal(200);
      expect(await h.redis.exists(...texts)).to.equal(2); // another key of the account still uses them
      expect((await revokeOwn(second.id)).status).to.equal(200);
      expect(await h.redis.exists(...texts)).to.equal(0);
      expect(await h.redis.exists(theirs)).to.equal(1);
    });
  });
});
