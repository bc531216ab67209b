import { cacheKeyFor } from "@terse/keys";
import { expect } from "chai";
import { api, createAccount, createKey, type ErrorBody, type Harness, startHarness } from "./harness.ts";

// The plan limit and name uniqueness hold under concurrent requests because Postgres
// enforces them (account row lock, partial unique index), not application code.

async function cachedKeyIdsOf(h: Harness, accountId: string): Promise<string[]> {
  const ids: string[] = [];
  for (const key of await h.redis.keys(cacheKeyFor("*"))) {
    const [keyId, owner] = await h.redis.hmget(key, "key_id", "account_id");
    if (owner === accountId && keyId) ids.push(keyId);
  }
  return ids.sort();
}

describe("key writes under concurrency", () => {
  let h: Harness;
  before(async () => {
    h = await startHarness("concurrency");
  });
  after(() => h.stop());

  it("10 parallel creates on a Free account give exactly 2 keys (8 x 403), in Postgres and Redis alike", async () => {
    const account = await createAccount(h, "free");
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        api<ErrorBody>(h, "POST", "/v1/auth/keys", { token: account.token, body: { name: `parallel-${i}` } }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).to.deep.equal([201, 201, 403, 403, 403, 403, 403, 403, 403, 403]);
    for (const r of results.filter((x) => x.status === 403))
      expect(r.body.error.message).to.equal("API key limit reached");
    const rows = await h.db.query<{ id: string }>(
      "SELECT id FROM service_keys WHERE account_id = $1 AND is_active ORDER BY id",
      [account.id],
    );
    expect(rows.rows).to.have.length(2);
    expect(await cachedKeyIdsOf(h, account.id)).to.deep.equal(rows.rows.map((r) => r.id));
  });

  it("5 parallel creates of one name give exactly one key (4 x 409 Duplicate name)", async () => {
    const account = await createAccount(h, "pro");
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        api<ErrorBody>(h, "POST", "/v1/auth/keys", { token: account.token, body: { name: "same-name" } }),
      ),
    );
    expect(results.map((r) => r.status).sort()).to.deep.equal([201, 409, 409, 409, 409]);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error.message).to.equal("Duplicate name");
    const rows = await h.db.query("SELECT id FROM service_keys WHERE account_id = $1", [account.id]);
    expect(rows.rows).to.have.length(1);
    expect(await cachedKeyIdsOf(h, account.id)).to.have.length(1);
  });

  it("two keys renamed to one name at once: one 200, one 409", async () => {
    const account = await createAccount(h, "pro");
    const a = await createKey(h, account, { name: "a" });
    const b = await createKey(h, account, { name: "b" });
    const results = await Promise.all(
      [a, b].map((k) => api(h, "PATCH", `/v1/auth/keys/${k.id}`, { token: account.token, body: { name: "wanted" } })),
    );
    expect(results.map((r) => r.status).sort()).to.deep.equal([200, 409]);
    const named = await h.db.query("SELECT id FROM service_keys WHERE account_id = $1 AND name = 'wanted'", [
      account.id,
    ]);
    expect(named.rows).to.have.length(1);
  });

  it("parallel rotations of one key: exactly one succeeds, and exactly one key stays active and cached", async () => {
    const account = await createAccount(h, "free");
    const key = await createKey(h, account, { name: "rotating" });
    const results = await Promise.all(
      Array.from({ length: 4 }, () => api(h, "POST", `/v1/auth/keys/${key.id}/rotate`, { token: account.token })),
    );
    expect(results.map((r) => r.status).sort()).to.deep.equal([201, 409, 409, 409]);
    const active = await h.db.query<{ id: string }>("SELECT id FROM service_keys WHERE account_id = $1 AND is_active", [
      account.id,
    ]);
    expect(active.rows).to.have.length(1);
    expect(await cachedKeyIdsOf(h, account.id)).to.deep.equal([active.rows[0]?.id]);
  });

  it("revoke racing a PATCH never leaves the revoked key in Redis", async () => {
    const account = await createAccount(h, "pro");
    for (let round = 0; round < 5; round++) {
      const key = await createKey(h, account, { name: `race-${round}` });
      await Promise.all([
        api(h, "PATCH", `/v1/auth/keys/${key.id}`, { token: account.token, body: { intensity: "lite" } }),
        api(h, "DELETE", `/v1/auth/keys/${key.id}`, { token: account.token }),
        api(h, "PATCH", `/v1/auth/keys/${key.id}`, { token: account.token, body: { intensity: "ultra" } }),
      ]);
      expect(await cachedKeyIdsOf(h, account.id)).not.to.include(key.id);
    }
  });
});
