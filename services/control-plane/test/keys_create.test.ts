import { cacheKeyFor, hashKey, isWellFormedKey, KEY_PREFIX_LENGTH } from "@terse/keys";
import { expect } from "chai";
import { BAD_SETTINGS, itRejectsBadInput, NOT_JSON } from "./bad-input.ts";
import {
  api,
  type CreatedKey,
  createAccount,
  createKey,
  type ErrorBody,
  type Harness,
  snapshot,
  startHarness,
  type TestAccount,
} from "./harness.ts";

const CREATE_FIELDS = [
  "id",
  "raw_key",
  "key_prefix",
  "name",
  "intensity",
  "auto_compress_input",
  "smart_detect_enabled",
  "context_compress",
  "context_compress_level",
  "is_active",
  "created_at",
  "last_used_at",
];

describe("POST /v1/auth/keys", () => {
  let h: Harness;
  let account: TestAccount;

  before(async () => {
    h = await startHarness("keys_create", {
      env: { TERSE_PLANS: JSON.stringify({ team: { max_active_keys: 3, rate_limit_rpm: 1234 } }) },
    });
    account = await createAccount(h, "enterprise");
  });
  after(() => h.stop());

  describe("happy", () => {
    it("creates a key with the defaults of spec 2.1 and answers 201 with exactly the create shape", async () => {
      const res = await api<CreatedKey>(h, "POST", "/v1/auth/keys", { token: account.token, body: {} });
      expect(res.status).to.equal(201);
      expect(res.headers.get("cache-control"), "an answer holding a raw key").to.equal("no-store");
      expect(Object.keys(res.body)).to.deep.equal(CREATE_FIELDS);
      expect(res.body).to.include({
        name: "Default",
        intensity: "full",
        auto_compress_input: false,
        smart_detect_enabled: true,
        context_compress: false,
        context_compress_level: "standard",
        is_active: true,
        last_used_at: null,
      });
      expect(res.body).not.to.have.property("rate_limit_rpm");
      expect(isWellFormedKey(res.body.raw_key)).to.equal(true);
      expect(res.body.key_prefix).to.equal(res.body.raw_key.slice(0, KEY_PREFIX_LENGTH));
      expect(res.body.key_prefix).to.match(/^svc_live_[0-9A-Za-z]{8}$/);
      expect(new Date(res.body.created_at).toISOString()).to.equal(res.body.created_at);
    });

    it("creates a key with no body at all (no Content-Type needed)", async () => {
      const fresh = await createAccount(h, "pro");
      const res = await api<CreatedKey>(h, "POST", "/v1/auth/keys", { token: fresh.token });
      expect(res.status).to.equal(201);
      expect(res.body.name).to.equal("Default");
    });

    it("takes every settable field", async () => {
      const body = {
        name: "ci-deploy",
        intensity: "ultra",
        auto_compress_input: true,
        smart_detect_enabled: false,
        context_compress: true,
        context_compress_level: "aggressive",
      };
      const key = await createKey(h, account, body);
      expect(key).to.include(body);
    });

    it("stores only the SHA-256 of the raw key, and the rate limit of the plan", async () => {
      const key = await createKey(h, account, { name: "stored" });
      const row = (await h.db.query("SELECT * FROM service_keys WHERE id = $1", [key.id])).rows[0];
      expect(row?.key_hash).to.equal(hashKey(key.raw_key));
      expect(JSON.stringify(row)).not.to.include(key.raw_key);
      expect(row?.rate_limit_rpm).to.equal(10_000); // enterprise default
      expect(row?.account_id).to.equal(account.id);
    });

    it("publishes the key to the Redis cache before answering", async () => {
      const key = await createKey(h, account, { name: "cached", intensity: "lite", context_compress: true });
      const cached = await h.redis.hgetall(cacheKeyFor(hashKey(key.raw_key)));
      expect(cached).to.deep.equal({
        key_id: key.id,
        account_id: account.id,
        plan: "enterprise",
        rate_limit_rpm: "10000",
        intensity: "lite",
        auto_compress_input: "0",
        smart_detect_enabled: "1",
        context_compress: "1",
        context_compress_level: "standard",
      });
    });

    it("gives each key a new raw key and id", async () => {
      const a = await createKey(h, account, { name: "a1" });
      const b = await createKey(h, account, { name: "a2" });
      expect(a.raw_key).not.to.equal(b.raw_key);
      expect(a.id).not.to.equal(b.id);
    });

    it("takes rate_limit_rpm from TERSE_PLANS", async () => {
      const team = await createAccount(h, "team");
      const key = await createKey(h, team);
      const list = await api<{ id: string; rate_limit_rpm: number }[]>(h, "GET", "/v1/auth/keys", {
        token: team.token,
      });
      expect(list.body.find((k) => k.id === key.id)?.rate_limit_rpm).to.equal(1234);
    });

    it("allows the name of a revoked key again", async () => {
      const first = await createKey(h, account, { name: "reused" });
      await api(h, "DELETE", `/v1/auth/keys/${first.id}`, { token: account.token });
      const second = await api<CreatedKey>(h, "POST", "/v1/auth/keys", {
        token: account.token,
        body: { name: "reused" },
      });
      expect(second.status).to.equal(201);
    });

    it("allows the same name in two accounts", async () => {
      const other = await createAccount(h, "pro");
      await createKey(h, account, { name: "shared-name" });
      const res = await api(h, "POST", "/v1/auth/keys", { token: other.token, body: { name: "shared-name" } });
      expect(res.status).to.equal(201);
    });

    it("accepts a 64-character name and application/json with a charset", async () => {
      const res = await api<CreatedKey>(h, "POST", "/v1/auth/keys", {
        token: account.token,
        raw: JSON.stringify({ name: "n".repeat(64) }),
        headers: { "content-type": "application/json; charset=utf-8" },
      });
      expect(res.status).to.equal(201);
      expect(res.body.name).to.have.length(64);
    });
  });

  describe("errors", () => {
    it("answers 409 Duplicate name for the name of an active key, changing nothing", async () => {
      await createKey(h, account, { name: "dup" });
      const before = await snapshot(h);
      const res = await api<ErrorBody>(h, "POST", "/v1/auth/keys", { token: account.token, body: { name: "dup" } });
      expect(res.status).to.equal(409);
      expect(res.body.error).to.deep.equal({
        message: "Duplicate name",
        type: "conflict_error",
        code: "duplicate_name",
      });
      expect(await snapshot(h)).to.equal(before);
    });

    it("stores a name as shown, composed and without surrounding spaces: a name that only looks new is a duplicate", async () => {
      const fresh = await createAccount(h, "pro");
      const created = await api<{ name: string }>(h, "POST", "/v1/auth/keys", {
        token: fresh.token,
        body: { name: "  cafe\u0301  " },
      });
      expect(created.status).to.equal(201);
      expect(created.body.name).to.equal("caf\u00e9");
      for (const name of ["caf\u00e9", "cafe\u0301", " caf\u00e9"]) {
        const again = await api<ErrorBody>(h, "POST", "/v1/auth/keys", { token: fresh.token, body: { name } });
        expect(again.status, JSON.stringify(name)).to.equal(409);
      }
    });

    it("answers 409 for a second key named Default", async () => {
      const fresh = await createAccount(h, "pro");
      await createKey(h, fresh);
      const res = await api<ErrorBody>(h, "POST", "/v1/auth/keys", { token: fresh.token, body: {} });
      expect(res.status).to.equal(409);
    });

    for (const [plan, limit] of [
      ["free", 2],
      ["pro", 10],
      ["team", 3],
    ] as const) {
      it(`answers 403 API key limit reached past ${limit} active keys on ${plan}, changing nothing`, async () => {
        const owner = await createAccount(h, plan);
        for (let i = 0; i < limit; i++) await createKey(h, owner, { name: `k${i}` });
        const before = await snapshot(h);
        const res = await api<ErrorBody>(h, "POST", "/v1/auth/keys", {
          token: owner.token,
          body: { name: "one-more" },
        });
        expect(res.status).to.equal(403);
        expect(res.body.error).to.deep.equal({
          message: "API key limit reached",
          type: "permission_error",
          code: "key_limit_reached",
        });
        expect(await snapshot(h)).to.equal(before);
      });
    }

    it("counts only active keys against the limit", async () => {
      const owner = await createAccount(h, "free");
      const a = await createKey(h, owner, { name: "a" });
      await createKey(h, owner, { name: "b" });
      await api(h, "DELETE", `/v1/auth/keys/${a.id}`, { token: owner.token });
      const res = await api(h, "POST", "/v1/auth/keys", { token: owner.token, body: { name: "c" } });
      expect(res.status).to.equal(201);
    });
  });

  describe("bad input", () => {
    itRejectsBadInput(
      () => h,
      () => ({ method: "POST", path: "/v1/auth/keys", token: account.token }),
      [
        ...NOT_JSON,
        ...BAD_SETTINGS,
        { name: "raw_key in the body", body: { raw_key: "svc_live_x" }, status: 400, param: "raw_key" },
        { name: "rate_limit_rpm in the body", body: { rate_limit_rpm: 5 }, status: 400, param: "rate_limit_rpm" },
      ],
    );
  });
});
