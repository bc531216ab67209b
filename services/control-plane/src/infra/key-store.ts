import type { ContextCompressLevel, Db, Intensity, Plan, ServiceKey } from "@terse/db";
import { Prisma } from "@terse/db";
import type { KeySettingsFields } from "@terse/keys";
import type { Tx } from "./transactions.ts";

// Service keys in Postgres. Functions that take `tx` run inside the caller's
// transaction; the row locks they take are what make the rules hold under concurrency.

/** The partial unique index on (account_id, name) WHERE is_active (first migration). */
const ACTIVE_NAME_INDEX = "service_keys_account_id_name_active_key";

/** Thrown by insert/update when another active key of the account has the name. */
export class DuplicateNameError extends Error {
  override name = "DuplicateNameError";
}

export interface KeySettings {
  name: string;
  intensity: Intensity;
  autoCompressInput: boolean;
  smartDetectEnabled: boolean;
  contextCompress: boolean;
  contextCompressLevel: ContextCompressLevel;
}

/** A key's settings by their API names (@terse/keys/settings) -> the store's; fields left out stay out. */
export function storeNamesOf(api: Partial<KeySettingsFields>): Partial<KeySettings> {
  const out: Partial<KeySettings> = {};
  if (api.name !== undefined) out.name = api.name;
  if (api.intensity !== undefined) out.intensity = api.intensity;
  if (api.auto_compress_input !== undefined) out.autoCompressInput = api.auto_compress_input;
  if (api.smart_detect_enabled !== undefined) out.smartDetectEnabled = api.smart_detect_enabled;
  if (api.context_compress !== undefined) out.contextCompress = api.context_compress;
  if (api.context_compress_level !== undefined) out.contextCompressLevel = api.context_compress_level;
  return out;
}

export interface NewKey extends KeySettings {
  id: string;
  accountId: string;
  keyHash: string;
  keyPrefix: string;
  rateLimitRpm: number;
}

/** An active key with its account's plan: one record of the Redis cache. */
export interface ActiveKeyRow {
  id: string;
  accountId: string;
  keyHash: string;
  plan: Plan;
  rateLimitRpm: number;
  intensity: Intensity;
  autoCompressInput: boolean;
  smartDetectEnabled: boolean;
  contextCompress: boolean;
  contextCompressLevel: ContextCompressLevel;
}

export class KeyStore {
  constructor(private readonly db: Db) {}

  /**
   * Locks the account row and reads its plan. "update" serialises the plan-limit check
   * of concurrent creates; "share" lets changes to existing keys run side by side while
   * a plan change (which takes the row for update) waits for them, or they for it.
   */
  async lockAccount(tx: Tx, accountId: string, mode: "update" | "share"): Promise<{ plan: Plan } | null> {
    const lock = Prisma.raw(mode === "update" ? "FOR UPDATE" : "FOR SHARE");
    const rows = await tx.$queryRaw<
      { plan: Plan }[]
    >`SELECT plan::text AS plan FROM accounts WHERE id = ${accountId} ${lock}`;
    return rows[0] ?? null;
  }

  countActive(tx: Tx, accountId: string): Promise<number> {
    return tx.serviceKey.count({ where: { accountId, isActive: true } });
  }

  /** The caller's key, row-locked until the transaction ends; null when it is not theirs. */
  async findOwnForUpdate(tx: Tx, accountId: string, id: string): Promise<ServiceKey | null> {
    const rows = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM service_keys WHERE id = ${id} AND account_id = ${accountId} FOR UPDATE`;
    if (rows.length === 0) return null;
    return tx.serviceKey.findUnique({ where: { id } });
  }

  insert(tx: Tx, key: NewKey): Promise<ServiceKey> {
    return mapDuplicateName(() => tx.serviceKey.create({ data: key }));
  }

  update(tx: Tx, id: string, data: Partial<KeySettings>): Promise<ServiceKey> {
    return mapDuplicateName(() => tx.serviceKey.update({ where: { id }, data }));
  }

  revoke(tx: Tx, id: string, at: Date, rotatedToId?: string): Promise<ServiceKey> {
    return tx.serviceKey.update({
      where: { id },
      data: { isActive: false, revokedAt: at, rotatedToId: rotatedToId ?? null },
    });
  }

  /** Every key of the account, newest first (ties broken by id for a stable order). */
  listOwn(accountId: string): Promise<ServiceKey[]> {
    return this.db.serviceKey.findMany({ where: { accountId }, orderBy: [{ createdAt: "desc" }, { id: "desc" }] });
  }

  /**
   * Active keys among the given hashes (cache repair), their rows and accounts locked
   * FOR SHARE: a revocation of one of them waits until the repair has written Redis,
   * so the repair cannot put back a key revoked in the meantime.
   */
  activeByHashLocked(tx: Tx, keyHashes: string[]): Promise<ActiveKeyRow[]> {
    return tx.$queryRaw<ActiveKeyRow[]>`
      ${Prisma.raw(ACTIVE_KEY_SELECT)} WHERE k.is_active AND k.key_hash = ANY(${keyHashes}) FOR SHARE OF k, a`;
  }

  activeOfAccount(tx: Tx, accountId: string): Promise<ActiveKeyRow[]> {
    return this.activeRows(tx, Prisma.sql`k.account_id = ${accountId}`);
  }

  /**
   * Resync: every active key, in batches, through a server-side cursor inside `tx`: one
   * scan of the table however many keys there are (keyset pages would re-join and
   * re-sort for each page).
   */
  async *allActive(tx: Tx, batchSize: number): AsyncGenerator<ActiveKeyRow[]> {
    await tx.$executeRawUnsafe(`DECLARE active_keys NO SCROLL CURSOR FOR ${ACTIVE_KEY_SELECT} WHERE k.is_active`);
    try {
      for (;;) {
        const batch = await tx.$queryRawUnsafe<ActiveKeyRow[]>(`FETCH FORWARD ${Number(batchSize)} FROM active_keys`);
        if (batch.length === 0) return;
        yield batch;
      }
    } finally {
      // After a failure the transaction is aborted and rolls back, closing the cursor anyway.
      await tx.$executeRawUnsafe("CLOSE active_keys").catch(() => undefined);
    }
  }

  private activeRows(tx: Tx, where: Prisma.Sql): Promise<ActiveKeyRow[]> {
    return tx.$queryRaw<ActiveKeyRow[]>`${Prisma.raw(ACTIVE_KEY_SELECT)} WHERE k.is_active AND ${where}`;
  }
}

/** An active key's cache record fields, with its account's plan. */
const ACTIVE_KEY_SELECT = `
  SELECT k.id, k.account_id AS "accountId", k.key_hash AS "keyHash", a.plan::text AS plan,
         k.rate_limit_rpm AS "rateLimitRpm", k.intensity::text AS intensity,
         k.auto_compress_input AS "autoCompressInput", k.smart_detect_enabled AS "smartDetectEnabled",
         k.context_compress AS "contextCompress", k.context_compress_level::text AS "contextCompressLevel"
  FROM service_keys k JOIN accounts a ON a.id = k.account_id`;

async function mapDuplicateName<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isActiveNameViolation(err)) throw new DuplicateNameError("an active key has this name");
    throw err;
  }
}

function isActiveNameViolation(err: unknown): boolean {
  if (!(err instanceof Prisma.PrismaClientKnownRequestError) || err.code !== "P2002") return false;
  // The pg driver adapter names the violated index in meta.driverAdapterError.
  return JSON.stringify(err.meta ?? {}).includes(ACTIVE_NAME_INDEX);
}
