import { QUOTA_CHANNEL, quotaExceededKeyFor, quotaMonth } from "@terse/keys";
import { expect } from "chai";
import { reconcileQuotaMarks, reevaluateQuota } from "../src/domain/usage-quota.ts";
import { UsageRecorder } from "../src/domain/usage-recorder.ts";
import { itRefusesBadTokens } from "./auth-checks.ts";
import {
  api,
  createAccount,
  createKey,
  type ErrorBody,
  type Harness,
  startHarness,
  type TestAccount,
} from "./harness.ts";

// GET /v1/usage (the dashboard's charts) over events recorded by the same code the
// gRPC service runs, and the quota mark's re-evaluation after a plan change.

interface UsageBody {
  from: string;
  to: string;
  group_by: string;
  data: Record<string, unknown>[];
  totals: {
    requests: number;
    input_tokens: number;
    output_tokens: number;
    input_tokens_before_compression: number;
    tokens_saved: number;
    [money: string]: number;
  };
  unpriced_models: string[];
}

describe("GET /v1/usage", () => {
  let h: Harness;
  let me: TestAccount;
  let other: TestAccount;
  let keyA: string;
  let keyB: string;
  let otherKey: string;
  let seq = 0;

  const event = (
    keyId: string,
    accountId: string,
    day: string,
    input: number,
    before: number,
    model = "gpt-4o-mini",
  ) => ({
    event_id: `evt_usage_${++seq}`,
    key_id: keyId,
    account_id: accountId,
    provider: "openai",
    model,
    status: 200,
    streamed: false,
    input_tokens: input,
    output_tokens: 10,
    input_tokens_before_compression: before,
    estimated: false,
    intensity: "full",
    compression_reason: "key setting",
    latency_ms: 5,
    started_at: `${day}T12:00:00.000Z`,
  });

  before(async () => {
    h = await startHarness("usage");
    me = await createAccount(h, "pro");
    other = await createAccount(h, "pro");
    keyA = (await createKey(h, me, { name: "a" })).id;
    keyB = (await createKey(h, me, { name: "b" })).id;
    otherKey = (await createKey(h, other, { name: "theirs" })).id;
    const recorder = new UsageRecorder(h.prisma, h.config.TERSE_PLANS);
    await recorder.record([
      event(keyA, me.id, "2026-11-01", 100, 150),
      event(keyA, me.id, "2026-11-01", 100, 100, "claude-test"),
      event(keyB, me.id, "2026-11-03", 50, 80),
      event(otherKey, other.id, "2026-11-01", 9_999, 9_999),
    ]);
  });
  after(() => h.stop());

  const get = (query: string, token = me.token) => api<UsageBody & ErrorBody>(h, "GET", `/v1/usage${query}`, { token });

  it("groups the caller's usage by day, every day of the range present, with tokens saved", async () => {
    const res = await get("?from=2026-11-01T00:00:00Z&to=2026-11-04T00:00:00Z");
    expect(res.status).to.equal(200);
    expect(res.body.group_by).to.equal("day");
    expect(res.body.data.map((r) => r.day)).to.deep.equal(["2026-11-01", "2026-11-02", "2026-11-03"]);
    expect(res.body.data[0]).to.include({
      requests: 2,
      input_tokens: 200,
      output_tokens: 20,
      input_tokens_before_compression: 250,
      tokens_saved: 50,
    });
    expect(res.body.data[1]).to.include({ requests: 0, input_tokens: 0, tokens_saved: 0 });
    // gpt-4o-mini at the shipped prices (0.15 input, 0.60 output per million); claude-test is unpriced.
    expect(res.body.totals).to.deep.equal({
      requests: 3,
      input_tokens: 250,
      output_tokens: 30,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      input_tokens_before_compression: 330,
      tokens_saved: 80,
      unpriced_requests: 1,
      recall_rounds: 0,
      requests_with_recall: 0,
      cost_usd: 0.000035,
      cost_without_terse_usd: 0.000047,
      saved_usd: 0.000012,
    });
    expect(res.body.unpriced_models).to.deep.equal(["claude-test"]);
  });

  it("groups by key with names and prefixes, and by model", async () => {
    const byKey = await get("?from=2026-11-01&to=2026-11-30&group_by=key");
    expect(byKey.status).to.equal(200);
    const a = byKey.body.data.find((r) => r.key_id === keyA);
    expect(a).to.include({ key_name: "a", requests: 2, tokens_saved: 50 });
    expect(String(a?.key_prefix)).to.match(/^svc_live_/);
    expect(byKey.body.data.some((r) => r.key_id === otherKey)).to.equal(false);
    const byModel = await get("?from=2026-11-01&to=2026-11-30&group_by=model");
    expect(byModel.body.data.map((r) => r.model).sort()).to.deep.equal(["claude-test", "gpt-4o-mini"]);
  });

  it("reports recalls per key: the rounds summed and the requests that recalled", async () => {
    const account = await createAccount(h, "pro");
    const agent = (await createKey(h, account, { name: "agent" })).id;
    const quiet = (await createKey(h, account, { name: "quiet" })).id;
    const withRounds = (keyId: string, rounds: number) => ({
      ...event(keyId, account.id, "2026-11-02", 300, 400),
      recall_rounds: rounds,
    });
    const { recall_rounds: _none, ...older } = withRounds(agent, 0);
    const recorder = new UsageRecorder(h.prisma, h.config.TERSE_PLANS);
    const out = await recorder.record([
      withRounds(agent, 2),
      withRounds(agent, 1),
      older,
      withRounds(quiet, 0),
      withRounds(quiet, -1),
      withRounds(quiet, 1.5),
    ]);
    expect(out.results.map((r) => r.outcome)).to.deep.equal([
      "INSERTED",
      "INSERTED",
      "INSERTED",
      "INSERTED",
      "REJECTED",
      "REJECTED",
    ]);
    expect(out.results[4]?.reason).to.match(/^recall_rounds: /);
    const res = await get("?from=2026-11-01&to=2026-11-30&group_by=key", account.token);
    expect(res.status).to.equal(200);
    const byName = new Map(res.body.data.map((r) => [r.key_name, r]));
    expect(byName.get("agent")).to.include({ requests: 3, recall_rounds: 3, requests_with_recall: 2 });
    expect(byName.get("quiet")).to.include({ requests: 1, recall_rounds: 0, requests_with_recall: 0 });
    expect(res.body.totals).to.include({ requests: 4, recall_rounds: 3, requests_with_recall: 2 });
    const byDay = await get("?from=2026-11-02&to=2026-11-03", account.token);
    expect(byDay.body.data[0]).to.include({ day: "2026-11-02", recall_rounds: 3, requests_with_recall: 2 });
  });

  it("counts tokens saved request by request, so groups add up to the totals however the report groups", async () => {
    const account = await createAccount(h, "pro");
    const key = (await createKey(h, account, { name: "k" })).id;
    const recorder = new UsageRecorder(h.prisma, h.config.TERSE_PLANS);
    await recorder.record([
      event(key, account.id, "2026-11-02", 100, 600), // saved 500
      // Dearer than without terse (a recall round, the instruction on a short request): saved 0, not -300.
      event(key, account.id, "2026-11-02", 400, 100, "claude-test"),
      event(key, account.id, "2026-11-03", 50, 80, "claude-test"), // saved 30
    ]);
    for (const groupBy of ["day", "model", "key"]) {
      const res = await get(`?from=2026-11-01&to=2026-11-30&group_by=${groupBy}`, account.token);
      const groups: number[] = res.body.data.map((r) => Number(r.tokens_saved));
      expect(res.body.totals.tokens_saved, groupBy).to.equal(530);
      expect(
        groups.reduce((a, b) => a + b, 0),
        groupBy,
      ).to.equal(530);
    }
  });

  it("filters by one of the caller's keys, and answers 404 for another account's key", async () => {
    const res = await get(`?from=2026-11-01&to=2026-11-30&key_id=${keyB}`);
    expect(res.body.totals.requests).to.equal(1);
    const theirs = await get(`?from=2026-11-01&to=2026-11-30&key_id=${otherKey}`);
    expect(theirs.status).to.equal(404);
    expect(theirs.body.error.message).to.equal("Not found");
  });

  it("defaults to the last 30 days by day", async () => {
    const res = await get("");
    expect(res.status).to.equal(200);
    expect(res.body.data.length).to.be.within(30, 31);
  });

  for (const [query, param, why] of [
    ["?from=yesterday", "from", /ISO 8601/],
    ["?to=2026-13-01", "to", /ISO 8601/],
    ["?from=2026-02-30", "from", /ISO 8601/],
    // Year 0 is a date JavaScript reads and Postgres refuses in a query: a 400, not a 500.
    ["?from=0000-01-01&to=0000-12-31", "from", /year 1 or later/],
    ["?from=0000-12-31T12:00:00Z&to=0001-01-02", "from", /year 1 or later/],
    ["?group_by=week", "group_by", /./],
    ["?from=2026-11-05&to=2026-11-01", "from", /before/],
    ["?from=2024-01-01&to=2026-01-01", "from", /366 days/],
    ["?bogus=1", "bogus", /Unknown/],
  ] as const) {
    it(`400 naming ${param} and why for ${query}`, async () => {
      const res = await get(query);
      expect(res.status).to.equal(400);
      expect(res.body.error.param).to.equal(param);
      expect(res.body.error.message).to.match(why);
    });
  }

  it("reads a range from the year 1 on", async () => {
    const res = await get("?from=0001-01-01&to=0001-12-31");
    expect(res.status).to.equal(200);
    expect(res.body.totals.requests).to.equal(0);
  });

  itRefusesBadTokens(
    () => h,
    () => me,
    () => [{ method: "GET", path: () => "/v1/usage" }],
  );
});

