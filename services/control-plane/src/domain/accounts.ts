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

/** Login's own bounds (v1_auth_login.ts): an account outside them could never sign in. */
export const MAX_EMAIL_LENGTH = 254;
export const MAX_PASSWORD_LENGTH = 1024;
export const MIN_PASSWORD_LENGTH = 8;

/** An address: something, one @, a domain; no spaces or control characters anywhere. */
const EMAIL_SHAPE = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u;

/** A new account's email or password that login would refuse; the message says which and why. */
export class InvalidAccountError extends Error {}

function checkNewAccount(email: string, password: string): void {
  if (!EMAIL_SHAPE.test(email) || email.length > MAX_EMAIL_LENGTH) {
    throw new InvalidAccountError(`email must be an address (name@domain) of at most ${MAX_EMAIL_LENGTH} characters`);
  }
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw new InvalidAccountError(`password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`);
  }
}

export class AccountService {
  constructor(private readonly deps: { store: AccountStore }) {}

  /** A new account; InvalidAccountError for an email or password login would refuse. */
  async create(email: string, password: string, plan: Plan): Promise<Account> {
    const normalised = normaliseEmail(email);
    checkNewAccount(normalised, password);
    return this.deps.store.create({
      id: newId("acct"),
      email: normalised,
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
