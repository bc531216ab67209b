import {
  CACHE_GENERATION_KEY,
  CACHE_REWRITE_KEY,
  cacheKeyFor,
  hashKey,
  quotaExceededKeyFor,
  rateLimitKeyFor,
} from "@terse/keys";
import { freePort, waitFor } from "@terse/testkit";
import { expect } from "chai";
import { resyncKeyCache } from "../src/domain/cache-resync.ts";
import { KeyCache } from "../src/infra/key-cache.ts";
import { KeyStore } from "../src/infra/key-store.ts";
import { createRedis } from "../src/infra/redis.ts";
import {
  api,
  type CreatedKey,
  createAccount,
  createKey,
  type ErrorBody,
  type Harness,
  type ListedKey,
  snapshot,
  startHarness,
  TEST_PASSWORD,
  type TestAccount,
} from "./harness.ts";

describe("key cache: Redis unavailable", () => {
  let h: Harness;
  let account: TestAccount;

  before(async () => {
    // The app's Redis points at a port where nothing listens; the test's own client works.
    const deadRedis = createRedis(`redis://127.0.0.1:${await freePort()}/2`);
    deadRedis.on("error", () => undefined);
    h = await startHarness("cache_down", { redis: deadRedis });
    account = await createAccount(h, "pro");
  });
  after(() => h.stop());

  const expect503 = (res: { status: number; body: ErrorBody }) => {
    expect(res.status).to.equal(503);
    expect(res.body.error).to.deep.equal({
      message: "auth cache unavailable",
      type: "api_error",
      code: "auth_cache_unavailable",
    });
  };

  it("create answers 503 auth cache unavailable and leaves no row", async () => {
    expect503(await api<ErrorBody>(h, "POST", "/v1/auth/keys", { token: account.token, body: { name: "nope" } }));
    const rows = await h.db.query("SELECT * FROM service_keys WHERE account_id = $1", [account.id]);
    expect(rows.rows).to.have.length(0);
  });

  describe("with an existing key", () => {
    let keyId: string;
    before(async () => {
      // Written straight to Postgres: the app cannot publish keys right now.
      keyId = "key_existing0000000000000";
      await h.db.query(
        "INSERT INTO service_keys (id, account_id, name, key_hash, key_prefix, rate_limit_rpm) VALUES ($1, $2, 'present', $3, 'svc_live_abcdefgh', 600)",
        [keyId, account.id, "e".repeat(64)],
      );
    });

    for (const [what, method, suffix, body] of [
      ["PATCH", "PATCH", "", { intensity: "lite" }],
      ["rotate", "POST", "/rotate", undefined],
      ["DELETE", "DELETE", "", undefined],
    ] as const) {
      it(`${what} answers 503 and leaves Postgres as it was`, async () => {
        const before = await snapshot(h);
        expect503(
          await api<ErrorBody>(h, method, `/v1/auth/keys/${keyId}${suffix}`, {
            token: account.token,
            ...(body ? { body } : {}),
          }),
        );
        expect(await snapshot(h)).to.equal(before);
      });
    }
  });

  it("login answers 503 rather than running unthrottled", async () => {
    const res = await api<ErrorBody>(h, "POST", "/v1/auth/login", {
      body: { email: account.email, password: TEST_PASSWORD },
    });
    expect(res.status).to.equal(503);
    expect(res.body.error.type).to.equal("api_error");
  });

  it("/readyz answers 503 naming Redis", async () => {
    const res = await api<{ redis: boolean; postgres: boolean }>(h, "GET", "/readyz");
    expect(res.status).to.equal(503);
    expect(res.body).to.include({ redis: false, postgres: true });
  });
});

