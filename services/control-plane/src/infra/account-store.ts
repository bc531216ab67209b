import type { Account, Db, Plan } from "@terse/db";
import { Prisma } from "@terse/db";
import type { Tx } from "./transactions.ts";

/** Thrown when an account with the email already exists. */
export class DuplicateEmailError extends Error {
  override name = "DuplicateEmailError";
}

export class AccountStore {
  constructor(private readonly db: Db) {}

  findById(id: string): Promise<Account | null> {
    return this.db.account.findUnique({ where: { id } });
  }

  findByEmail(email: string): Promise<Account | null> {
    return this.db.account.findUnique({ where: { email } });
  }

  async create(data: { id: string; email: string; passwordHash: string; plan: Plan }): Promise<Account> {
    try {
      return await this.db.account.create({ data });
    } catch (err) {
      if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
        throw new DuplicateEmailError(`an account with email ${data.email} exists`);
      }
      throw err;
    }
  }

  setPasswordHash(id: string, passwordHash: string): Promise<Account> {
    return this.db.account.update({ where: { id }, data: { passwordHash } });
  }

  /** The account of an external identity provider's subject, created on first sight. */
  async findOrCreateExternal(id: string, iss: string, sub: string): Promise<Account> {
    const where = { externalIss_externalSub: { externalIss: iss, externalSub: sub } };
    const found = await this.db.account.findUnique({ where });
    if (found) return found;
    try {
      return await this.db.account.create({ data: { id, externalIss: iss, externalSub: sub } });
    } catch (err) {
      // Two first requests of the same subject at once: the other one created it.
      if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
        const winner = await this.db.account.findUnique({ where });
        if (winner) return winner;
      }
      throw err;
    }
  }

  /** Locks the account row and changes its plan, inside the caller's transaction. */
  async setPlanLocked(tx: Tx, email: string, plan: Plan): Promise<Account | null> {
    const rows = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM accounts WHERE email = ${email} FOR UPDATE`;
    const id = rows[0]?.id;
    if (id === undefined) return null;
    return tx.account.update({ where: { id }, data: { plan } });
  }
}
