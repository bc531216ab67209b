import { SHIPPED_PRICES, withOverrides } from "@terse/prices";
import { expect } from "chai";
import { UsageRecorder } from "../src/domain/usage-recorder.ts";
import { UsageReport } from "../src/domain/usage-report.ts";
import { api, createAccount, createKey, type Harness, startHarness, type TestAccount } from "./harness.ts";

// GET /v1/usage in money, on real Postgres: cost from the stored tokens at the table's
// prices (each input part at its rate), the estimate of the cost without terse (the
// tokens before compression, the cache parts grown in proportion), savings per day, key
// and model, unpriced models listed and left out of the money, and a corrected price
// applying to requests recorded before it (money is computed at read time).

/** Round prices (USD per million) so every figure below is checked by hand. */
const M_CACHE = { input: 10, cached_input: 1, cache_write: 12.5, output: 20 };

interface Figures {
  requests: number;
  input_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_usd: number;
  cost_without_terse_usd: number;
  saved_usd: number;
  unpriced_requests: number;
  [k: string]: unknown;
}
interface Body {
  data: Figures[];
  totals: Figures;
  unpriced_models: string[];
  money: { currency: string; prices_as_of: string; prices_source: string; estimate: string };
}

describe("GET /v1/usage: cost and savings in money", () => {
  let h: Harness;
  let me: TestAccount;
  let keyA: string;
  let keyB: string;
  let seq = 0;

  const event = (
    keyId: string,
    day: string,
    model: string,
    t: { input: number; before: number; output: number; read?: number; write?: number },
  ) => ({
    event_id: `evt_money_${++seq}`,
    key_id: keyId,
    account_id: me.id,
    provider: "anthropic",
    model,
    status: 200,
    streamed: true,
    input_tokens: t.input,
    output_tokens: t.output,
    cache_read_tokens: t.read ?? 0,
    cache_write_tokens: t.write ?? 0,
    input_tokens_before_compression: t.before,
    estimated: false,
    intensity: "full",
    compression_reason: "key setting",
    latency_ms: 5,
    started_at: `${day}T08:00:00.000Z`,
  });

  before(async () => {
    h = await startHarness("usage_money", { env: { TERSE_PRICES: JSON.stringify({ "m-cache": M_CACHE }) } });
    me = await createAccount(h, "pro");
    keyA = (await createKey(h, me, { name: "agent" })).id;
    keyB = (await createKey(h, me, { name: "ci" })).id;
    const recorded = await new UsageRecorder(h.prisma, h.config.TERSE_PLANS).record([
      // Cost: 200 fresh x 10 + 600 read x 1 + 200 written x 12.5 + 100 out x 20 = 7,100 per million.
      // Before compression 1,500 (x1.5): 300 fresh, 900 read, 300 written = 9,650 per million.
      event(keyA, "2026-11-01", "m-cache", { input: 1000, before: 1500, output: 100, read: 600, write: 200 }),
      // A dated snapshot is priced as its model: 100 x 10 = 1,000 per million, nothing saved.
      event(keyB, "2026-11-01", "m-cache-20260101", { input: 100, before: 100, output: 0 }),
      // Nothing saved: 500 x 10 + 50 x 20 = 6,000 per million on both sides.
      event(keyB, "2026-11-02", "m-cache", { input: 500, before: 500, output: 50 }),
      // Unpriced: in the tokens, not in the money.
      event(keyA, "2026-11-02", "acme-unknown", { input: 100, before: 200, output: 5 }),
    ]);
    expect(recorded.results.map((r) => r.outcome)).to.deep.equal(["INSERTED", "INSERTED", "INSERTED", "INSERTED"]);
  });
  after(() => h.stop());

  const get = async (query: string) => {
    const res = await api<Body>(h, "GET", `/v1/usage?from=2026-11-01&to=2026-11-03${query}`, { token: me.token });
    expect(res.status).to.equal(200);
    return res.body;
  };
  const money = (f: Figures | undefined) => ({
    cost_usd: f?.cost_usd,
    cost_without_terse_usd: f?.cost_without_terse_usd,
    saved_usd: f?.saved_usd,
    unpriced_requests: f?.unpriced_requests,
  });

  it("totals: cache tokens summed, cost and the estimate of the cost without terse, the unpriced model named", async () => {
    const body = await get("");
    expect(body.totals).to.include({
      requests: 4,
      input_tokens: 1700,
      cache_read_tokens: 600,
      cache_write_tokens: 200,
      input_tokens_before_compression: 2300,
      tokens_saved: 600,
    });
    expect(money(body.totals)).to.deep.equal({
      cost_usd: 0.0141,
      cost_without_terse_usd: 0.01665,
      saved_usd: 0.00255,
      unpriced_requests: 1,
    });
    expect(body.unpriced_models).to.deep.equal(["acme-unknown"]);
    expect(body.money.currency).to.equal("USD");
    expect(body.money.prices_as_of).to.equal(SHIPPED_PRICES.as_of);
    expect(body.money.prices_source).to.include("Operator overrides: TERSE_PRICES");
    expect(body.money.estimate).to.match(/estimate/);
  });

  it("per day", async () => {
    const body = await get("&group_by=day");
    expect(body.data.map((d) => d.day)).to.deep.equal(["2026-11-01", "2026-11-02"]);
    expect(money(body.data[0])).to.deep.equal({
      cost_usd: 0.0081,
      cost_without_terse_usd: 0.01065,
      saved_usd: 0.00255,
      unpriced_requests: 0,
    });
    expect(money(body.data[1])).to.deep.equal({
      cost_usd: 0.006,
      cost_without_terse_usd: 0.006,
      saved_usd: 0,
      unpriced_requests: 1,
    });
  });

  it("per key and per model", async () => {
    const byKey = await get("&group_by=key");
    const a = byKey.data.find((r) => r.key_id === keyA);
    const b = byKey.data.find((r) => r.key_id === keyB);
    expect(a).to.include({
      key_name: "agent",
      requests: 2,
      unpriced_requests: 1,
      cost_usd: 0.0071,
      saved_usd: 0.00255,
    });
    expect(b).to.include({ key_name: "ci", requests: 2, unpriced_requests: 0, cost_usd: 0.007, saved_usd: 0 });
    const byModel = await get("&group_by=model");
    expect(byModel.data.map((r) => [r.model, r.requests, r.cost_usd, r.saved_usd, r.unpriced_requests])).to.deep.equal([
      ["acme-unknown", 1, 0, 0, 1],
      ["m-cache", 2, 0.0131, 0.00255, 0],
      ["m-cache-20260101", 1, 0.001, 0, 0],
    ]);
  });

  it("filters by key", async () => {
    const body = await get(`&key_id=${keyB}`);
    expect(money(body.totals)).to.deep.equal({
      cost_usd: 0.007,
      cost_without_terse_usd: 0.007,
      saved_usd: 0,
      unpriced_requests: 0,
    });
    expect(body.unpriced_models).to.deep.equal([]);
  });

  it("prices at read time: a corrected price applies to requests recorded before it", async () => {
    const range = {
      accountId: me.id,
      from: new Date("2026-11-01"),
      to: new Date("2026-11-03"),
      groupBy: "day" as const,
    };
    const doubled = withOverrides(SHIPPED_PRICES, { "m-cache": { ...M_CACHE, input: 20 } }, "test");
    const before = await new UsageReport(h.prisma, withOverrides(SHIPPED_PRICES, { "m-cache": M_CACHE }, "t")).run(
      range,
    );
    const after = await new UsageReport(h.prisma, doubled).run(range);
    // Fresh input is 200 + 100 + 500 = 800 tokens: 10 more per million each.
    expect(after.totals.cost_usd - before.totals.cost_usd).to.be.closeTo(0.008, 1e-9);
    // Unpriced once the operator removes the model: its requests leave the money.
    const removed = await new UsageReport(h.prisma, withOverrides(SHIPPED_PRICES, { "m-cache": null }, "t")).run(range);
    expect(removed.unpriced_models).to.deep.equal(["acme-unknown", "m-cache", "m-cache-20260101"]);
    expect(removed.totals).to.include({ cost_usd: 0, saved_usd: 0, unpriced_requests: 4, input_tokens: 1700 });
  });
});