describe("key cache: a commit that fails after Redis was written", () => {
  let h: Harness;
  let account: TestAccount;

  before(async () => {
    h = await startHarness("cache_commit");
    account = await createAccount(h, "pro");
    // A deferred constraint trigger: it runs at COMMIT, i.e. after the app wrote Redis,
    // and refuses the commit of any write to a key listed in fail_commit.
    await h.db.query(`
      CREATE TABLE fail_commit (name text PRIMARY KEY);
      CREATE FUNCTION refuse_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM fail_commit WHERE name = NEW.name) THEN RAISE EXCEPTION 'commit refused by test'; END IF;
        RETURN NEW;
      END $$;
      CREATE CONSTRAINT TRIGGER refuse_commit AFTER INSERT OR UPDATE ON service_keys
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_commit();`);
  });
  after(() => h.stop());

  const failCommitsOf = (name: string) => h.db.query("INSERT INTO fail_commit VALUES ($1)", [name]);

  it("create: answers 500 and removes the record it had published", async () => {
    await failCommitsOf("create-fails");
    const before = await snapshot(h);
    const res = await api<ErrorBody>(h, "POST", "/v1/auth/keys", {
      token: account.token,
      body: { name: "create-fails" },
    });
    expect(res.status).to.equal(500);
    expect(res.body.error).to.deep.equal({
      message: "Internal server error",
      type: "api_error",
      code: "internal_error",
    });
    expect(await snapshot(h)).to.equal(before);
  });

  describe("on an existing key", () => {
    let key: CreatedKey;
    beforeEach(async () => {
      key = await createKey(h, account, { name: `doomed-${Date.now()}` });
      await failCommitsOf(key.name);
    });

    it("revoke: the key stays active, and its record is restored in Redis", async () => {
      const before = await snapshot(h);
      const res = await api(h, "DELETE", `/v1/auth/keys/${key.id}`, { token: account.token });
      expect(res.status).to.equal(500);
      expect(await snapshot(h)).to.equal(before);
      expect(await h.redis.exists(cacheKeyFor(hashKey(key.raw_key)))).to.equal(1);
    });

    it("rotate: the old key stays the one in Redis, the new one is gone", async () => {
      const before = await snapshot(h);
      const res = await api(h, "POST", `/v1/auth/keys/${key.id}/rotate`, { token: account.token });
      expect(res.status).to.equal(500);
      expect(await snapshot(h)).to.equal(before);
    });

    it("PATCH: Redis keeps the committed settings", async () => {
      const before = await snapshot(h);
      const res = await api(h, "PATCH", `/v1/auth/keys/${key.id}`, {
        token: account.token,
        body: { intensity: "ultra" },
      });
      expect(res.status).to.equal(500);
      expect(await snapshot(h)).to.equal(before);
    });
  });
});

