import { cacheKeyFor, hashKey } from "@terse/keys";
import { expect } from "chai";
import { BAD_SETTINGS, itRejectsBadInput, NOT_JSON } from "./bad-input.ts";
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

describe("PATCH /v1/auth/keys/{id}", () => {
  let h: Harness;
  let account: TestAccount;
  let key: CreatedKey;

  before(async () => {
    h = await startHarness("keys_update");
    account = await createAccount(h, "pro");
    key = await createKey(h, account, { name: "patchable" });
  });
  after(() => h.stop());

  const patch = (id: string, body: unknown) =>
    api<ListedKey & ErrorBody>(h, "PATCH", `/v1/auth/keys/${id}`, { token: account.token, body });

  describe("happy", () => {
    it("changes only the sent settings and answers 200 with the record in the list shape", async () => {
      const res = await patch(key.id, { intensity: "ultra", auto_compress_input: true });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({
        id: key.id,
        name: "patchable",
        intensity: "ultra",
        auto_compress_input: true,
        smart_detect_enabled: true,
        context_compress: false,
        context_compress_level: "standard",
        is_active: true,
        rate_limit_rpm: 600,
        key_prefix: key.key_prefix,
        created_at: key.created_at,
      });
      expect(res.body).not.to.have.property("raw_key");
    });

    it("writes the new settings to the Redis cache before answering", async () => {
      await patch(key.id, {
        context_compress: true,
        context_compress_level: "conservative",
        smart_detect_enabled: false,
      });
      const cached = await h.redis.hgetall(cacheKeyFor(hashKey(key.raw_key)));
      expect(cached).to.include({
        intensity: "ultra",
        auto_compress_input: "1",
        smart_detect_enabled: "0",
        context_compress: "1",
        context_compress_level: "conservative",
        key_id: key.id,
      });
    });

    it("renames a key, and keeps its own name (no self-conflict)", async () => {
      expect((await patch(key.id, { name: "renamed" })).body.name).to.equal("renamed");
      expect((await patch(key.id, { name: "renamed" })).status).to.equal(200);
    });

    it("accepts an empty object as a no-op", async () => {
      const before = await snapshot(h);
      const res = await patch(key.id, {});
      expect(res.status).to.equal(200);
      expect(await snapshot(h)).to.equal(before);
    });

    it("takes a name that a revoked key of the account has", async () => {
      const old = await createKey(h, account, { name: "retired" });
      await api(h, "DELETE", `/v1/auth/keys/${old.id}`, { token: account.token });
      expect((await patch(key.id, { name: "retired" })).status).to.equal(200);
      await patch(key.id, { name: "renamed" });
    });
  });

  describe("errors", () => {
    it("answers 409 Duplicate name when renaming to another active key's name, changing nothing", async () => {
      await createKey(h, account, { name: "taken" });
      const before = await snapshot(h);
      const res = await patch(key.id, { name: "taken", intensity: "lite" });
      expect(res.status).to.equal(409);
      expect(res.body.error.message).to.equal("Duplicate name");
      expect(await snapshot(h)).to.equal(before);
    });

    it("answers 409 Key is revoked for a revoked key, changing nothing", async () => {
      const revoked = await createKey(h, account, { name: "gone" });
      await api(h, "DELETE", `/v1/auth/keys/${revoked.id}`, { token: account.token });
      const before = await snapshot(h);
      const res = await patch(revoked.id, { intensity: "lite" });
      expect(res.status).to.equal(409);
      expect(res.body.error).to.deep.equal({ message: "Key is revoked", type: "conflict_error", code: "key_revoked" });
      expect(await snapshot(h)).to.equal(before);
      expect(await h.redis.exists(cacheKeyFor(hashKey(revoked.raw_key)))).to.equal(0);
    });
  });

  describe("bad input", () => {
    itRejectsBadInput(
      () => h,
      () => ({ method: "PATCH", path: `/v1/auth/keys/${key.id}`, token: account.token }),
      [
        ...NOT_JSON,
        ...BAD_SETTINGS,
        ...["raw_key", "id", "key_prefix", "is_active", "rate_limit_rpm", "created_at", "last_used_at"].map(
          (field) => ({
            name: `${field} in the body`,
            body: { [field]: field === "is_active" ? true : "x", name: "fine" },
            status: 400,
            param: field,
            message: `${field} is not editable`,
          }),
        ),
      ],
    );
  });
});
