import type { Plans } from "@terse/config";
import type { Db, Plan, ServiceKey } from "@terse/db";
import { ApiError } from "@terse/errors";
import {
  couldBeRecordId,
  generateRawKey,
  hashKey,
  KEY_DEFAULTS as SETTINGS_DEFAULTS,
  keyPrefixOf,
  newId,
} from "@terse/keys";
import type { Logger } from "@terse/logger";
import type { KeyCache } from "../infra/key-cache.ts";
import { DuplicateNameError, type KeySettings, type KeyStore, storeNamesOf } from "../infra/key-store.ts";
import { cacheWritingTransaction, type Tx } from "../infra/transactions.ts";
import { cacheEntryOf, cacheEntryOfRow } from "./cache-entry.ts";

// The service-key lifecycle of spec section 3. Every change follows DESIGN.md section 2:
// Postgres transaction, Redis written BEFORE the commit, then the answer. If Redis
// cannot be written the transaction rolls back (503). If the commit itself fails after
// Redis was written, the touched records are repaired from what Postgres holds.

/** Spec 2.1 "Default on create" (@terse/keys/settings), in the store's names. */
export const KEY_DEFAULTS = storeNamesOf(SETTINGS_DEFAULTS) as KeySettings;

export interface IssuedKey {
  record: ServiceKey;
  /** Shown to the caller once, then gone: only its hash is stored. */
  rawKey: string;
}

export interface KeyServiceDeps {
  db: Db;
  store: KeyStore;
  cache: KeyCache;
  plans: Plans;
  logger: Logger;
  clock: () => Date;
}

export class KeyService {
  constructor(private readonly deps: KeyServiceDeps) {}

  list(accountId: string): Promise<ServiceKey[]> {
    return this.deps.store.listOwn(accountId);
  }

  create(accountId: string, settings: Partial<KeySettings>): Promise<IssuedKey> {
    const rawKey = generateRawKey();
    const keyHash = hashKey(rawKey);
    return this.writeThrough([keyHash], async (tx) => {
      const account = await this.deps.store.lockAccount(tx, accountId, "update");
      if (!account) throw new ApiError("invalid_access_token");
      const plan = this.deps.plans[account.plan];
      if ((await this.deps.store.countActive(tx, accountId)) >= plan.max_active_keys) {
        throw new ApiError("key_limit_reached");
      }
      const record = await this.deps.store.insert(tx, {
        ...KEY_DEFAULTS,
        ...settings,
        id: newId("key"),
        accountId,
        keyHash,
        keyPrefix: keyPrefixOf(rawKey),
        rateLimitRpm: plan.rate_limit_rpm,
      });
      await this.deps.cache.apply({ put: [cacheEntryOf(record, account.plan)], fresh: [keyHash] });
      return { record, rawKey };
    });
  }

  async update(accountId: string, id: string, changes: Partial<KeySettings>): Promise<ServiceKey> {
    return this.writeThroughKey(accountId, id, async (tx, current, plan) => {
      if (!current.isActive) throw new ApiError("key_revoked");
      const record = await this.deps.store.update(tx, id, changes);
      await this.deps.cache.apply({ put: [cacheEntryOf(record, plan)] });
      return record;
    });
  }

  /** A new key with the old one's name and settings; the old one revoked in the same commit. */
  async rotate(accountId: string, id: string): Promise<IssuedKey> {
    const rawKey = generateRawKey();
    const keyHash = hashKey(rawKey);
    return this.writeThroughKey(
      accountId,
      id,
      async (tx, old, plan) => {
        if (!old.isActive) throw new ApiError("key_revoked");
        const newKeyId = newId("key");
        // Revoke first: the new key takes the old one's name, unique among ACTIVE keys.
        await this.deps.store.revoke(tx, old.id, this.deps.clock(), newKeyId);
        const record = await this.deps.store.insert(tx, {
          id: newKeyId,
          accountId,
          keyHash,
          keyPrefix: keyPrefixOf(rawKey),
          name: old.name,
          intensity: old.intensity,
          autoCompressInput: old.autoCompressInput,
          smartDetectEnabled: old.smartDetectEnabled,
          contextCompress: old.contextCompress,
          contextCompressLevel: old.contextCompressLevel,
          rateLimitRpm: old.rateLimitRpm,
        });
        await this.deps.cache.apply({ put: [cacheEntryOf(record, plan)], remove: [old.keyHash], fresh: [keyHash] });
        return { record, rawKey };
      },
      [keyHash],
    );
  }