describe("UsageRecorder", () => {
  let h: Harness;
  before(async () => {
    h = await startHarness("recorder");
  });
  after(() => h.stop());

  it("counts an event once when it comes twice in one batch and again in a later one", async () => {
    const account = await createAccount(h, "pro");
    const key = await createKey(h, account);
    const e = {
      event_id: "evt_twice",
      key_id: key.id,
      account_id: account.id,
      provider: "openai",
      model: "m",
      status: 200,
      streamed: false,
      input_tokens: 40,
      output_tokens: 2,
      input_tokens_before_compression: 40,
      estimated: false,
      intensity: null,
      compression_reason: null,
      latency_ms: 1,
      started_at: new Date().toISOString(),
    };
    const recorder = new UsageRecorder(h.prisma, h.config.TERSE_PLANS);
    const first = await recorder.record([e, { ...e }]);
    expect(first.results.map((r) => r.outcome)).to.deep.equal(["INSERTED", "DUPLICATE"]);
    const again = await recorder.record([e]);
    expect(again.results.map((r) => r.outcome)).to.deep.equal(["DUPLICATE"]);
    const totals = await h.prisma.accountMonthlyUsage.findFirstOrThrow({ where: { accountId: account.id } });
    expect(Number(totals.tokens)).to.equal(42);
    expect(Number(totals.requests)).to.equal(1);
    expect(again.accounts[0]).to.include({ account_id: account.id, tokens: 42, exceeded: false });
  });

  it("adds up a month's tokens past 2^31 without overflow, one event's input and output included", async () => {
    const account = await createAccount(h, "pro");
    const key = await createKey(h, account);
    const big = { ...usageEvent("evt_big", key.id, account.id, 1_500_000_000), output_tokens: 1_000_000_000 };
    const recorder = new UsageRecorder(h.prisma, h.config.TERSE_PLANS);
    const out = await recorder.record([big]);
    expect(out.results.map((r) => r.outcome)).to.deep.equal(["INSERTED"]);
    const totals = await h.prisma.accountMonthlyUsage.findFirstOrThrow({ where: { accountId: account.id } });
    expect(Number(totals.tokens)).to.equal(2_500_000_000);
  });

  it("answers one result per event in input order, rejecting malformed and foreign events with a reason", async () => {
    const mine = await createAccount(h, "pro");
    const theirs = await createAccount(h, "pro");
    const myKey = await createKey(h, mine);
    const theirKey = await createKey(h, theirs);
    const good = usageEvent("evt_order_good", myKey.id, mine.id, 10);
    const recorder = new UsageRecorder(h.prisma, h.config.TERSE_PLANS);
    const out = await recorder.record([
      { bogus: true },
      usageEvent("evt_order_foreign", theirKey.id, mine.id, 10),
      good,
      { ...good, event_id: "evt_order_negative", input_tokens: -1 },
      { also: "bogus" },
    ]);
    expect(out.results.map((r) => [r.event_id, r.outcome])).to.deep.equal([
      ["", "REJECTED"],
      ["evt_order_foreign", "REJECTED"],
      ["evt_order_good", "INSERTED"],
      ["evt_order_negative", "REJECTED"],
      ["", "REJECTED"],
    ]);
    expect(out.results[1]?.reason).to.equal("key_id does not belong to account_id");
    expect(out.results[3]?.reason).to.match(/^input_tokens: /);
    expect(out.results[0]?.reason).to.not.equal("");
    expect(await h.prisma.usageEvent.count({ where: { accountId: { in: [mine.id, theirs.id] } } })).to.equal(1);
    expect(out.accounts).to.deep.equal([
      {
        account_id: mine.id,
        month: quotaMonth(),
        tokens: 12,
        limit: h.config.TERSE_PLANS.pro.monthly_tokens,
        exceeded: false,
      },
    ]);
  });

  it("refuses what Postgres cannot store (NUL, control characters, counts past int4) per event, recording the rest", async () => {
    const account = await createAccount(h, "pro");
    const key = await createKey(h, account);
    const recorder = new UsageRecorder(h.prisma, h.config.TERSE_PLANS);
    const ok = (id: string) => usageEvent(id, key.id, account.id, 5);
    const out = await recorder.record([
      ok("evt_store_a"),
      { ...ok("evt_store_nul"), model: "gpt\u0000x" },
      { ...ok("evt_store_newline"), model: "gpt\nx" },
      { ...ok("evt_store_reason"), compression_reason: "a\u0000b" },
      { ...ok("evt_store_big"), input_tokens: 3_000_000_000 },
      ok("evt_store_b"),
    ]);
    expect(out.results.map((r) => r.outcome)).to.deep.equal([
      "INSERTED",
      "REJECTED",
      "REJECTED",
      "REJECTED",
      "REJECTED",
      "INSERTED",
    ]);
    expect(out.results[1]?.reason).to.equal("model: must not contain control characters");
    expect(out.results[3]?.reason).to.equal("compression_reason: must not contain NUL characters");
    expect(out.results[4]?.reason).to.match(/^input_tokens: /);
    const totals = await h.prisma.accountMonthlyUsage.findFirstOrThrow({ where: { accountId: account.id } });
    expect(Number(totals.tokens)).to.equal(14);
  });

  it("sets aside the one event Postgres refuses and records the rest of the batch exactly once", async () => {
    // The schema stops every unstorable value we know of; this stands in for the next
    // one we do not: a trigger that refuses one model as Postgres refuses a NUL (22021).
    await h.db.query(`CREATE FUNCTION refuse_poison() RETURNS trigger AS $$
      BEGIN
        IF NEW.model = 'poison' THEN RAISE EXCEPTION 'refused' USING ERRCODE = '22021'; END IF;
        RETURN NEW;
      END $$ LANGUAGE plpgsql`);
    await h.db.query(
      "CREATE TRIGGER refuse_poison BEFORE INSERT ON usage_events FOR EACH ROW EXECUTE FUNCTION refuse_poison()",
    );
    try {
      const a = await createAccount(h, "pro");
      const b = await createAccount(h, "pro");
      const keyA = await createKey(h, a);
      const keyB = await createKey(h, b);
      const batch = [
        ...Array.from({ length: 7 }, (_, i) => usageEvent(`evt_iso_a${i}`, keyA.id, a.id, 10)),
        { ...usageEvent("evt_iso_poison", keyB.id, b.id, 10), model: "poison" },
        ...Array.from({ length: 5 }, (_, i) => usageEvent(`evt_iso_b${i}`, keyB.id, b.id, 10)),
      ];
      const recorder = new UsageRecorder(h.prisma, h.config.TERSE_PLANS);
      const out = await recorder.record(batch);
      const outcomes = out.results.map((r) => r.outcome);
      expect(outcomes.filter((o) => o === "INSERTED")).to.have.length(12);
      expect(out.results[7]).to.deep.equal({
        event_id: "evt_iso_poison",
        outcome: "REJECTED",
        reason: "refused by the usage store (SQLSTATE 22021)",
      });
      // A replay of the same batch (a worker retry) adds nothing.
      const again = await recorder.record(batch);
      expect(again.results.filter((r) => r.outcome === "DUPLICATE")).to.have.length(12);
      const tokens = async (accountId: string) =>
        Number((await h.prisma.accountMonthlyUsage.findFirstOrThrow({ where: { accountId } })).tokens);
      expect(await tokens(a.id)).to.equal(7 * 12);
      expect(await tokens(b.id)).to.equal(5 * 12);
      expect(out.accounts.map((m) => m.account_id).sort()).to.deep.equal([a.id, b.id].sort());
    } finally {
      await h.db.query("DROP TRIGGER refuse_poison ON usage_events");
      await h.db.query("DROP FUNCTION refuse_poison()");
    }
  });
});

