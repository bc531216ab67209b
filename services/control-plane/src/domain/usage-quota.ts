import type { Plans } from "@terse/config";
import type { Db } from "@terse/db";
import { QUOTA_CHANNEL, quotaExceededKeyFor, quotaMonth } from "@terse/keys";
import type { Redis } from "ioredis";

/**
 * Sets an account's over-quota mark for this month from its total and its plan's limit
 * NOW, and announces the change to every data plane. Called after a plan change, so an
 * upgrade (or a higher limit) clears the mark at once and a downgrade sets it.
 */
export async function reevaluateQuota(
  deps: { db: Db; redis: Redis; plans: Plans },
  accountId: string,
  now = new Date(),
): Promise<boolean> {
  const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const [account, usage] = await Promise.all([
    deps.db.account.findUnique({ where: { id: accountId }, select: { plan: true } }),
    deps.db.accountMonthlyUsage.findUnique({ where: { accountId_month: { accountId, month } } }),
  ]);
  if (!account) return false;
  const exceeded = Number(usage?.tokens ?? 0n) >= deps.plans[account.plan].monthly_tokens;
  const key = quotaExceededKeyFor(quotaMonth(now));
  const changed = exceeded ? await deps.redis.sadd(key, accountId) : await deps.redis.srem(key, accountId);
  if (changed > 0) await deps.redis.publish(QUOTA_CHANNEL, accountId);
  return exceeded;
}
