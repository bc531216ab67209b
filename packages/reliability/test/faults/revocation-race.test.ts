import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import {
  type Account,
  type CreatedKey,
  callProxy,
  type Rig,
  report,
  type System,
  startLoad,
  startRig,
  statusCounts,
} from "../../src/index.ts";

// 64 callers keep using a key while its owner revokes it through the control plane:
// from the moment DELETE returns, no request that starts gets through (spec section 3).

const CALLERS = 64;

describe("fault: revocation racing 64 callers", function () {
  this.timeout(120_000);
  let rig: Rig;
  let system: System;
  let account: Account;

  before(async () => {
    rig = await startRig("faults_revoke");
    ({ system } = rig);
    account = await system.createAccount("revocation@example.com");
  });

  after(() => rig?.close());

  for (const how of ["DELETE", "rotate"] as const) {
    it(`lets no request that starts after ${how} returns through`, async () => {
      const key: CreatedKey = await system.createKey(account, `race-${how}`);
      const load = startLoad(() => callProxy(system.dataPlaneUrl, key.raw_key), { concurrency: CALLERS });
      await waitFor(() => load.samples.filter((s) => s.status === 200).length > 2 * CALLERS, { timeoutMs: 30_000 });
      const res = how === "DELETE" ? await system.revokeKey(account, key.id) : await system.rotateKey(account, key.id);
      const returnedAt = performance.now();
      expect(res.status).to.be.oneOf([200, 201]);
      await waitFor(() => load.samples.filter((s) => s.start > returnedAt).length > 4 * CALLERS, { timeoutMs: 30_000 });
      const samples = await load.stop();

      const startedAfter = samples.filter((s) => s.start > returnedAt);
      const inFlight = samples.filter((s) => s.start <= returnedAt && s.end > returnedAt);
      expect(statusCounts(startedAfter)).to.deep.equal({ 401: startedAfter.length });
      report({
        how,
        before: statusCounts(samples.filter((s) => s.end <= returnedAt)),
        in_flight_at_return: statusCounts(inFlight),
        started_after: statusCounts(startedAfter),
      });
    });
  }
});
