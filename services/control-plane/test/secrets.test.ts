import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect } from "chai";
import {
  api,
  type CreatedKey,
  createAccount,
  createKey,
  type Harness,
  startHarness,
  TEST_PASSWORD,
} from "./harness.ts";

// Raw keys, passwords and access tokens never reach the service logs, Postgres or Redis
// (spec 1, DESIGN.md section 2). Everything the suite did is dumped and searched.

const run = promisify(execFile);

async function dumpRedis(h: Harness): Promise<string> {
  const out: string[] = [];
  for (const key of await h.redis.keys("*")) {
    out.push(key);
    const type = await h.redis.type(key);
    if (type === "hash") out.push(JSON.stringify(await h.redis.hgetall(key)));
    else if (type === "string") out.push(String(await h.redis.get(key)));
    else if (type === "set") out.push(JSON.stringify(await h.redis.smembers(key)));
    else if (type === "zset") out.push(JSON.stringify(await h.redis.zrange(key, 0, -1)));
    else if (type === "list") out.push(JSON.stringify(await h.redis.lrange(key, 0, -1)));
  }
  return out.join("\n");
}

describe("secrets never stored or logged", () => {
  let h: Harness;

  before(async () => {
    h = await startHarness("secrets");
  });
  after(() => h.stop());

  it("finds no raw key, password or token in the logs, a pg_dump or the Redis db", async () => {
    const account = await createAccount(h, "pro");
    const login = await api<{ access_token: string }>(h, "POST", "/v1/auth/login", {
      body: { email: account.email, password: TEST_PASSWORD },
    });
    expect(login.status).to.equal(200);
    const token = login.body.access_token;
    // A failed login too: its password must not show up either.
    const wrongPassword = "wrong-password-that-must-not-leak";
    await api(h, "POST", "/v1/auth/login", { body: { email: account.email, password: wrongPassword } });

    const keys: CreatedKey[] = [];
    for (const name of ["one", "two", "three"]) keys.push(await createKey(h, { ...account, token }, { name }));
    const rotated = await api<CreatedKey>(h, "POST", `/v1/auth/keys/${keys[0]?.id}/rotate`, { token });
    keys.push(rotated.body);
    await api(h, "PATCH", `/v1/auth/keys/${keys[1]?.id}`, { token, body: { intensity: "lite" } });
    await api(h, "DELETE", `/v1/auth/keys/${keys[2]?.id}`, { token });
    // Errors with secrets nearby: a raw key sent where a name goes, a bad PATCH, a token in
    // the query (refused, and its URL is logged).
    await api(h, "PATCH", `/v1/auth/keys/${keys[1]?.id}`, { token, body: { raw_key: keys[1]?.raw_key } });
    const inQuery = await api(h, "GET", `/v1/auth/keys?access_token=${token}`, {});
    expect(inQuery.status).to.equal(401);
    await api(h, "GET", `/v1/usage?group_by=key&from=2026-11-01&key=${keys[1]?.raw_key}`, { token });

    const logs = h.logs.join("");
    const { stdout: pgDump } = await run("pg_dump", ["--no-owner", h.db.url], { maxBuffer: 64 * 1024 * 1024 });
    const redisDump = await dumpRedis(h);

    // The dumps are real: they hold what was written.
    expect(logs).to.include("/v1/auth/keys");
    expect(logs).to.include("/v1/usage?group_by=key&from=2026-11-01&key=%5BREDACTED%5D");
    expect(pgDump).to.include(String(keys[1]?.id));
    expect(redisDump).to.include(String(keys[1]?.id));

    const secrets = [TEST_PASSWORD, wrongPassword, token, account.token, ...keys.map((k) => k.raw_key)];
    for (const secret of secrets) {
      expect(logs, "service logs").not.to.include(secret);
      expect(pgDump, "pg_dump").not.to.include(secret);
      expect(redisDump, "redis dump").not.to.include(secret);
      // Not even the secret part of a raw key without its prefix.
      if (secret.startsWith("svc_live_")) {
        const body = secret.slice("svc_live_".length);
        for (const text of [logs, pgDump, redisDump]) expect(text).not.to.include(body);
      }
    }
  });
});
