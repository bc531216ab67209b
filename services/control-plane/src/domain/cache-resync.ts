import type { Db } from "@terse/db";
import { cacheKeyFor } from "@terse/keys";
import type { Logger } from "@terse/logger";
import type { KeyCache } from "../infra/key-cache.ts";
import type { KeyStore } from "../infra/key-store.ts";
import { resyncTransaction } from "../infra/transactions.ts";
import { cacheEntryOfRow } from "./cache-entry.ts";

// Full rebuild of the Redis key cache from Postgres (DESIGN.md section 2): on start, on
// `pnpm admin cache:resync`, and whenever the generation stamp is found missing.
// It holds the key-cache lock exclusively, so no key write interleaves with it.

const BATCH_SIZE = 5_000;

export interface ResyncResult {
  /** Active keys written to Redis. */
  written: number;
  /** Cached records removed because their key is no longer active (or unknown). */
  removed: number;
  generation: string;
  ms: number;
}

export async function resyncKeyCache(deps: {
  db: Db;
  store: KeyStore;
  cache: KeyCache;
  logger?: Logger;
  clock?: () => Date;
}): Promise<ResyncResult> {
  const started = performance.now();
  const { written, removed } = await resyncTransaction(deps.db, async (tx) => {
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
    let stale = 0;
    for await (const names of deps.cache.cachedKeyNames()) {
      const gone = names.filter((n) => !active.has(n));
      await deps.cache.removeByName(gone);
      stale += gone.length;
    }
    return { written: active.size, removed: stale };
  });
  // Stamped last: a reader that sees the stamp sees a complete cache.
  const generation = (deps.clock?.() ?? new Date()).toISOString();
  await deps.cache.stampGeneration(generation);
  const result = { written, removed, generation, ms: Math.round(performance.now() - started) };
  deps.logger?.info(result, "key cache resynced");
  return result;
}