describe("GET /v1/usage: money rounded once, per group", () => {
  // Three models whose one request costs half a micro-dollar each: shown as 0.000001 each,
  // the rows must add up to the totals shown (3, not the 2 of rounding the sum).
  const HALF = { input: 0, cached_input: 0, cache_write: 0, output: 0.5 };
  const MODELS = ["m-half-a", "m-half-b", "m-half-c"];
  let h: Harness;
  let me: TestAccount;

  before(async () => {
    h = await startHarness("usage_money_rounding", {
      env: { TERSE_PRICES: JSON.stringify(Object.fromEntries(MODELS.map((m) => [m, HALF]))) },
    });
    me = await createAccount(h, "pro");
    const key = (await createKey(h, me, { name: "agent" })).id;
    const events = MODELS.map((model, i) => ({
      event_id: `evt_half_${i}`,
      key_id: key,
      account_id: me.id,
      provider: "openai",
      model,
      status: 200,
      streamed: false,
      input_tokens: 1,
      output_tokens: 1,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      // Before compression 3 input tokens at no price: the two costs are the same.
      input_tokens_before_compression: 3,
      estimated: false,
      intensity: "full",
      compression_reason: "key setting",
      latency_ms: 5,
      started_at: "2026-11-01T08:00:00.000Z",
    }));
    await new UsageRecorder(h.prisma, h.config.TERSE_PLANS).record(events);
  });
  after(() => h.stop());

  it("rows add up to the totals, and each saving is the difference of the costs shown", async () => {
    const res = await api<Body>(h, "GET", "/v1/usage?from=2026-11-01&to=2026-11-02&group_by=model", {
      token: me.token,
    });
    expect(res.status).to.equal(200);
    expect(res.body.data.map((r) => r.cost_usd)).to.deep.equal([0.000001, 0.000001, 0.000001]);
    expect(res.body.totals.cost_usd).to.equal(0.000003);
    expect(res.body.totals.cost_without_terse_usd).to.equal(0.000003);
    for (const f of [...res.body.data, res.body.totals]) {
      expect(f.saved_usd).to.equal(Math.round((f.cost_without_terse_usd - f.cost_usd) * 1e6) / 1e6);
    }
  });
});
