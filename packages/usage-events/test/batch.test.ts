import { expect } from "chai";
import { encodeUsageBatch, eventsOfBatch, type UsageEvent, usageEventSchema } from "../src/index.ts";

// A batch's columns carry every event back as it was, optional fields left out included,
// and read an earlier data plane's objects too; what is no batch is told apart.

function event(n: number, overrides: Partial<UsageEvent> = {}): UsageEvent {
  return {
    event_id: `req_${n}`,
    key_id: "key_1",
    account_id: "acct_1",
    provider: "anthropic",
    model: "claude-sonnet-4",
    status: 200,
    streamed: n % 2 === 0,
    input_tokens: 100 + n,
    output_tokens: n,
    cache_read_tokens: 40,
    cache_write_tokens: 0,
    input_tokens_before_compression: 180 + n,
    cache_read_tokens_before_compression: 60,
    cache_write_tokens_before_compression: 0,
    estimated: false,
    intensity: "full",
    compression_reason: null,
    latency_ms: 12,
    started_at: "2026-11-29T06:00:00.000Z",
    recall_rounds: 0,
    ...overrides,
  };
}

/** Through Redis as BullMQ keeps it: the payload's JSON. */
const stored = (data: unknown): unknown => JSON.parse(JSON.stringify(data));

describe("usage batch columns", () => {
  it("give back every event as it was, fields left out still left out and nulls still null", () => {
    const { cache_read_tokens_before_compression: _r, cache_write_tokens_before_compression: _w, ...older } = event(2);
    const events: UsageEvent[] = [
      event(1),
      older,
      event(3, { intensity: null, compression_reason: "structured output" }),
    ];
    const back = eventsOfBatch(stored(encodeUsageBatch(events)));
    expect(back).to.deep.equal(events);
    for (const e of back ?? []) expect(usageEventSchema.safeParse(e).success).to.equal(true);
  });

  it("are well under half the size of the events as objects", () => {
    const events = Array.from({ length: 250 }, (_, i) => event(i));
    const columns = JSON.stringify(encodeUsageBatch(events)).length;
    const objects = JSON.stringify({ events }).length;
    expect(columns).to.be.below(objects * 0.5);
  });

  it("read a batch an earlier data plane wrote as objects, as it is", () => {
    const events = [event(1), event(2)];
    expect(eventsOfBatch(stored({ events }))).to.deep.equal(events);
  });

  it("tell apart what is no batch: empty, uneven columns, neither form", () => {
    for (const data of [
      null,
      "events",
      {},
      { events: [] },
      { events: "x" },
      { columns: {} },
      { columns: { event_id: [] } },
      { columns: { event_id: ["a", "b"], key_id: ["k"] } },
      { columns: { event_id: "a" } },
      { columns: [["a"]] },
    ]) {
      expect(eventsOfBatch(data), JSON.stringify(data)).to.equal(undefined);
    }
  });

  it("keep a column named __proto__ a field of its own, which the schema refuses", () => {
    const { columns } = encodeUsageBatch([event(1)]);
    const hostile = JSON.parse(`{"columns":{"__proto__":[{"polluted":true}],${JSON.stringify(columns).slice(1, -1)}}}`);
    const [back] = eventsOfBatch(hostile) ?? [];
    expect(Object.getPrototypeOf(back)).to.equal(Object.prototype);
    expect((back as { polluted?: boolean }).polluted).to.equal(undefined);
    expect(usageEventSchema.safeParse(back).success).to.equal(false);
  });
});
