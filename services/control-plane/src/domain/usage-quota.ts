import type { Plans } from "@terse/config";
import type { Db } from "@terse/db";
import { QUOTA_CHANNEL, quotaExceededKeyFor, quotaMonth } from "@terse/keys";
import type { Redis } from "ioredis";

// The over-quota marks are set by the metering worker as usage arrives; this module
// re-evaluates them from Postgres when something other than usage changed: the plan
// of an account, or a plan's limit (TERSE_PLANS, read at start).

export interface QuotaDeps {
  db: Db;
  redis: Redis;
  plans: Plans;
}

const firstOfMonth = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));

/** Accounts of `accountIds` whose tokens this month reach their plan's limit now. */
async function overLimit(deps: QuotaDeps, accountIds: string[], now: Date): Promise<Set<string>> {
  if (accountIds.length === 0) return new Set();
  const month = firstOfMonth(now);
  const [accounts, usage] = await Promise.all([
    deps.db.account.findMany({ where: { id: { in: accountIds } }, select: { id: true, plan: true } }),
    deps.db.accountMonthlyUsage.findMany({ where: { accountId: { in: accountIds }, month } }),
  ]);
  const tokens = new Map(usage.map((u) => [u.accountId, Number(u.tokens)]));
  return new Set(accounts.filter((a) => (tokens.get(a.id) ?? 0) >= deps.plans[a.plan].monthly_tokens).map((a) => a.id));
}

/**
 * Sets an account's over-quota mark for this month from its total and its plan's limit
 * NOW, and announces the change to every data plane. Call it after a plan change, so an
 * upgrade (or a higher limit) clears the mark at once and a downgrade sets it.
 */
export async function reevaluateQuota(deps: QuotaDeps, accountId: string, now = new Date()): Promise<boolean> {
  const exceeded = (await overLimit(deps, [accountId], now)).has(accountId);
  const key = quotaExceededKeyFor(quotaMonth(now));
  const changed = exceeded ? await deps.redis.sadd(key, accountId) : await deps.redis.srem(key, accountId);
  if (changed > 0) await deps.redis.publish(QUOTA_CHANNEL, accountId);
  return exceeded;
}

/**
 * Takes out of this month's set every account that is no longer over its limit (a limit
 * raised in TERSE_PLANS, or a plan upgrade that raced a worker's mark), announcing each
 * change. Returns the accounts cleared. It never adds a mark: the worker does that.
 */
export async function reconcileQuotaMarks(deps: QuotaDeps, now = new Date()): Promise<string[]> {
  const key = quotaExceededKeyFor(quotaMonth(now));
  const marked = await deps.redis.smembers(key);
  const still = await overLimit(deps, marked, now);
  const cleared = marked.filter((id) => !still.has(id));
  if (cleared.length === 0) return [];
  await deps.redis.srem(key, ...cleared);
  for (const id of cleared) await deps.redis.publish(QUOTA_CHANNEL, id);
  return cleared;
}
