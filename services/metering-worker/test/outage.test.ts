import { grpc } from "@terse/metering-proto";
import { expect } from "chai";
import { isNotNow, OutageBackoff } from "../src/outage.ts";

describe("metering worker: a control plane away", () => {
  it("tells a call refused for now from one no waiting mends", () => {
    const err = (code: number) => Object.assign(new Error("x"), { code });
    for (const code of [
      grpc.status.UNAVAILABLE,
      grpc.status.DEADLINE_EXCEEDED,
      grpc.status.RESOURCE_EXHAUSTED,
      grpc.status.ABORTED,
      grpc.status.UNAUTHENTICATED,
    ])
      expect(isNotNow(err(code)), grpc.status[code]).to.equal(true);
    for (const code of [grpc.status.INTERNAL, grpc.status.INVALID_ARGUMENT, grpc.status.UNKNOWN])
      expect(isNotNow(err(code)), grpc.status[code]).to.equal(false);
    expect(isNotNow(new Error("control plane answered 1 results for 2 events"))).to.equal(false);
    expect(isNotNow(undefined)).to.equal(false);
  });

  it("waits twice as long with every refused call in a row, up to its bound, and starts over once one gets through", () => {
    const backoff = new OutageBackoff(1_000, 30_000);
    expect(backoff.refused()).to.equal(true);
    const waits = [backoff.waitMs];
    for (let i = 0; i < 7; i++) {
      expect(backoff.refused()).to.equal(false);
      waits.push(backoff.waitMs);
    }
    expect(waits).to.deep.equal([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
    expect(backoff.tookCall()).to.equal(true);
    expect(backoff.tookCall()).to.equal(false);
    expect(backoff.refused()).to.equal(true);
    expect(backoff.waitMs).to.equal(1_000);
  });
});
