import { controlPlaneAdminEnv, loadConfig } from "@terse/config";
import { createDb, type Db } from "@terse/db";
import { AccountService } from "../domain/accounts.ts";
import { verifyPassword } from "../domain/passwords.ts";
import { AccountStore } from "../infra/account-store.ts";

export const DEMO_EMAIL = "demo@terse.local";

/**
 * The demo account of `npm start`: created on first run, and on later runs its
 * password is set back to DEMO_PASSWORD if it was changed, so the printed login is
 * always true. Idempotent. Expects a migrated database.
 */
export async function seedDemoAccount(
  env: NodeJS.ProcessEnv | Record<string, string> = process.env,
): Promise<{ email: string; password: string; created: boolean }> {
  const config = loadConfig(controlPlaneAdminEnv, env);
  const db = createDb(config.DATABASE_URL, { poolSize: 2 });
  try {
    const created = await ensureDemoAccount(db, config.DEMO_PASSWORD);
    return { email: DEMO_EMAIL, password: config.DEMO_PASSWORD, created };
  } finally {
    await db.$disconnect();
  }
}

async function ensureDemoAccount(db: Db, password: string): Promise<boolean> {
  const store = new AccountStore(db);
  const accounts = new AccountService({ store });
  const existing = await store.findByEmail(DEMO_EMAIL);
  if (!existing) {
    await accounts.create(DEMO_EMAIL, password, "pro").catch(async (err: unknown) => {
      // Two starts at once: the other one created it.
      if (!(await store.findByEmail(DEMO_EMAIL))) throw err;
    });
    return true;
  }
  if (!(await verifyPassword(existing.passwordHash, password))) await accounts.resetPassword(existing.id, password);
  return false;
}
