import type { Db } from "@terse/db";
import { Prisma } from "@terse/db";
import { type PriceTable, priceOf } from "@terse/prices";
import {
  addMicros,
  addMoney,
  type Micros,
  type Money,
  microsOf,
  moneyOf,
  moneyOfMicros,
  NO_MICROS,
  NO_MONEY,
  type TokenSums,
} from "./usage-money.ts";

// Usage analytics for the dashboard and API clients: requests, tokens and money of one
// account, over a time range, optionally one key, grouped by day, key or model. Money is
// priced here, at read time, from the stored tokens and the price table (usage-money.ts).

export type GroupBy = "day" | "key" | "model";

export interface UsageQuery {
  accountId: string;
  from: Date;
  to: Date;
  groupBy: GroupBy;
  keyId?: string | undefined;
}

export type UsageFigures = {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  /** Of input_tokens, read from and written to the providers' prompt caches. */
  cache_read_tokens: number;
  cache_write_tokens: number;
  input_tokens_before_compression: number;
  tokens_saved: number;
  /** Requests of models the price table does not know: in the token figures, not in the money ones. */
  unpriced_requests: number;
  /** Upstream calls terse made to answer the model's terse_recall calls (their tokens are in the figures above). */
  recall_rounds: number;
  /** Requests with at least one recall round. */
  requests_with_recall: number;
} & Money;

export type UsageRow = UsageFigures & {
  day?: string;
  key_id?: string;
  key_name?: string;
  key_prefix?: string;
  model?: string;
};

export interface UsageResult {
  data: UsageRow[];
  totals: UsageFigures;
  /** Models of the range that have no price, sorted: their requests count no money. */
  unpriced_models: string[];
}

/** One (label, model) group as Postgres sums it. */
interface SqlRow {
  label: string;
  model: string;
  requests: bigint;
  input_tokens: bigint;
  output_tokens: bigint;
  cache_read: bigint;
  cache_write: bigint;
  before: bigint;
  cache_read_before: bigint;
  cache_write_before: bigint;
  saved: bigint;
  recall_rounds: bigint;
  requests_with_recall: bigint;
}

/** Recall rounds of some requests, and how many of the requests had any. */
interface Recalls {
  rounds: number;
  requests: number;
}

const DAY_MS = 86_400_000;

const tokensOf = (r: SqlRow): TokenSums => ({
  requests: Number(r.requests),
  input: Number(r.input_tokens),
  output: Number(r.output_tokens),
  cacheRead: Number(r.cache_read),
  cacheWrite: Number(r.cache_write),
  before: Number(r.before),
  cacheReadBefore: Number(r.cache_read_before),
  cacheWriteBefore: Number(r.cache_write_before),
  saved: Number(r.saved),
});

/** Sums of several groups, in the shape the API answers. */
class Figures {
  private t: TokenSums = {
    requests: 0,
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    before: 0,
    cacheReadBefore: 0,
    cacheWriteBefore: 0,
    saved: 0,
  };
  private money: Money = NO_MONEY;
  private unpriced = 0;
  private recalls: Recalls = { rounds: 0, requests: 0 };

  add(t: TokenSums, money: Money | undefined, recalls: Recalls): void {
    for (const k of Object.keys(this.t) as (keyof TokenSums)[]) this.t[k] += t[k];
    this.recalls = { rounds: this.recalls.rounds + recalls.rounds, requests: this.recalls.requests + recalls.requests };
    if (money) this.money = addMoney(this.money, money);
    else this.unpriced += t.requests;
  }

  /** The money as shown: rounded once, here, per group. */
  micros(): Micros {
    return microsOf(this.money);
  }

  /** The figures; `micros` for totals: the sum of the groups' money as they show it. */
  figures(micros: Micros = this.micros()): UsageFigures {
    return {
      requests: this.t.requests,
      input_tokens: this.t.input,
      output_tokens: this.t.output,
      cache_read_tokens: this.t.cacheRead,
      cache_write_tokens: this.t.cacheWrite,
      input_tokens_before_compression: this.t.before,
      tokens_saved: this.t.saved,
      unpriced_requests: this.unpriced,
      recall_rounds: this.recalls.rounds,
      requests_with_recall: this.recalls.requests,
      ...moneyOfMicros(micros),
    };
  }
}

