import { expect } from "chai";
import {
  api,
  createAccount,
  createKey,
  type ErrorBody,
  type Harness,
  type ListedKey,
  startHarness,
  type TestAccount,
} from "./harness.ts";

const LIST_FIELDS = [
  "id",
  "key_prefix",
  "name",
  "intensity",
  "auto_compress_input",
  "smart_detect_enabled",
  "context_compress",
  "context_compress_level",
  "is_active",
  "rate_limit_rpm",
  "created_at",
  "last_used_at",
];

describe("GET /v1/auth/keys", () => {
  let h: Harness;
  let account: TestAccount;

  before(async () => {
    h = await startHarness("keys_list");
    account = await createAccount(h, "pro");
  });
  after(() => h.stop());

  it("answers an empty array for an account without keys", async () => {
    const res = await api(h, "GET", "/v1/auth/keys", { token: account.token });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal([]);
  });

  it("lists active and revoked keys, newest first, in exactly the list shape", async () => {
    const first = await createKey(h, account, { name: "first" });
    const second = await createKey(h, account, { name: "second", intensity: "lite" });
    const third = await createKey(h, account, { name: "third" });
    await api(h, "DELETE", `/v1/auth/keys/${second.id}`, { token: account.token });
    const res = await api<ListedKey[]>(h, "GET", "/v1/auth/keys", { token: account.token });
    expect(res.status).to.equal(200);
    expect(res.body.map((k) => k.id)).to.deep.equal([third.id, second.id, first.id]);
    for (const k of res.body) {
      expect(Object.keys(k)).to.deep.equal(LIST_FIELDS);
      expect(k).not.to.have.property("raw_key");
      expect(k.rate_limit_rpm).to.equal(600);
    }
    expect(res.body[1]).to.include({
      name: "second",
      intensity: "lite",
      is_active: false,
      key_prefix: second.key_prefix,
    });
    expect(res.body[0]).to.include({ is_active: true, last_used_at: null, created_at: third.created_at });
    const text = JSON.stringify(res.body);
    for (const key of [first, second, third]) expect(text).not.to.include(key.raw_key);
  });

  it("shows last_used_at once the key was used", async () => {
    const key = await createKey(h, account, { name: "used" });
    const at = new Date("2026-01-02T03:04:05.678Z");
    await h.db.query("UPDATE service_keys SET last_used_at = $1 WHERE id = $2", [at, key.id]);
    const res = await api<ListedKey[]>(h, "GET", "/v1/auth/keys", { token: account.token });
    expect(res.body.find((k) => k.id === key.id)?.last_used_at).to.equal(at.toISOString());
  });

  it("is 404 for an unknown path under /v1/auth/keys and 404 for unknown routes, in the envelope", async () => {
    const res = await api<ErrorBody>(h, "GET", "/v1/auth/nothing-here", { token: account.token });
    expect(res.status).to.equal(404);
    expect(res.body.error.message).to.equal("Not found");
  });
});
