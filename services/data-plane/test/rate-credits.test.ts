import { cacheKeyFor, encodeCachedKey, generateRawKey, hashKey, rateLimitKeyFor } from "@terse/keys";
import { freshRedis, testRedisUrl, waitFor } from "@terse/testkit";
import { expect } from "chai";
import { Redis } from "ioredis";
import { type Admitted, Authenticator } from "../src/domain/authenticate.ts";
import { KeyCopies, type Lease } from "../src/domain/key-copies.ts";
import type { QuotaView } from "../src/domain/quota-view.ts";
import { RateCredits } from "../src/domain/rate-credits.ts";
import { AuthScript } from "../src/infra/auth-script.ts";
import { keyRecord } from "./harness.ts";

// Rate credits and key copies, driven directly against Redis: each "process" is an
// Authenticator with its own connection, copies and credits, as each data-plane process
// has. The lease is a stand-in (key-leases has its own tests): valid unless told not.

const NOBODY_OVER_QUOTA = { isExceeded: () => false } as unknown as QuotaView;

const recordOf = (rpm: number) =>
  keyRecord({ key_id: "key_credits", account_id: "acct_credits", rate_limit_rpm: rpm, smart_detect_enabled: false });

class StandInLease implements Lease {
  epoch = 0;
  held = true;
  valid(): boolean {
    return this.held;
  }
}

interface Process {
  auth: Authenticator;
  copies: KeyCopies;
  credits: RateCredits;
  lease: StandInLease;
  redis: Redis;
}

function startProcess(settleMs = 25): Process {
  const redis = new Redis(testRedisUrl("dataPlane"));
  const script = new AuthScript(redis, 20);
  const lease = new StandInLease();
  const copies = new KeyCopies(lease);
  const credits = new RateCredits(script, { holdSeconds: 20, settleMs });
  const auth = new Authenticator(redis, script, NOBODY_OVER_QUOTA, { copies, credits });
  return { auth, copies, credits, lease, redis };
}

