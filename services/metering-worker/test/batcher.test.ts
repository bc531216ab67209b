import type { EventResult__Output } from "@terse/metering-proto";
import type { UsageEvent } from "@terse/usage-events";
import { expect } from "chai";
import { UsageBatcher } from "../src/batcher.ts";

// The batcher alone, with a send function the test answers by hand: which events travel
// together, and whose results each job gets back.

interface Call {
  ids: string[];
  answer(results?: EventResult__Output[]): void;
  fail(err: Error): void;
}

function harness(options: { maxEvents?: number; maxInFlight?: number } = {}) {
  const calls: Call[] = [];
  const batcher = new UsageBatcher(
    (events) =>
      new Promise((resolve, reject) => {
        const ids = events.map((e) => e.event_id);
        calls.push({
          ids,
          answer: (results) =>
            resolve(results ?? ids.map((id) => ({ event_id: id, outcome: "INSERTED" as const, reason: "" }))),
          fail: reject,
        });
      }),
    options,
  );
  return { calls, batcher };
}

const events = (...ids: string[]) => ids.map((event_id) => ({ event_id }) as UsageEvent);
const ids = (results: EventResult__Output[]) => results.map((r) => r.event_id);
/** Lets the batcher's promise callbacks run (microtasks only, no timers). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("UsageBatcher", () => {
  it("sends a job's events at once when no call is in flight", async () => {
    const { calls, batcher } = harness();
    const done = batcher.submit(events("a", "b"));
    expect(calls.map((c) => c.ids)).to.deep.equal([["a", "b"]]);
    calls[0]?.answer();
    expect(ids(await done)).to.deep.equal(["a", "b"]);
  });

  it("gathers the jobs that arrive during a call into the next one, and gives each its own results", async () => {
    const { calls, batcher } = harness({ maxInFlight: 1 });
    const first = batcher.submit(events("a"));
    const second = batcher.submit(events("b", "c"));
    const third = batcher.submit(events("d"));
    expect(calls.map((c) => c.ids)).to.deep.equal([["a"]]);
    calls[0]?.answer();
    await settle();
    expect(calls.map((c) => c.ids)).to.deep.equal([["a"], ["b", "c", "d"]]);
    calls[1]?.answer([
      { event_id: "b", outcome: "INSERTED", reason: "" },
      { event_id: "c", outcome: "DUPLICATE", reason: "" },
      { event_id: "d", outcome: "REJECTED", reason: "unknown key_id" },
    ]);
    expect(ids(await first)).to.deep.equal(["a"]);
    expect((await second).map((r) => r.outcome)).to.deep.equal(["INSERTED", "DUPLICATE"]);
    expect(await third).to.deep.equal([{ event_id: "d", outcome: "REJECTED", reason: "unknown key_id" }]);
  });

  it("keeps calls within maxEvents, splitting a job larger than one call", async () => {
    const { calls, batcher } = harness({ maxEvents: 3, maxInFlight: 1 });
    const big = batcher.submit(events("a", "b", "c", "d", "e"));
    const small = batcher.submit(events("f"));
    calls[0]?.answer();
    await settle();
    calls[1]?.answer();
    expect(calls.map((c) => c.ids)).to.deep.equal([
      ["a", "b", "c"],
      ["d", "e", "f"],
    ]);
    expect(ids(await big)).to.deep.equal(["a", "b", "c", "d", "e"]);
    expect(ids(await small)).to.deep.equal(["f"]);
  });

  it("fails every job of a failed call, and goes on with the next ones", async () => {
    const { calls, batcher } = harness({ maxInFlight: 1 });
    const first = batcher.submit(events("a"));
    const second = batcher.submit(events("b"));
    calls[0]?.fail(new Error("UNAVAILABLE"));
    const err = await first.catch((e: Error) => e);
    expect((err as Error).message).to.equal("UNAVAILABLE");
    await settle();
    calls[1]?.answer();
    expect(ids(await second)).to.deep.equal(["b"]);
  });

  it("fails the jobs of a call whose answer does not have one result per event", async () => {
    const { calls, batcher } = harness();
    const done = batcher.submit(events("a", "b"));
    calls[0]?.answer([{ event_id: "a", outcome: "INSERTED", reason: "" }]);
    const err = await done.catch((e: Error) => e);
    expect((err as Error).message).to.match(/1 results for 2 events/);
  });

  it("runs up to maxInFlight calls at once", async () => {
    const { calls, batcher } = harness({ maxInFlight: 2 });
    void batcher.submit(events("a"));
    void batcher.submit(events("b"));
    void batcher.submit(events("c"));
    expect(calls.map((c) => c.ids)).to.deep.equal([["a"], ["b"]]);
    calls[0]?.answer();
    await settle();
    expect(calls.map((c) => c.ids)).to.deep.equal([["a"], ["b"], ["c"]]);
  });
});
