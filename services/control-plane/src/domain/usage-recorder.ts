import type { PlanName, Plans } from "@terse/config";
import type { Db } from "@terse/db";
import { cacheBeforeCompression, type UsageEvent, usageEventSchema } from "@terse/usage-events";
import { isDataRefused, refusalReason } from "../infra/db-errors.ts";

// Exactly-once usage records (issue 4): events are inserted by event_id with
// ON CONFLICT DO NOTHING, and only the rows that were really inserted add to the
// account's and key's monthly totals, in the same transaction. A replayed batch
// (a worker killed after the commit, before its job was removed) adds nothing.

export type Outcome = "INSERTED" | "DUPLICATE" | "REJECTED";

export interface EventOutcome {
  event_id: string;
  outcome: Outcome;
  reason: string;
}

export interface AccountMonthTotal {
  account_id: string;
  month: string;
  tokens: number;
  limit: number;
  exceeded: boolean;
}

interface Row {
  event: UsageEvent;
  month: Date;
}

/** First day of the event's calendar month, UTC: the quota month. */
function monthOf(iso: string): Date {
  const d = new Date(iso);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
}

const yyyymm = (d: Date) => `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, "0")}`;

/** The event id of anything, malformed events included, so a rejection can be traced. */
function idOf(candidate: unknown): string {
  const id = (candidate as { event_id?: unknown } | null)?.event_id;
  return typeof id === "string" ? id : "";
}

function describe(issue: { path: PropertyKey[]; message: string } | undefined): string {
  return issue ? `${issue.path.map(String).join(".") || "event"}: ${issue.message}` : "invalid event";
}

export class UsageRecorder {
  constructor(
    private readonly db: Db,
    private readonly plans: Plans,
  ) {}

  /** Results come back in the order of the input, one per event, malformed ones included. */
  async record(raw: unknown[]): Promise<{ results: EventOutcome[]; accounts: AccountMonthTotal[] }> {
    const results: EventOutcome[] = [];
    const valid: { row: Row; result: EventOutcome }[] = [];
    for (const candidate of raw) {
      const parsed = usageEventSchema.safeParse(candidate);
      const result: EventOutcome = { event_id: idOf(candidate), outcome: "REJECTED", reason: "" };
      results.push(result);
      if (parsed.success) valid.push({ row: { event: parsed.data, month: monthOf(parsed.data.started_at) }, result });
      else result.reason = describe(parsed.error.issues[0]);
    }
    const owners = await this.keyOwners(valid.map((v) => v.row.event.key_id));
    const accepted = valid.filter(({ row: { event }, result }) => {
      const owner = owners.get(event.key_id);
      if (owner === event.account_id) return true;
      result.reason = owner === undefined ? "unknown key_id" : "key_id does not belong to account_id";
      return false;
    });
    // The same event twice in one batch (a producer retry) is inserted once; its copy is a duplicate.
    const unique = [...new Map(accepted.map((v) => [v.row.event.event_id, v.row])).values()];
    const { inserted, refused } = await this.insertIsolating(unique);
    const stored = accepted.filter(({ row, result }) => {
      const reason = refused.get(row.event.event_id);
      if (reason !== undefined) result.reason = reason;
      else result.outcome = inserted.delete(row.event.event_id) ? "INSERTED" : "DUPLICATE";
      return reason === undefined;
    });
    return { results, accounts: await this.monthTotals(stored.map((v) => v.row)) };
  }

  /**
   * Inserts `rows`; when Postgres refuses a value the schema let through (a data
   * exception, which no retry can cure), finds the refused rows by halving and inserts
   * the rest, so one bad event costs a few statements and never the other events of its
   * batch. Every other failure (Postgres down) fails the whole call, to be retried.
   */
  private async insertIsolating(rows: Row[]): Promise<{ inserted: Set<string>; refused: Map<string, string> }> {
    const inserted = new Set<string>();
    const refused = new Map<string, string>();
    const attempt = async (part: Row[]): Promise<void> => {
      if (part.length === 0) return;
      try {
        for (const id of await this.insert(part)) inserted.add(id);
      } catch (err) {
        if (!isDataRefused(err)) throw err;
        if (part.length === 1) {
          refused.set((part[0] as Row).event.event_id, refusalReason(err));
          return;
        }
        const half = Math.ceil(part.length / 2);
        await attempt(part.slice(0, half));
        await attempt(part.slice(half));
      }
    };
    await attempt(rows);
    return { inserted, refused };
  }

  private async keyOwners(keyIds: string[]): Promise<Map<string, string>> {
    if (keyIds.length === 0) return new Map();
    const rows = await this.db.serviceKey.findMany({
      where: { id: { in: [...new Set(keyIds)] } },
      select: { id: true, accountId: true },
    });
    return new Map(rows.map((r) => [r.id, r.accountId]));
  }

