import type { Db } from "@terse/db";
import { Prisma } from "@terse/db";

// Usage analytics for the dashboard and API clients: requests and tokens of one
// account, over a time range, optionally one key, grouped by day, key or model.

export type GroupBy = "day" | "key" | "model";

export interface UsageQuery {
  accountId: string;
  from: Date;
  to: Date;
  groupBy: GroupBy;
  keyId?: string | undefined;
}

export interface UsageFigures {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  input_tokens_before_compression: number;
  tokens_saved: number;
}

export type UsageRow = UsageFigures & {
  day?: string;
  key_id?: string;
  key_name?: string;
  key_prefix?: string;
  model?: string;
};

interface SqlRow {
  label: string;
  requests: bigint;
  input_tokens: bigint;
  output_tokens: bigint;
  before: bigint;
}

const DAY_MS = 86_400_000;

function figures(r: Pick<SqlRow, "requests" | "input_tokens" | "output_tokens" | "before"> | undefined): UsageFigures {
  const input = Number(r?.input_tokens ?? 0n);
  const before = Number(r?.before ?? 0n);
  return {
    requests: Number(r?.requests ?? 0n),
    input_tokens: input,
    output_tokens: Number(r?.output_tokens ?? 0n),
    input_tokens_before_compression: before,
    tokens_saved: Math.max(0, before - input),
  };
}

export class UsageReport {
  constructor(private readonly db: Db) {}

  async run(q: UsageQuery): Promise<{ data: UsageRow[]; totals: UsageFigures }> {
    const label = {
      day: Prisma.sql`to_char(date_trunc('day', started_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')`,
      key: Prisma.sql`key_id`,
      model: Prisma.sql`model`,
    }[q.groupBy];
    const keyFilter = q.keyId ? Prisma.sql`AND key_id = ${q.keyId}` : Prisma.empty;
    const rows = await this.db.$queryRaw<SqlRow[]>`
      SELECT ${label} AS label, count(*) AS requests, COALESCE(sum(input_tokens), 0) AS input_tokens,
             COALESCE(sum(output_tokens), 0) AS output_tokens, COALESCE(sum(input_tokens_before_compression), 0) AS before
      FROM usage_events
      WHERE account_id = ${q.accountId} AND started_at >= ${q.from} AND started_at < ${q.to} ${keyFilter}
      GROUP BY 1 ORDER BY 1`;
    const totals = figures({
      requests: rows.reduce((s, r) => s + r.requests, 0n),
      input_tokens: rows.reduce((s, r) => s + r.input_tokens, 0n),
      output_tokens: rows.reduce((s, r) => s + r.output_tokens, 0n),
      before: rows.reduce((s, r) => s + r.before, 0n),
    });
    if (q.groupBy === "day") return { data: everyDay(q.from, q.to, rows), totals };
    if (q.groupBy === "model") return { data: rows.map((r) => ({ model: r.label, ...figures(r) })), totals };
    return { data: await this.withKeyNames(q.accountId, rows), totals };
  }

  private async withKeyNames(accountId: string, rows: SqlRow[]): Promise<UsageRow[]> {
    const keys = await this.db.serviceKey.findMany({
      where: { accountId, id: { in: rows.map((r) => r.label) } },
      select: { id: true, name: true, keyPrefix: true },
    });
    const byId = new Map(keys.map((k) => [k.id, k]));
    return rows.map((r) => ({
      key_id: r.label,
      key_name: byId.get(r.label)?.name ?? "",
      key_prefix: byId.get(r.label)?.keyPrefix ?? "",
      ...figures(r),
    }));
  }
}

/** Every UTC day of the range, zeros included, so a chart needs no gap filling. */
function everyDay(from: Date, to: Date, rows: SqlRow[]): UsageRow[] {
  const byDay = new Map(rows.map((r) => [r.label, r]));
  const out: UsageRow[] = [];
  for (let t = Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate()); t < to.getTime(); t += DAY_MS) {
    const day = new Date(t).toISOString().slice(0, 10);
    out.push({ day, ...figures(byDay.get(day)) });
  }
  return out;
}
