import { randomUUID } from "node:crypto";
import { recallKeyFor } from "@terse/keys";
import { createLogger } from "@terse/logger";
import { testRedisUrl, waitFor } from "@terse/testkit";
import { expect } from "chai";
import { Redis } from "ioredis";
import { readRecallCall, recallAnswer } from "../src/domain/recall-answer.ts";
import { RecallStore } from "../src/infra/recall-store.ts";

// The kept originals of recall, and what a terse_recall call is answered with.

describe("recall store", () => {
  let redis: Redis;
  const account = `acct-${randomUUID()}`;
  const other = `acct-${randomUUID()}`;

  before(async () => {
    // No flush: other data-plane suites may share this database; every key here is this run's own.
    redis = new Redis(testRedisUrl("dataPlane"), { maxRetriesPerRequest: 1 });
  });
  after(async () => {
    for (const a of [account, other]) {
      const names = await redis.keys(`svc:recall:${a}:*`);
      if (names.length > 0) await redis.unlink(...names);
    }
    await redis.quit();
  });

  it("keeps an original under the account with a lifetime, finds it only there, and renews it on read", async () => {
    const store = new RecallStore(redis, 60, createLogger({ service: "test", level: "silent" }));
    store.keep(account, new Map([["0123456789ab", "line 1\nline 2"]]));
    await waitFor(() => redis.exists(recallKeyFor(account, "0123456789ab")).then((n) => n === 1 || undefined), {
      timeoutMs: 5_000,
    });
    await redis.expire(recallKeyFor(account, "0123456789ab"), 5);
    expect(await store.fetch(account, "0123456789ab")).to.equal("line 1\nline 2");
    expect(await redis.ttl(recallKeyFor(account, "0123456789ab"))).to.be.within(50, 60);
    expect(await store.fetch(other, "0123456789ab")).to.equal(null);
  });

  it("writes an original resent every turn once per half lifetime, not every turn", async () => {
    const store = new RecallStore(redis, 60, createLogger({ service: "test", level: "silent" }));
    const cuts = new Map([["aaaaaaaaaaaa", "x".repeat(1000)]]);
    const t0 = 1_000_000;
    store.keep(other, cuts, t0);
    await waitFor(() => redis.exists(recallKeyFor(other, "aaaaaaaaaaaa")).then((n) => n === 1 || undefined), {
      timeoutMs: 5_000,
    });
    await redis.unlink(recallKeyFor(other, "aaaaaaaaaaaa"));
    store.keep(other, cuts, t0 + 29_000); // within half the lifetime: not written again
    store.keep(account, new Map([["bbbbbbbbbbbb", "marker"]]), t0 + 29_000); // a write queued after it, to wait on
    await waitFor(() => redis.exists(recallKeyFor(account, "bbbbbbbbbbbb")).then((n) => n === 1 || undefined), {
      timeoutMs: 5_000,
    });
    expect(await redis.exists(recallKeyFor(other, "aaaaaaaaaaaa"))).to.equal(0);
    store.keep(other, cuts, t0 + 31_000); // past it: written (and its lifetime renewed)
    await waitFor(() => redis.exists(recallKeyFor(other, "aaaaaaaaaaaa")).then((n) => n === 1 || undefined), {
      timeoutMs: 5_000,
    });
  });
});

describe("recall store, an original Redis lost", () => {
  let redis: Redis;
  const account = `acct-${randomUUID()}`;

  before(() => {
    redis = new Redis(testRedisUrl("dataPlane"), { maxRetriesPerRequest: 1 });
  });
  after(async () => {
    await redis.unlink(recallKeyFor(account, "cccccccccccc"));
    await redis.quit();
  });

  it("is written again by the next request that resends it once a recall found it gone", async () => {
    const store = new RecallStore(redis, 60, createLogger({ service: "test", level: "silent" }));
    const cuts = new Map([["cccccccccccc", "the original"]]);
    store.keep(account, cuts, 1_000_000);
    await waitFor(() => redis.exists(recallKeyFor(account, "cccccccccccc")).then((n) => n === 1 || undefined));
    await redis.unlink(recallKeyFor(account, "cccccccccccc")); // evicted, or a failover lost it
    expect(await store.fetch(account, "cccccccccccc")).to.equal(null);
    store.keep(account, cuts, 1_001_000); // the next turn, well within half the lifetime
    await waitFor(() => redis.exists(recallKeyFor(account, "cccccccccccc")).then((n) => n === 1 || undefined), {
      what: "the original written again",
    });
    expect(await store.fetch(account, "cccccccccccc")).to.equal("the original");
  });
});

