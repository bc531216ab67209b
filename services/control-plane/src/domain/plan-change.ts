import type { Account, Db, Plan } from "@terse/db";
import type { AccountStore } from "../infra/account-store.ts";
import { cacheWritingTransaction } from "../infra/transactions.ts";
import { normaliseEmail } from "./accounts.ts";
import type { KeyService } from "./keys.ts";

/**
 * Changes an account's plan. Its keys' cache records carry the plan (the data plane
 * applies quotas by it), so they are rewritten in the same transaction, before the
 * commit, like every other cache write. Null when no account has the email.
 */
export function changePlan(
  deps: { db: Db; accounts: AccountStore; keys: KeyService },
  email: string,
  plan: Plan,
): Promise<Account | null> {
  return cacheWritingTransaction(deps.db, async (tx) => {
    const account = await deps.accounts.setPlanLocked(tx, normaliseEmail(email), plan);
    if (account) await deps.keys.recacheAccountKeys(tx, account.id);
    return account;
  });
}