describe("rate credits: calls admitted without a round trip, never over the limit", () => {
  let redis: Redis;
  const processes: Process[] = [];
  const rawKey = generateRawKey();
  const keyHash = hashKey(rawKey);
  const admit = (p: Process | undefined) => (p as Process).auth.admit(`Bearer ${rawKey}`, "sk-provider", Date.now());
  const counted = async () => Number((await redis.hget(rateLimitKeyFor(keyHash), "n")) ?? 0);

  before(async () => {
    redis = await freshRedis("dataPlane");
  });
  beforeEach(async () => {
    await redis.flushdb();
    processes.push(startProcess(), startProcess());
  });
  afterEach(async () => {
    for (const p of processes.splice(0)) {
      await p.credits.drain();
      p.redis.disconnect();
    }
  });
  after(async () => {
    await redis.flushdb();
    redis.disconnect();
  });

  it("admits at most the limit across two processes under a burst, and the window ends counting exactly those admitted", async () => {
    const limit = 50;
    await redis.hset(cacheKeyFor(keyHash), encodeCachedKey(recordOf(limit)));
    // Waves of concurrent calls from both, so copies and credits are in use by the later ones.
    let admitted = 0;
    for (let wave = 0; wave < 6; wave++) {
      const verdicts = await Promise.all(Array.from({ length: 20 }, (_, i) => admit(processes[i % 2])));
      admitted += verdicts.filter((v) => v.ok).length;
    }
    expect(admitted).to.be.at.most(limit);
    // What credits may cost: each process holds at most max(1, limit/64) that the other could not use.
    expect(admitted).to.be.at.least(limit - 2);
    for (const p of processes) await p.credits.drain();
    expect(await counted()).to.equal(admitted);
  });

  it("answers a known key locally once it holds a copy and a credit", async () => {
    await redis.hset(cacheKeyFor(keyHash), encodeCachedKey(recordOf(1_000)));
    const p = processes[0];
    const first = await admit(p);
    expect(first.ok && first.lookup).to.equal("hit");
    const second = await admit(p);
    expect(second.ok && second.lookup).to.equal("local");
    if (!second.ok) throw new Error("refused");
    expect(second.admitted.rateLimit.limit).to.equal(1_000);
    // Its window as this process sees it: two calls counted, the rest of the window free.
    expect(second.admitted.rateLimit.remaining).to.be.within(990, 998);
  });

  it("asks Redis again once the lease is not valid, and keeps no copy read across a change", async () => {
    await redis.hset(cacheKeyFor(keyHash), encodeCachedKey(recordOf(1_000)));
    const p = processes[0] as Process;
    await admit(p);
    p.lease.held = false;
    const lapsed = await admit(p);
    expect(lapsed.ok && lapsed.lookup).to.equal("hit");
    p.lease.held = true;
    expect(p.copies.size).to.equal(1);
    // A change taken while a lookup was on its way: its answer is not kept.
    p.copies.drop("all");
    const epoch = p.copies.epoch;
    p.lease.epoch++;
    p.copies.keep(keyHash, recordOf(1_000), epoch);
    expect(p.copies.size).to.equal(0);
  });

  /** A key seen once by the first process, and a call of it admitted on a credit. */
  async function admittedOnCredit(): Promise<{ p: Process; admitted: Admitted }> {
    await redis.hset(cacheKeyFor(keyHash), encodeCachedKey(recordOf(1_000)));
    const p = processes[0] as Process;
    await admit(p);
    const local = await admit(p);
    if (!local.ok || !local.admitted.credit) throw new Error("not admitted on a credit");
    return { p, admitted: local.admitted };
  }

  /** Calls counted in the window's seconds so far (credits held ahead left out). */
  async function countedUpToNow(): Promise<number> {
    const now = Math.floor(Date.now() / 1000);
    const fields = await redis.hgetall(rateLimitKeyFor(keyHash));
    return Object.entries(fields)
      .filter(([second]) => /^\d+$/.test(second) && Number(second) <= now)
      .reduce((sum, [, count]) => sum + Number(count), 0);
  }

  it("gives back a credit of a call refused after all, and every unused credit on drain", async () => {
    const { p, admitted } = await admittedOnCredit();
    p.auth.release(admitted, Date.now());
    await p.credits.drain();
    expect(await counted()).to.equal(1);
  });

  it("gives back a credit reported used by a settle before its call was refused", async () => {
    const { p, admitted } = await admittedOnCredit();
    // The settle moves the used credit out of its held bucket into the second it reports in.
    await waitFor(async () => (await countedUpToNow()) === 2 || undefined, {
      timeoutMs: 5_000,
      what: "the settle to report the credit used",
    });
    p.auth.release(admitted, Date.now());
    await p.credits.drain();
    await waitFor(async () => (await counted()) === 1, { timeoutMs: 5_000, what: "the refused call uncounted" });
  });

  it("returns the credits of a retired key (changed or revoked) to the window", async () => {
    await redis.hset(cacheKeyFor(keyHash), encodeCachedKey(recordOf(1_000)));
    const p = processes[0] as Process;
    for (let i = 0; i < 5; i++) await admit(p);
    p.credits.retire([keyHash]);
    expect(p.credits.heldKeys).to.equal(0);
    await waitFor(async () => (await counted()) === 5, { timeoutMs: 5_000, what: "the retired credits to go back" });
  });

  it("grants nothing within a quarter of the limit: near it every call is counted in Redis", async () => {
    await redis.hset(cacheKeyFor(keyHash), encodeCachedKey(recordOf(8)));
    const p = processes[0] as Process;
    const lookups: string[] = [];
    for (let i = 0; i < 9; i++) {
      const v = await admit(p);
      lookups.push(v.ok ? v.lookup : "refused");
    }
    // 8 admitted, then the 9th refused; of the admitted, only calls while the window had
    // more than a quarter free could have come from a credit.
    expect(lookups.filter((l) => l !== "refused")).to.have.length(8);
    expect(lookups.at(-1)).to.equal("refused");
    expect(lookups.slice(6).filter((l) => l === "local")).to.have.length(0);
  });
});
