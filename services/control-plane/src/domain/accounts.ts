import type { Account, Plan } from "@terse/db";
import { newId } from "@terse/keys";
import type { AccountStore } from "../infra/account-store.ts";
import { hashPassword, verifyPassword } from "./passwords.ts";

/** The account as the admin CLI prints it: never the password hash. */
export interface AccountView {
  id: string;
  email: string | null;
  plan: Plan;
  created_at: string;
}

export function accountView(a: Account): AccountView {
  return { id: a.id, email: a.email, plan: a.plan, created_at: a.createdAt.toISOString() };
}

/** Emails are compared lower-cased and trimmed: one person, one account. */
export const normaliseEmail = (email: string) => email.trim().toLowerCase();

export class AccountService {
  constructor(private readonly deps: { store: AccountStore }) {}

  async create(email: string, password: string, plan: Plan): Promise<Account> {
    return this.deps.store.create({
      id: newId("acct"),
      email: normaliseEmail(email),
      passwordHash: await hashPassword(password),
      plan,
    });
  }

  /** The account if email and password match; null otherwise, in the same time either way. */
  async authenticate(email: string, password: string): Promise<Account | null> {
    const account = await this.deps.store.findByEmail(normaliseEmail(email));
    const ok = await verifyPassword(account?.passwordHash ?? null, password);
    return ok ? account : null;
  }

  findById(id: string): Promise<Account | null> {
    return this.deps.store.findById(id);
  }

  findOrCreateExternal(iss: string, sub: string): Promise<Account> {
    return this.deps.store.findOrCreateExternal(newId("acct"), iss, sub);
  }

  /** Sets a new password (the demo seed keeps its printed password true). */
  async resetPassword(id: string, password: string): Promise<Account> {
    return this.deps.store.setPasswordHash(id, await hashPassword(password));
  }
}
