import { ApiError } from "@terse/errors";
import { couldBeRecordId } from "@terse/keys";
import type { Express, Request, Response } from "express";
import { z } from "zod";
import type { AppContext } from "../context.ts";
import { UsageReport } from "../domain/usage-report.ts";
import { accountOf } from "./auth_middleware.ts";

// GET /v1/usage?from=&to=&group_by=day|key|model&key_id=: the caller's usage, for the
// dashboard's charts. Defaults: the last 30 days, grouped by day. Tokens as recorded;
// money priced now from the price table, the savings in money an estimate (docs/savings.md).

const MAX_RANGE_DAYS = 366;
const DEFAULT_RANGE_DAYS = 30;
const DAY_MS = 86_400_000;

/** The first instant Postgres stores as written (year 0 is 1 BC there, refused in a query). */
const FIRST_INSTANT = Date.parse("0001-01-01T00:00:00Z");

const isoDate = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()], {
    error: "must be an ISO 8601 date (2026-11-01) or date-time (2026-11-01T00:00:00Z)",
  })
  .transform((s) => new Date(s))
  .refine((d) => !Number.isNaN(d.getTime()) && d.getTime() >= FIRST_INSTANT, "must be in the year 1 or later");

const usageQuery = z
  .object({
    from: isoDate.optional(),
    to: isoDate.optional(),
    group_by: z.enum(["day", "key", "model"]).default("day"),
    key_id: z.string().min(1).max(64).optional(),
  })
  .strict();

/** The query parameters the endpoint defines (a request log may show their values). */
export const USAGE_PARAMETERS: readonly string[] = Object.keys(usageQuery.shape);

function parseQuery(query: unknown) {
  const result = usageQuery.safeParse(query);
  if (!result.success) {
    const issue = result.error.issues[0];
    if (issue?.code === "unrecognized_keys") {
      throw new ApiError("invalid_request", { message: `Unknown parameter: ${issue.keys[0]}`, param: issue.keys[0] });
    }
    const param = String(issue?.path[0] ?? "");
    throw new ApiError("invalid_request", { message: `${param}: ${issue?.message}`, param });
  }
  const to = result.data.to ?? new Date();
  const from = result.data.from ?? new Date(to.getTime() - DEFAULT_RANGE_DAYS * DAY_MS);
  if (from >= to) throw new ApiError("invalid_request", { message: "from must be before to", param: "from" });
  if (to.getTime() - from.getTime() > MAX_RANGE_DAYS * DAY_MS) {
    throw new ApiError("invalid_request", {
      message: `the range may span at most ${MAX_RANGE_DAYS} days`,
      param: "from",
    });
  }
  return { from, to, groupBy: result.data.group_by, keyId: result.data.key_id };
}

export function register(app: Express, ctx: AppContext): void {
  const prices = ctx.config.TERSE_PRICES;
  const report = new UsageReport(ctx.db, prices);
  const about = {
    currency: "USD",
    prices_as_of: prices.as_of,
    prices_source: prices.source,
    estimate:
      "cost_without_terse_usd and saved_usd are estimates: the request before compression is the tokenizer's count " +
      "of what compression removed added to the provider's input count, with the part the previous request of its " +
      "session sent counted as read from the provider's prompt cache; cost_usd is the providers' reported tokens " +
      "(every upstream call, recall rounds included) at the table's prices.",
  };
  app.get("/v1/usage", ctx.requireAccount, async (req: Request, res: Response) => {
    const account = accountOf(req);
    const q = parseQuery(req.query);
    if (q.keyId) {
      const key = couldBeRecordId(q.keyId)
        ? await ctx.db.serviceKey.findFirst({ where: { id: q.keyId, accountId: account.id }, select: { id: true } })
        : null;
      if (!key) throw new ApiError("not_found");
    }
    const { data, totals, unpriced_models } = await report.run({ accountId: account.id, ...q });
    res.json({
      from: q.from.toISOString(),
      to: q.to.toISOString(),
      group_by: q.groupBy,
      data,
      totals,
      unpriced_models,
      money: about,
    });
  });
}
