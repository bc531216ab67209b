import { readdirSync } from "node:fs";
import { createDb, type Db, MIGRATIONS_DIR, migrate } from "@terse/db";
import { createTestDatabase, type TestDatabase } from "@terse/testkit";
import { expect } from "chai";

// The migrated database matches schema.prisma: every model is written with every field
// set and read back through the generated client (DESIGN.md section 6). A column the
// migrations lack, or one of another type, fails here.

describe("migrated database vs schema.prisma", () => {
  let t: TestDatabase;
  let db: Db;

  before(async () => {
    t = await createTestDatabase("cp_schema");
    db = createDb(t.url, { poolSize: 2 });
  });
  after(async () => {
    await db.$disconnect();
    await t.drop();
  });

  it("records every migration as `prisma migrate deploy` would, and a second run applies nothing", async () => {
    const names = readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    const rows = await t.query<{ migration_name: string; finished_at: Date | null; applied_steps_count: number }>(
      `SELECT migration_name, finished_at, applied_steps_count FROM "_prisma_migrations" ORDER BY migration_name`,
    );
    expect(rows.rows.map((r) => r.migration_name)).to.deep.equal(names);
    for (const r of rows.rows) expect(r.finished_at).to.be.instanceOf(Date);
    const again = await migrate(t.url);
    expect(again.applied).to.deep.equal([]);
    expect(again.alreadyApplied).to.deep.equal(names);
  });

  it("reads and writes Account and ServiceKey with every field", async () => {
    const at = new Date("2026-03-04T05:06:07.891Z");
    const account = {
      id: "acct_schema",
      email: "schema@example.com",
      passwordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
      plan: "team" as const,
      externalIss: "https://idp/",
      externalSub: "sub-1",
      createdAt: at,
    };
    const written = await db.account.create({ data: account });
    expect(written).to.deep.include(account);
    expect(await db.account.findUnique({ where: { id: account.id } })).to.deep.equal(written);
    const key = {
      id: "key_schema",
      accountId: account.id,
      name: "every-field",
      keyHash: "a".repeat(64),
      keyPrefix: "svc_live_abcdefgh",
      intensity: "ultra" as const,
      autoCompressInput: true,
      smartDetectEnabled: false,
      contextCompress: true,
      contextCompressLevel: "aggressive" as const,
      isActive: false,
      rateLimitRpm: 42,
      createdAt: at,
      lastUsedAt: at,
      revokedAt: at,
      rotatedToId: "key_next",
    };
    await db.serviceKey.create({ data: key });
    expect(await db.serviceKey.findUnique({ where: { id: key.id } })).to.deep.equal(key);
    const defaults = await db.serviceKey.create({
      data: {
        id: "key_defaults",
        accountId: account.id,
        name: "d",
        keyHash: "b".repeat(64),
        keyPrefix: "p",
        rateLimitRpm: 1,
      },
    });
    expect(defaults).to.include({
      intensity: "full",
      autoCompressInput: false,
      smartDetectEnabled: true,
      contextCompress: false,
      contextCompressLevel: "standard",
      isActive: true,
      lastUsedAt: null,
    });
  });

  it("reads and writes the usage models with every field", async () => {
    const at = new Date("2026-03-04T05:06:07.891Z");
    const event = {
      eventId: "evt_schema",
      keyId: "key_schema",
      accountId: "acct_schema",
      provider: "openai",
      model: "gpt-4o-mini",
      status: 200,
      streamed: true,
      inputTokens: 10,
      outputTokens: 20,
      inputTokensBeforeCompression: 30,
      cacheReadTokens: 6,
      cacheWriteTokens: 2,
      recallRounds: 2,
      cacheReadTokensBeforeCompression: 24,
      cacheWriteTokensBeforeCompression: 3,
      estimated: true,
      intensity: "lite",
      compressionReason: "smart detect",
      latencyMs: 123,
      startedAt: at,
      recordedAt: at,
    };
    await db.usageEvent.create({ data: event });
    expect(await db.usageEvent.findUnique({ where: { eventId: event.eventId } })).to.deep.equal(event);
    const month = new Date("2026-03-01T00:00:00.000Z");
    const accountUsage = { accountId: "acct_schema", month, tokens: 9_000_000_000n, requests: 3n };
    await db.accountMonthlyUsage.create({ data: accountUsage });
    expect(
      await db.accountMonthlyUsage.findUnique({ where: { accountId_month: { accountId: "acct_schema", month } } }),
    ).to.deep.equal(accountUsage);
    const keyUsage = { keyId: "key_schema", month, tokens: 5n, requests: 1n };
    await db.keyMonthlyUsage.create({ data: keyUsage });
    expect(
      await db.keyMonthlyUsage.findUnique({ where: { keyId_month: { keyId: "key_schema", month } } }),
    ).to.deep.equal(keyUsage);
  });

  it("has the partial unique index on active key names that schema.prisma cannot express", async () => {
    const idx = await t.query<{ indexdef: string }>(
      "SELECT indexdef FROM pg_indexes WHERE indexname = 'service_keys_account_id_name_active_key'",
    );
    expect(idx.rows[0]?.indexdef).to.match(/UNIQUE INDEX .* \(account_id, name\) WHERE is_active/);
  });
});

describe("migration 20261124110000_usage_cache_before_compression", () => {
  const NAME = "20261124110000_usage_cache_before_compression";
  let t: TestDatabase;

  before(async () => {
    // A database as the migration before it left it, holding events.
    t = await createTestDatabase("cp_cache_before");
    await t.query(`ALTER TABLE usage_events DROP COLUMN cache_read_tokens_before_compression,
      DROP COLUMN cache_write_tokens_before_compression`);
    await t.query(`DELETE FROM "_prisma_migrations" WHERE migration_name = $1`, [NAME]);
    await t.query(`INSERT INTO accounts (id, email) VALUES ('acct_old', 'old@example.com')`);
    await t.query(`INSERT INTO service_keys (id, account_id, name, key_hash, key_prefix, rate_limit_rpm)
      VALUES ('key_old', 'acct_old', 'old', '${"b".repeat(64)}', 'svc_live_oldoldol', 60)`);
    const event = (id: string, input: number, before: number, read: number, write: number) =>
      t.query(
        `INSERT INTO usage_events (event_id, key_id, account_id, provider, model, status, streamed, input_tokens,
           output_tokens, input_tokens_before_compression, cache_read_tokens, cache_write_tokens, latency_ms, started_at)
         VALUES ($1, 'key_old', 'acct_old', 'anthropic', 'claude-sonnet-4-5', 200, false, $2, 5, $3, $4, $5, 1, now())`,
        [id, input, before, read, write],
      );
    await event("evt_cached", 1_000, 1_500, 600, 300);
    await event("evt_plain", 1_000, 1_200, 0, 0);
    await event("evt_empty", 0, 0, 0, 0);
  });
  after(() => t.drop());

  it("gives the events recorded before it the estimate they had: the compressed request's cache share, grown with it", async () => {
    expect((await migrate(t.url)).applied).to.deep.equal([NAME]);
    const rows = await t.query<{ event_id: string; r: number; w: number }>(
      `SELECT event_id, cache_read_tokens_before_compression AS r, cache_write_tokens_before_compression AS w
       FROM usage_events ORDER BY event_id`,
    );
    expect(rows.rows).to.deep.equal([
      { event_id: "evt_cached", r: 900, w: 450 },
      { event_id: "evt_empty", r: 0, w: 0 },
      { event_id: "evt_plain", r: 0, w: 0 },
    ]);
  });
});
