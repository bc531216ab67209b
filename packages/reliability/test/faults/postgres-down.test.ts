import { type PostgresServer, waitFor } from "@terse/testkit";
import { expect } from "chai";
import { type Account, type CreatedKey, callProxy, type Rig, type System, startRig } from "../../src/index.ts";

// Postgres goes away while the proxy is in use: the proxy keeps serving keys from
// Redis, the control plane says 503 where it needs Postgres, and the usage of every
// call made meanwhile is recorded once Postgres is back.

const TOKENS_PER_CALL = 11 + 7; // the fake upstream's default usage

describe("fault: Postgres down", function () {
  this.timeout(120_000);
  let rig: Rig;
  let postgres: PostgresServer;
  let system: System;
  let account: Account;
  let key: CreatedKey;

  before(async () => {
    rig = await startRig("faults_pg", { ownPostgres: true });
    ({ system } = rig);
    postgres = rig.postgres as PostgresServer;
    account = await system.createAccount("pg-down@example.com");
    key = await system.createKey(account, "pg-down");
  });

  after(() => rig?.close());

  const keyRoute = (method: string, path = "/v1/auth/keys", body?: unknown) =>
    fetch(`${system.controlPlaneUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${account.token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it("serves valid keys from Redis, answers 503 on the key endpoints and /readyz, and records every call once it is back", async () => {
    const calls = 40;
    for (let i = 0; i < calls / 2; i++) expect(await callProxy(system.dataPlaneUrl, key.raw_key)).to.equal(200);

    await postgres.stop();
    for (let i = 0; i < calls / 2; i++) expect(await callProxy(system.dataPlaneUrl, key.raw_key)).to.equal(200);

    for (const res of [
      await keyRoute("GET"),
      await keyRoute("POST", "/v1/auth/keys", { name: "while-down" }),
      await keyRoute("PATCH", `/v1/auth/keys/${key.id}`, { intensity: "lite" }),
      await keyRoute("DELETE", `/v1/auth/keys/${key.id}`),
    ]) {
      expect(res.status, res.url).to.equal(503);
      const body = (await res.json()) as { error: { message: string; code: string } };
      expect(body.error).to.include({ code: "service_unavailable", message: "service temporarily unavailable" });
    }
    const ready = await fetch(`${system.controlPlaneUrl}/readyz`);
    expect(ready.status).to.equal(503);
    expect(await ready.json()).to.include({ postgres: false, redis: true });

    await postgres.start();
    const recorded = await waitFor(
      async () => {
        const r = await system.recorded([key.id]);
        return r.events >= calls ? r : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, what: `${calls} usage events in Postgres` },
    );
    expect(recorded).to.deep.include({ events: calls, tokens: calls * TOKENS_PER_CALL });

    // Back to normal: the key endpoints answer and the DELETE that failed changed nothing.
    const list = await keyRoute("GET");
    expect(list.status).to.equal(200);
    const keys = (await list.json()) as { id: string; name: string; is_active: boolean; intensity: string }[];
    expect(keys.map((k) => [k.name, k.is_active, k.intensity])).to.deep.equal([["pg-down", true, "full"]]);
    expect(await callProxy(system.dataPlaneUrl, key.raw_key)).to.equal(200);
    expect((await fetch(`${system.controlPlaneUrl}/readyz`)).status).to.equal(200);
  });
});
