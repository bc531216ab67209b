import type { Db, Prisma } from "@terse/db";

export type Tx = Prisma.TransactionClient;

// Every transaction that writes the Redis key cache holds this advisory lock in shared
// mode; a full resync holds it exclusively. So a resync never interleaves with a key
// write: it cannot re-add a key that a revocation just removed, nor remove a key that
// a create just added (DESIGN.md section 2, "a revoked key must never stay usable").
const KEY_CACHE_LOCK = 72_417_002;

/** Generous: a writer may wait behind a full resync (seconds for 100,000 keys). */
const WRITE_TIMEOUT_MS = 30_000;
const RESYNC_TIMEOUT_MS = 300_000;

/** A transaction whose work includes writing the key cache before it commits. */
export function cacheWritingTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  return db.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock_shared(${KEY_CACHE_LOCK})`);
      return work(tx);
    },
    { maxWait: WRITE_TIMEOUT_MS, timeout: WRITE_TIMEOUT_MS },
  );
}

/** The transaction of a full resync: excludes every cache-writing transaction. */
export function resyncTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  return db.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${KEY_CACHE_LOCK})`);
      return work(tx);
    },
    { maxWait: WRITE_TIMEOUT_MS, timeout: RESYNC_TIMEOUT_MS },
  );
}