describe("key cache: full resync", () => {
  let h: Harness;
  let account: TestAccount;
  let store: KeyStore;
  let cache: KeyCache;

  before(async () => {
    h = await startHarness("cache_resync");
    account = await createAccount(h, "team");
    store = new KeyStore(h.prisma);
    cache = new KeyCache(h.appRedis, { leaseTtlMs: h.config.KEY_LEASE_TTL_MS });
  });
  after(() => h.stop());

  const resync = () => resyncKeyCache({ db: h.prisma, store, cache });

  it("writes every active key, removes revoked and unknown records, keeps other data, stamps the generation", async () => {
    const live = await createKey(h, account, { name: "live", intensity: "lite" });
    const revoked = await createKey(h, account, { name: "revoked" });
    await api(h, "DELETE", `/v1/auth/keys/${revoked.id}`, { token: account.token });
    const expected = await h.redis.hgetall(cacheKeyFor(hashKey(live.raw_key)));
    // Damage: Redis lost the live key, still has the revoked one, and has a stranger.
    await h.redis.del(cacheKeyFor(hashKey(live.raw_key)), CACHE_GENERATION_KEY);
    await h.redis.hset(cacheKeyFor(hashKey(revoked.raw_key)), { key_id: revoked.id });
    await h.redis.hset(cacheKeyFor("f".repeat(64)), { key_id: "key_unknown" });
    await h.redis.hset("svc:key:not-a-hash", { key_id: "junk" });
    // Not the key cache's: must survive.
    await h.redis.set(rateLimitKeyFor(hashKey(live.raw_key)), "1");
    await h.redis.sadd(quotaExceededKeyFor("202611"), account.id);

    const result = await resync();
    expect(result.written).to.equal(1);
    expect(result.removed).to.equal(3);
    expect(await h.redis.hgetall(cacheKeyFor(hashKey(live.raw_key)))).to.deep.equal(expected);
    expect(
      await h.redis.exists(cacheKeyFor(hashKey(revoked.raw_key)), cacheKeyFor("f".repeat(64)), "svc:key:not-a-hash"),
    ).to.equal(0);
    expect(await h.redis.get(CACHE_GENERATION_KEY)).to.equal(result.generation);
    expect(await h.redis.exists(rateLimitKeyFor(hashKey(live.raw_key)), quotaExceededKeyFor("202611"))).to.equal(2);
  });

  it("pages through more keys than one page holds", async () => {
    const big = await createAccount(h, "enterprise");
    const values = Array.from(
      { length: 5_100 },
      (_, i) =>
        `('key_bulk${String(i).padStart(6, "0")}', '${big.id}', 'bulk-${i}', '${hashKey(`bulk-${i}`)}', 'svc_live_bulkbulk', 60)`,
    );
    await h.db.query(
      `INSERT INTO service_keys (id, account_id, name, key_hash, key_prefix, rate_limit_rpm) VALUES ${values.join(",")}`,
    );
    const result = await resync();
    expect(result.written).to.equal(5_101);
    expect(await h.redis.hget(cacheKeyFor(hashKey("bulk-5099")), "key_id")).to.equal("key_bulk005099");
  });

  it("waits for an in-flight key write (they never interleave)", async () => {
    const pg = await import("pg");
    const client = new pg.default.Client({ connectionString: h.db.url });
    await client.connect();
    try {
      // A writer's transaction, holding the key-cache lock in shared mode.
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock_shared(72417002)");
      let done = false;
      const running = resync().then(() => {
        done = true;
      });
      await waitFor(
        async () =>
          (await h.db.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rowCount === 1,
        { what: "resync waiting for the lock" },
      );
      expect(done).to.equal(false);
      await client.query("COMMIT");
      await running;
      expect(done).to.equal(true);
    } finally {
      await client.end();
    }
  });

  /** A cache whose Redis is flushed right after each of the first `flushes` batches it writes. */
  function flushedMidResync(flushes: number): KeyCache {
    return new (class extends KeyCache {
      override async putMany(entries: Parameters<KeyCache["putMany"]>[0]): Promise<void> {
        await super.putMany(entries);
        if (flushes-- > 0) await h.redis.flushdb();
      }
    })(h.appRedis, { leaseTtlMs: h.config.KEY_LEASE_TTL_MS });
  }

  it("never stamps a cache flushed in the middle of its resync: it rewrites it whole, then stamps", async () => {
    const key = await createKey(h, account, { name: "flushed-mid-resync" });
    const result = await resyncKeyCache({ db: h.prisma, store, cache: flushedMidResync(1) });
    expect(await h.redis.get(CACHE_GENERATION_KEY)).to.equal(result.generation);
    expect(await h.redis.hget(cacheKeyFor(hashKey(key.raw_key)), "key_id")).to.equal(key.id);
    expect(await h.redis.exists(CACHE_REWRITE_KEY)).to.equal(0);
  });

  it("gives up, leaving the stamp missing (503, never 401), while Redis keeps losing the rewrite", async () => {
    await h.redis.del(CACHE_GENERATION_KEY);
    let error: unknown;
    await resyncKeyCache({ db: h.prisma, store, cache: flushedMidResync(Number.POSITIVE_INFINITY) }).catch((err) => {
      error = err;
    });
    expect(String(error)).to.contain("Redis lost data during each of 3 rewrites");
    expect(await h.redis.exists(CACHE_GENERATION_KEY)).to.equal(0);
    await resync(); // the watcher's next turn
    expect(await h.redis.exists(CACHE_GENERATION_KEY)).to.equal(1);
  });

  it("a plan change rewrites the account's cached keys with the new plan", async () => {
    const { changePlan } = await import("../src/domain/plan-change.ts");
    const { AccountStore } = await import("../src/infra/account-store.ts");
    const { KeyService } = await import("../src/domain/keys.ts");
    const user = await createAccount(h, "free");
    const key = await createKey(h, user);
    expect(await h.redis.hget(cacheKeyFor(hashKey(key.raw_key)), "plan")).to.equal("free");
    const keys = new KeyService({
      db: h.prisma,
      store,
      cache,
      plans: h.config.TERSE_PLANS,
      logger: (await import("@terse/logger")).createLogger({ service: "t", level: "silent" }),
      clock: () => new Date(),
    });
    const changed = await changePlan({ db: h.prisma, accounts: new AccountStore(h.prisma), keys }, user.email, "pro");
    expect(changed?.plan).to.equal("pro");
    expect(await h.redis.hget(cacheKeyFor(hashKey(key.raw_key)), "plan")).to.equal("pro");
    // The new plan's limit applies to the next create.
    const list = await api<ListedKey[]>(h, "GET", "/v1/auth/keys", { token: user.token });
    expect(list.body).to.have.length(1);
  });
});