function usageEvent(eventId: string, keyId: string, accountId: string, input: number) {
  return {
    event_id: eventId,
    key_id: keyId,
    account_id: accountId,
    provider: "openai",
    model: "m",
    status: 200,
    streamed: false,
    input_tokens: input,
    output_tokens: 2,
    input_tokens_before_compression: input,
    estimated: false,
    intensity: null,
    compression_reason: null,
    latency_ms: 1,
    started_at: new Date().toISOString(),
  };
}

describe("quota re-evaluation after a plan change", () => {
  let h: Harness;
  before(async () => {
    h = await startHarness("quota", {
      env: { TERSE_PLANS: JSON.stringify({ free: { monthly_tokens: 100 }, pro: { monthly_tokens: 1000 } }) },
    });
  });
  after(() => h.stop());

  it("clears the mark at once on an upgrade and sets it on a downgrade, announcing each change", async () => {
    const account = await createAccount(h, "free");
    const key = await createKey(h, account);
    await new UsageRecorder(h.prisma, h.config.TERSE_PLANS).record([
      {
        event_id: "evt_quota_1",
        key_id: key.id,
        account_id: account.id,
        provider: "openai",
        model: "m",
        status: 200,
        streamed: false,
        input_tokens: 150,
        output_tokens: 0,
        input_tokens_before_compression: 150,
        estimated: false,
        intensity: null,
        compression_reason: null,
        latency_ms: 1,
        started_at: new Date().toISOString(),
      },
    ]);
    const set = quotaExceededKeyFor(quotaMonth());
    const sub = h.redis.duplicate();
    const messages: string[] = [];
    sub.on("message", (_c: string, m: string) => messages.push(m));
    await sub.subscribe(QUOTA_CHANNEL);
    const deps = { db: h.prisma, redis: h.appRedis, plans: h.config.TERSE_PLANS };
    expect(await reevaluateQuota(deps, account.id)).to.equal(true);
    expect(await h.redis.sismember(set, account.id)).to.equal(1);
    await h.prisma.account.update({ where: { id: account.id }, data: { plan: "pro" } });
    expect(await reevaluateQuota(deps, account.id)).to.equal(false);
    expect(await h.redis.sismember(set, account.id)).to.equal(0);
    const { waitFor } = await import("@terse/testkit");
    await waitFor(() => messages.length === 2, { what: "two announcements" });
    sub.disconnect();
  });

  it("reconciliation clears only the marks that no longer hold (a raised limit), never adds one", async () => {
    const over = await createAccount(h, "free");
    const under = await createAccount(h, "free");
    const unmarked = await createAccount(h, "free");
    const overKey = await createKey(h, over);
    const unmarkedKey = await createKey(h, unmarked);
    await new UsageRecorder(h.prisma, h.config.TERSE_PLANS).record([
      usageEvent("evt_reconcile_over", overKey.id, over.id, 200),
      usageEvent("evt_reconcile_unmarked", unmarkedKey.id, unmarked.id, 200),
    ]);
    const set = quotaExceededKeyFor(quotaMonth());
    await h.redis.sadd(set, over.id, under.id);
    const deps = { db: h.prisma, redis: h.appRedis, plans: h.config.TERSE_PLANS };
    expect(await reconcileQuotaMarks(deps)).to.deep.equal([under.id]);
    expect(await h.redis.smembers(set)).to.deep.equal([over.id]);
    // The same account with a limit raised above its 202 tokens: cleared.
    const raised = { ...deps, plans: { ...deps.plans, free: { ...deps.plans.free, monthly_tokens: 1_000 } } };
    expect(await reconcileQuotaMarks(raised)).to.deep.equal([over.id]);
    expect(await h.redis.smembers(set)).to.deep.equal([]);
  });
});