  /**
   * One statement, so one round trip and atomic without an explicit transaction: insert
   * what is new, then add only the rows that were really inserted (the RETURNING of the
   * INSERT) to the monthly totals, and move last_used_at forward.
   */
  private async insert(rows: Row[]): Promise<string[]> {
    const e = rows.map((r) => r.event);
    const months = rows.map((r) => r.month);
    const cacheBefore = e.map(cacheBeforeCompression);
    const inserted = await this.db.$queryRaw<{ event_id: string }[]>`
      WITH input AS (
        SELECT * FROM unnest(
          ${e.map((x) => x.event_id)}::text[], ${e.map((x) => x.key_id)}::text[], ${e.map((x) => x.account_id)}::text[],
          ${e.map((x) => x.provider)}::text[], ${e.map((x) => x.model)}::text[], ${e.map((x) => x.status)}::int[],
          ${e.map((x) => x.streamed)}::bool[], ${e.map((x) => x.input_tokens)}::int[], ${e.map((x) => x.output_tokens)}::int[],
          ${e.map((x) => x.input_tokens_before_compression)}::int[], ${e.map((x) => x.estimated)}::bool[],
          ${e.map((x) => x.cache_read_tokens)}::int[], ${e.map((x) => x.cache_write_tokens)}::int[],
          ${e.map((x) => x.intensity)}::text[], ${e.map((x) => x.compression_reason)}::text[],
          ${e.map((x) => x.latency_ms)}::int[], ${e.map((x) => x.started_at)}::timestamptz[],
          ${e.map((x) => x.recall_rounds)}::int[], ${cacheBefore.map((c) => c.read)}::int[],
          ${cacheBefore.map((c) => c.write)}::int[], ${months}::date[])
          AS t(event_id, key_id, account_id, provider, model, status, streamed, input_tokens, output_tokens,
               input_tokens_before_compression, estimated, cache_read_tokens, cache_write_tokens, intensity, compression_reason,
               latency_ms, started_at, recall_rounds, cache_read_tokens_before_compression,
               cache_write_tokens_before_compression, month)
      ),
      ins AS (
        INSERT INTO usage_events (event_id, key_id, account_id, provider, model, status, streamed, input_tokens,
          output_tokens, input_tokens_before_compression, estimated, cache_read_tokens, cache_write_tokens, intensity,
          compression_reason, latency_ms, started_at, recall_rounds, cache_read_tokens_before_compression,
          cache_write_tokens_before_compression)
        SELECT event_id, key_id, account_id, provider, model, status, streamed, input_tokens, output_tokens,
          input_tokens_before_compression, estimated, cache_read_tokens, cache_write_tokens, intensity, compression_reason,
          latency_ms, started_at, recall_rounds, cache_read_tokens_before_compression,
          cache_write_tokens_before_compression FROM input
        ON CONFLICT (event_id) DO NOTHING
        RETURNING event_id
      ),
      fresh AS (SELECT input.* FROM input JOIN ins USING (event_id)),
      accounts AS (
        INSERT INTO account_monthly_usage (account_id, month, tokens, requests)
        SELECT account_id, month, sum(input_tokens::bigint + output_tokens), count(*) FROM fresh GROUP BY account_id, month
        ON CONFLICT (account_id, month) DO UPDATE SET tokens = account_monthly_usage.tokens + EXCLUDED.tokens,
          requests = account_monthly_usage.requests + EXCLUDED.requests
      ),
      keys AS (
        INSERT INTO key_monthly_usage (key_id, month, tokens, requests)
        SELECT key_id, month, sum(input_tokens::bigint + output_tokens), count(*) FROM fresh GROUP BY key_id, month
        ON CONFLICT (key_id, month) DO UPDATE SET tokens = key_monthly_usage.tokens + EXCLUDED.tokens,
          requests = key_monthly_usage.requests + EXCLUDED.requests
      ),
      last_used AS (
        -- last_used_at only moves forward, whatever order the events arrive in.
        UPDATE service_keys k SET last_used_at = GREATEST(k.last_used_at, t.latest)
        FROM (SELECT key_id, max(started_at) AS latest FROM fresh GROUP BY key_id) t
        WHERE k.id = t.key_id
      )
      SELECT event_id FROM ins`;
    return inserted.map((r) => r.event_id);
  }

  /**
   * The month's total, the plan's limit and whether it is reached, per (account, month)
   * the batch touched: one query, read after the insert committed.
   */
  private async monthTotals(rows: Row[]): Promise<AccountMonthTotal[]> {
    const pairs = new Map<string, { account_id: string; month: Date }>();
    for (const r of rows)
      pairs.set(`${r.event.account_id}|${r.month.toISOString()}`, { account_id: r.event.account_id, month: r.month });
    if (pairs.size === 0) return [];
    const wanted = [...pairs.values()];
    const found = await this.db.$queryRaw<{ account_id: string; month: Date; plan: PlanName; tokens: bigint | null }[]>`
      SELECT p.account_id, p.month, a.plan::text AS plan, u.tokens
      FROM unnest(${wanted.map((p) => p.account_id)}::text[], ${wanted.map((p) => p.month)}::date[]) AS p(account_id, month)
      JOIN accounts a ON a.id = p.account_id
      LEFT JOIN account_monthly_usage u ON u.account_id = p.account_id AND u.month = p.month`;
    return found.map((r) => {
      const tokens = Number(r.tokens ?? 0n);
      const limit = this.plans[r.plan].monthly_tokens;
      return { account_id: r.account_id, month: yyyymm(r.month), tokens, limit, exceeded: tokens >= limit };
    });
  }
}
