import type { Db } from "@terse/db";
import { cacheKeyFor } from "@terse/keys";
import type { Logger } from "@terse/logger";
import type { KeyCache } from "../infra/key-cache.ts";
import type { KeyStore } from "../infra/key-store.ts";
import { resyncTransaction, type Tx } from "../infra/transactions.ts";
import { cacheEntryOfRow } from "./cache-entry.ts";

// Full rebuild of the Redis key cache from Postgres (DESIGN.md section 2): on start, on
// `pnpm admin cache:resync`, and whenever the generation stamp is found missing.
// It holds the key-cache lock exclusively, so no key write (and no other resync)
// interleaves with it, stamp included.

const BATCH_SIZE = 5_000;

export interface ResyncResult {
  /** Active keys written to Redis. */
  written: number;
  /** Cached records removed because their key is no longer active (or unknown). */
  removed: number;
  generation: string;
  ms: number;
}

/** Rewrites attempted before giving up while Redis keeps losing data under the resync. */
const ATTEMPTS = 3;

export async function resyncKeyCache(deps: {
  db: Db;
  store: KeyStore;
  cache: KeyCache;
  logger?: Logger;
  clock?: () => Date;
}): Promise<ResyncResult> {
  const started = performance.now();
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const rewrite = await resyncTransaction(deps.db, (tx) => rewriteCache(deps, tx));
    if (rewrite) {
      // Whatever Redis held before (a record a failover brought back), no proxy keeps a copy of it.
      await deps.cache.announceResync();
      const result = { ...rewrite, ms: Math.round(performance.now() - started) };
      deps.logger?.info(result, "key cache resynced");
      return result;
    }
    deps.logger?.warn({ attempt }, "Redis lost the key cache during its resync; rewriting it again");
  }
  throw new Error(`key cache resync: Redis lost data during each of ${ATTEMPTS} rewrites`);
}

/**
 * One full rewrite under the key-cache lock, stamped last (a reader that sees the stamp
 * sees a complete cache). Null, with no stamp, when Redis lost the rewrite's marker.
 */
async function rewriteCache(
  deps: Parameters<typeof resyncKeyCache>[0],
  tx: Tx,
): Promise<Omit<ResyncResult, "ms"> | null> {
  const token = await deps.cache.beginRewrite();
  const active = new Set<string>();
  // One Redis batch in flight while Postgres reads the next: the two overlap.
  let writing: Promise<void> = Promise.resolve();
  for await (const batch of deps.store.allActive(tx, BATCH_SIZE)) {
    await writing;
    writing = deps.cache.putMany(batch.map(cacheEntryOfRow));
    writing.catch(() => undefined); // awaited (and rethrown) on the next turn; not "unhandled" meanwhile
    for (const row of batch) active.add(cacheKeyFor(row.keyHash));
  }
  await writing;
  let removed = 0;
  for await (const names of deps.cache.cachedKeyNames()) {
    const gone = names.filter((n) => !active.has(n));
    await deps.cache.removeByName(gone);
    removed += gone.length;
  }
  const generation = (deps.clock?.() ?? new Date()).toISOString();
  if (!(await deps.cache.stampGeneration(token, generation))) return null;
  return { written: active.size, removed, generation };
}
