import { expect } from "chai";
import { itRefusesBadTokens } from "./auth-checks.ts";
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

describe("key routes: security", () => {
  let h: Harness;
  let owner: TestAccount;
  let other: TestAccount;
  let key: CreatedKey;

  before(async () => {
    h = await startHarness("keys_security");
    owner = await createAccount(h, "pro");
    other = await createAccount(h, "pro");
    key = await createKey(h, owner, { name: "owned" });
  });
  after(() => h.stop());

  const routes = () => [
    { method: "POST", path: () => "/v1/auth/keys", body: { name: "x" } },
    { method: "GET", path: () => "/v1/auth/keys" },
    { method: "PATCH", path: () => `/v1/auth/keys/${key.id}`, body: { name: "renamed" } },
    { method: "POST", path: () => `/v1/auth/keys/${key.id}/rotate` },
    { method: "DELETE", path: () => `/v1/auth/keys/${key.id}` },
  ];

  itRefusesBadTokens(
    () => h,
    () => owner,
    routes,
  );

  it("accepts the token case-insensitively as `bearer` and with the right claims", async () => {
    const res = await api(h, "GET", "/v1/auth/keys", { headers: { authorization: `bearer ${owner.token}` } });
    expect(res.status).to.equal(200);
  });

  for (const [what, method, suffix, body] of [
    ["PATCH", "PATCH", "", { name: "stolen" }],
    ["rotate", "POST", "/rotate", undefined],
    ["DELETE", "DELETE", "", undefined],
  ] as const) {
    it(`answers 404 Not found to ${what} of another account's key, and changes nothing`, async () => {
      const before = await snapshot(h);
      const res = await api<ErrorBody>(h, method, `/v1/auth/keys/${key.id}${suffix}`, {
        token: other.token,
        ...(body ? { body } : {}),
      });
      expect(res.status).to.equal(404);
      expect(res.body.error).to.deep.equal({ message: "Not found", type: "not_found_error", code: "not_found" });
      expect(await snapshot(h)).to.equal(before);
    });

    for (const id of ["key_doesnotexist0000000", "not-an-id", "%27%20OR%201%3D1--", "x".repeat(300), "0"]) {
      it(`answers 404 Not found to ${what} of the id ${JSON.stringify(decodeURIComponent(id).slice(0, 24))}`, async () => {
        const before = await snapshot(h);
        const res = await api<ErrorBody>(h, method, `/v1/auth/keys/${id}${suffix}`, {
          token: owner.token,
          ...(body ? { body } : {}),
        });
        expect(res.status).to.equal(404);
        expect(res.body.error.message).to.equal("Not found");
        expect(await snapshot(h)).to.equal(before);
      });
    }
  }

  it("never lists another account's keys", async () => {
    const res = await api<{ id: string }[]>(h, "GET", "/v1/auth/keys", { token: other.token });
    expect(res.status).to.equal(200);
    expect(res.body.map((k) => k.id)).not.to.include(key.id);
  });

  it("never returns the raw key or its hash after creation", async () => {
    const res = await api(h, "GET", "/v1/auth/keys", { token: owner.token });
    const text = JSON.stringify(res.body);
    expect(text).not.to.include(key.raw_key);
    const row = await h.db.query<{ key_hash: string }>("SELECT key_hash FROM service_keys WHERE id = $1", [key.id]);
    expect(text).not.to.include(row.rows[0]?.key_hash);
  });
});