  /**
   * Soft delete. Revoking a revoked key changes nothing and answers the same record.
   * Revoking the account's last active key also removes the recall originals its keys
   * left in Redis (best effort: they expire on their own within the hour).
   */
  async revoke(accountId: string, id: string): Promise<ServiceKey> {
    const { record, lastKey } = await this.writeThroughKey(accountId, id, async (tx, current) => {
      const record = current.isActive ? await this.deps.store.revoke(tx, id, this.deps.clock()) : current;
      // Also for an already revoked key: the record must not be in Redis, whatever happened before.
      await this.deps.cache.apply({ remove: [current.keyHash] });
      return { record, lastKey: (await this.deps.store.countActive(tx, accountId)) === 0 };
    });
    if (lastKey) {
      await this.deps.cache.forgetRecallTexts(accountId).catch((err: unknown) => {
        this.deps.logger.warn({ err }, "removing the account's recall texts failed; they expire on their own");
      });
    }
    return record;
  }

  /** Rewrites the cache records of an account's active keys (its plan changed), inside `tx`. */
  async recacheAccountKeys(tx: Tx, accountId: string): Promise<number> {
    const rows = await this.deps.store.activeOfAccount(tx, accountId);
    await this.deps.cache.apply({ put: rows.map(cacheEntryOfRow) });
    return rows.length;
  }

  /** Loads and locks the caller's key (404 if it is not theirs), then runs `work` on it. */
  private async writeThroughKey<T>(
    accountId: string,
    id: string,
    work: (tx: Tx, key: ServiceKey, plan: Plan) => Promise<T>,
    extraHashes: string[] = [],
  ): Promise<T> {
    if (!couldBeRecordId(id)) throw new ApiError("not_found");
    const touched = [...extraHashes];
    return this.writeThrough(touched, async (tx) => {
      // Shared lock on the account: a plan change waits for us, and we read its result.
      const account = await this.deps.store.lockAccount(tx, accountId, "share");
      if (!account) throw new ApiError("invalid_access_token");
      const key = await this.deps.store.findOwnForUpdate(tx, accountId, id);
      if (!key) throw new ApiError("not_found");
      touched.push(key.keyHash);
      return work(tx, key, account.plan);
    });
  }

  /**
   * Runs a cache-writing transaction. `touched` lists the key hashes whose records the
   * transaction may write; if anything fails after that, those records are repaired.
   */
  private async writeThrough<T>(touched: string[], work: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await cacheWritingTransaction(this.deps.db, work);
    } catch (err) {
      if (err instanceof DuplicateNameError) throw new ApiError("duplicate_name");
      if (!(err instanceof ApiError) || err.code === "auth_cache_unavailable") await this.repair(touched);
      throw err;
    }
  }

  /**
   * After a failed write the cache may hold what Postgres did not commit. Each touched
   * record is rewritten from Postgres, with the rows locked while Redis is written (so a
   * revocation racing the repair lands after it); if that fails, the records are
   * removed instead (fail closed: a missing record costs a 401, a stale one could keep
   * a revoked key usable). Best effort: if Redis is down too, the next resync repairs it.
   */
  private async repair(keyHashes: string[]): Promise<void> {
    if (keyHashes.length === 0) return;
    try {
      await cacheWritingTransaction(this.deps.db, async (tx) => {
        const active = await this.deps.store.activeByHashLocked(tx, keyHashes);
        const activeHashes = new Set(active.map((r) => r.keyHash));
        await this.deps.cache.apply({
          put: active.map(cacheEntryOfRow),
          remove: keyHashes.filter((h) => !activeHashes.has(h)),
        });
      });
    } catch (err) {
      this.deps.logger.warn({ err }, "key cache repair from Postgres failed; removing the touched records");
      await this.deps.cache.apply({ remove: keyHashes }).catch((removeErr: unknown) => {
        this.deps.logger.error({ err: removeErr }, "key cache repair failed; the next resync will fix it");
      });
    }
  }
}