export class UsageReport {
  constructor(
    private readonly db: Db,
    private readonly prices: PriceTable,
  ) {}

  async run(q: UsageQuery): Promise<UsageResult> {
    const rows = await this.sums(q);
    const groups = new Map<string, Figures>();
    const totals = new Figures();
    const unpriced = new Set<string>();
    for (const r of rows) {
      const price = priceOf(this.prices, r.model);
      if (!price) unpriced.add(r.model);
      const tokens = tokensOf(r);
      const money = price ? moneyOf(price, tokens) : undefined;
      const recalls = { rounds: Number(r.recall_rounds), requests: Number(r.requests_with_recall) };
      const group = groups.get(r.label) ?? new Figures();
      groups.set(r.label, group);
      group.add(tokens, money, recalls);
      totals.add(tokens, money, recalls);
    }
    const labelled = [...groups].map(([label, f]) => ({ label, figures: f.figures() }));
    const shown = [...groups.values()].reduce((sum, f) => addMicros(sum, f.micros()), NO_MICROS);
    const totalFigures = totals.figures(shown);
    const unpriced_models = [...unpriced].sort();
    if (q.groupBy === "day") return { data: everyDay(q.from, q.to, labelled), totals: totalFigures, unpriced_models };
    if (q.groupBy === "model") {
      const data = labelled.map((l) => ({ model: l.label, ...l.figures }));
      return { data, totals: totalFigures, unpriced_models };
    }
    return { data: await this.withKeyNames(q.accountId, labelled), totals: totalFigures, unpriced_models };
  }

  /** Token sums per label and model (money needs the model's price). */
  private sums(q: UsageQuery): Promise<SqlRow[]> {
    const label = {
      day: Prisma.sql`to_char(date_trunc('day', started_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')`,
      key: Prisma.sql`key_id`,
      model: Prisma.sql`model`,
    }[q.groupBy];
    const keyFilter = q.keyId ? Prisma.sql`AND key_id = ${q.keyId}` : Prisma.empty;
    return this.db.$queryRaw<SqlRow[]>`
      SELECT ${label} AS label, model, count(*) AS requests,
             COALESCE(sum(input_tokens), 0) AS input_tokens, COALESCE(sum(output_tokens), 0) AS output_tokens,
             COALESCE(sum(cache_read_tokens), 0) AS cache_read, COALESCE(sum(cache_write_tokens), 0) AS cache_write,
             COALESCE(sum(input_tokens_before_compression), 0) AS before,
             COALESCE(sum(cache_read_tokens_before_compression), 0) AS cache_read_before,
             COALESCE(sum(cache_write_tokens_before_compression), 0) AS cache_write_before,
             COALESCE(sum(GREATEST(0, input_tokens_before_compression - input_tokens)), 0) AS saved,
             COALESCE(sum(recall_rounds), 0) AS recall_rounds, count(*) FILTER (WHERE recall_rounds > 0) AS requests_with_recall
      FROM usage_events
      WHERE account_id = ${q.accountId} AND started_at >= ${q.from} AND started_at < ${q.to} ${keyFilter}
      GROUP BY 1, 2 ORDER BY 1, 2`;
  }

  private async withKeyNames(accountId: string, rows: { label: string; figures: UsageFigures }[]): Promise<UsageRow[]> {
    const keys = await this.db.serviceKey.findMany({
      where: { accountId, id: { in: rows.map((r) => r.label) } },
      select: { id: true, name: true, keyPrefix: true },
    });
    const byId = new Map(keys.map((k) => [k.id, k]));
    return rows.map((r) => ({
      key_id: r.label,
      key_name: byId.get(r.label)?.name ?? "",
      key_prefix: byId.get(r.label)?.keyPrefix ?? "",
      ...r.figures,
    }));
  }
}

/** Every UTC day of the range, zeros included, so a chart needs no gap filling. */
function everyDay(from: Date, to: Date, rows: { label: string; figures: UsageFigures }[]): UsageRow[] {
  const byDay = new Map(rows.map((r) => [r.label, r.figures]));
  const none = new Figures().figures();
  const out: UsageRow[] = [];
  for (let t = Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate()); t < to.getTime(); t += DAY_MS) {
    const day = new Date(t).toISOString().slice(0, 10);
    out.push({ day, ...(byDay.get(day) ?? none) });
  }
  return out;
}
