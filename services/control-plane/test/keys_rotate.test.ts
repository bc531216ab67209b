import { cacheKeyFor, hashKey, isWellFormedKey } from "@terse/keys";
import { expect } from "chai";
import { itRejectsBadInput, NOT_JSON, UNKNOWN_FIELD } from "./bad-input.ts";
import {
  api,
  type CreatedKey,
  createAccount,
  createKey,
  type ErrorBody,
  type Harness,
  type ListedKey,
  snapshot,
  startHarness,
  type TestAccount,
} from "./harness.ts";

describe("POST /v1/auth/keys/{id}/rotate", () => {
  let h: Harness;
  let account: TestAccount;

  before(async () => {
    h = await startHarness("keys_rotate");
    account = await createAccount(h, "free");
  });
  after(() => h.stop());

  const rotate = (id: string, token = account.token) =>
    api<CreatedKey & ErrorBody>(h, "POST", `/v1/auth/keys/${id}/rotate`, { token });

  describe("happy", () => {
    let old: CreatedKey;
    let rotated: CreatedKey;

    it("issues a new key with the same name and settings (201, create shape) and revokes the old one", async () => {
      const settings = {
        name: "prod",
        intensity: "lite",
        auto_compress_input: true,
        smart_detect_enabled: false,
        context_compress: true,
        context_compress_level: "aggressive",
      };
      old = await createKey(h, account, settings);
      await h.db.query("UPDATE service_keys SET rate_limit_rpm = 77 WHERE id = $1", [old.id]);
      const res = await rotate(old.id);
      expect(res.status).to.equal(201);
      expect(res.headers.get("cache-control"), "an answer holding a raw key").to.equal("no-store");
      rotated = res.body;
      expect(rotated).to.include({ ...settings, is_active: true, last_used_at: null });
      expect(rotated).not.to.have.property("rate_limit_rpm");
      expect(rotated.id).not.to.equal(old.id);
      expect(rotated.raw_key).not.to.equal(old.raw_key);
      expect(isWellFormedKey(rotated.raw_key)).to.equal(true);

      const list = await api<ListedKey[]>(h, "GET", "/v1/auth/keys", { token: account.token });
      const oldListed = list.body.find((k) => k.id === old.id);
      const newListed = list.body.find((k) => k.id === rotated.id);
      expect(oldListed?.is_active).to.equal(false);
      expect(newListed?.rate_limit_rpm).to.equal(77); // rotation keeps rate_limit_rpm
      const row = await h.db.query("SELECT revoked_at, rotated_to_id FROM service_keys WHERE id = $1", [old.id]);
      expect(row.rows[0]?.rotated_to_id).to.equal(rotated.id);
      expect(row.rows[0]?.revoked_at).to.be.instanceOf(Date);
    });

    it("has removed the old key from Redis and published the new one when it answers", async () => {
      expect(await h.redis.exists(cacheKeyFor(hashKey(old.raw_key)))).to.equal(0);
      const cached = await h.redis.hgetall(cacheKeyFor(hashKey(rotated.raw_key)));
      expect(cached).to.include({
        key_id: rotated.id,
        rate_limit_rpm: "77",
        intensity: "lite",
        context_compress_level: "aggressive",
      });
    });

    it("succeeds at the plan limit (Free: 2 active keys), leaving 2 active", async () => {
      const second = await createKey(h, account, { name: "second" });
      const res = await rotate(second.id);
      expect(res.status).to.equal(201);
      const active = await h.db.query(
        "SELECT count(*)::int AS n FROM service_keys WHERE account_id = $1 AND is_active",
        [account.id],
      );
      expect(active.rows[0]?.n).to.equal(2);
    });

    it("accepts an empty JSON object as the body", async () => {
      const list = await api<ListedKey[]>(h, "GET", "/v1/auth/keys", { token: account.token });
      const active = list.body.find((k) => k.is_active);
      const res = await api(h, "POST", `/v1/auth/keys/${active?.id}/rotate`, { token: account.token, body: {} });
      expect(res.status).to.equal(201);
    });
  });

  describe("errors", () => {
    it("answers 409 Key is revoked for a revoked key, changing nothing", async () => {
      const list = await api<ListedKey[]>(h, "GET", "/v1/auth/keys", { token: account.token });
      const revoked = list.body.find((k) => !k.is_active);
      const before = await snapshot(h);
      const res = await rotate(String(revoked?.id));
      expect(res.status).to.equal(409);
      expect(res.body.error.message).to.equal("Key is revoked");
      expect(await snapshot(h)).to.equal(before);
    });
  });

  describe("bad input", () => {
    let target: string;
    before(async () => {
      const list = await api<ListedKey[]>(h, "GET", "/v1/auth/keys", { token: account.token });
      target = String(list.body.find((k) => k.is_active)?.id);
    });
    itRejectsBadInput(
      () => h,
      () => ({ method: "POST", path: `/v1/auth/keys/${target}/rotate`, token: account.token }),
      [...NOT_JSON, UNKNOWN_FIELD, { name: "a name in the body", body: { name: "x" }, status: 400, param: "name" }],
    );
  });
});