describe("recall answers", () => {
  const original = Array.from({ length: 100 }, (_, i) => `line ${i + 1}`).join("\n");
  const call = (args: Record<string, unknown>) => ({ id: "c1", args });

  it("returns the lines asked for, or the whole text", () => {
    const ask = readRecallCall(call({ handle: "0123456789AB", lines: "10-12" }));
    expect(ask).to.deep.equal({ handle: "0123456789ab", from: 10, to: 12 });
    expect(recallAnswer(ask as Exclude<typeof ask, string>, original, 1_000)).to.equal("line 10\nline 11\nline 12");
    expect(recallAnswer({ handle: "0123456789ab" }, original, 10_000)).to.equal(original);
    expect(recallAnswer({ handle: "0123456789ab", from: 99, to: 500 }, original, 10_000)).to.equal("line 99\nline 100");
  });

  it("pages a part longer than the limit, saying which lines follow and how to get them", () => {
    const out = recallAnswer({ handle: "0123456789ab", from: 1, to: 100 }, original, 40);
    expect(out.split("\n").slice(0, -1).join("\n").length).to.be.at.most(40);
    expect(out).to.match(/\[terse: lines (\d+)-100 follow; recall 0123456789ab lines \1-100\]$/);
  });

  it("returns only the lines that hold a name, each after its number, within a range if one is given", () => {
    const ask = readRecallCall(call({ handle: "0123456789ab", match: " line 7" }));
    expect(ask).to.deep.equal({ handle: "0123456789ab", match: "line 7" });
    // line 7, and 70-79 (which hold "line 7" too)
    const out = recallAnswer(ask as Exclude<typeof ask, string>, original, 10_000);
    expect(out.split("\n")).to.deep.equal([
      "7: line 7",
      ...Array.from({ length: 10 }, (_, i) => `${70 + i}: line ${70 + i}`),
    ]);
    const within = readRecallCall(call({ handle: "0123456789ab", lines: "1-70", match: "line 7" }));
    expect(recallAnswer(within as Exclude<typeof within, string>, original, 10_000)).to.equal("7: line 7\n70: line 70");
    expect(recallAnswer({ handle: "0123456789ab", match: "nowhere" }, original, 10_000)).to.equal(
      'terse_recall: no line of 0123456789ab holds "nowhere".',
    );
    expect(recallAnswer({ handle: "0123456789ab", from: 1, to: 5, match: "line 9" }, original, 10_000)).to.equal(
      'terse_recall: no line of 0123456789ab 1-5 holds "line 9".',
    );
  });

  it("pages the lines that hold a name, saying from which line to ask again", () => {
    const out = recallAnswer({ handle: "0123456789ab", match: "line" }, original, 60);
    const [shown, note] = [out.split("\n").slice(0, -1), out.split("\n").at(-1)];
    expect(shown.join("\n").length).to.be.at.most(60);
    expect(shown[0]).to.equal("1: line 1");
    const next = shown.length + 1;
    expect(note).to.equal(
      `[terse: more lines from ${next} on hold it; recall 0123456789ab lines ${next}-100 match "line"]`,
    );
  });

  it("says so when nothing is kept, or the arguments are wrong, instead of failing", () => {
    expect(readRecallCall(call({ handle: "0123456789ab", match: 42 })))
      .to.be.a("string")
      .and.match(/`match` must be/);
    expect(readRecallCall(call({ handle: "0123456789ab", match: "x".repeat(201) }))).to.be.a("string");
    expect(readRecallCall(call({ handle: "0123456789ab", match: "  " }))).to.be.a("string");
    expect(recallAnswer({ handle: "0123456789ab" }, null, 100)).to.match(/nothing is kept under 0123456789ab/);
    expect(readRecallCall(call({})))
      .to.be.a("string")
      .and.match(/`handle` must be/);
    expect(readRecallCall(call({ handle: "../../etc" }))).to.be.a("string");
    expect(readRecallCall(call({ handle: "0123456789ab", lines: "480-120" })))
      .to.be.a("string")
      .and.match(/`lines` must/);
    expect(readRecallCall(call({ handle: "0123456789ab", lines: "7" }))).to.deep.equal({
      handle: "0123456789ab",
      from: 7,
      to: 7,
    });
  });
});
