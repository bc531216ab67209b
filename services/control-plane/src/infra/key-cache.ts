import { ApiError } from "@terse/errors";
import { randomBytes } from "node:crypto";
import {
  CACHE_GENERATION_KEY,
  CACHE_REWRITE_KEY,
  type CachedKey,
  cacheKeyFor,
  encodeCachedKey,
  recallPatternOf,
} from "@terse/keys";
import { KeyChangeAnnouncer } from "@terse/key-leases";
import type { Redis } from "ioredis";

// The ONLY writer of the Redis key cache (DESIGN.md section 2). The layout belongs to
// @terse/keys, shared with the data plane that reads it. The data plane's processes keep
// copies of the records they use (@terse/key-leases): every write here that changes or
// removes a record returns only once no process can still answer from an older copy.

/** One key's record as the data plane needs it, under the SHA-256 of the raw key. */
export interface CacheEntry {
  keyHash: string;
  value: CachedKey;
}

const SCAN_PATTERN = "svc:key:*";
const SCAN_BATCH = 2_000;

// Stamps the cache complete only if the rewrite this token began is still on record: a
// flush (or failover to a replica that missed it) since then took the marker with it.
const STAMP_SCRIPT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[1])
return 1
`;

interface ScriptedRedis extends Redis {
  terseStamp(rewriteKey: string, generationKey: string, token: string, generation: string): Promise<number>;
}

export interface KeyCacheOptions {
  /** KEY_LEASE_TTL_MS: the longest a proxy process keeps a copy without renewing its lease. */
  leaseTtlMs: number;
  /** Proxy processes fenced for not acknowledging a change in time (logged by the caller). */
  onFenced?(ids: string[]): void;
}

export class KeyCache {
  private readonly redis: ScriptedRedis;
  private readonly announcer: KeyChangeAnnouncer;

  constructor(redis: Redis, options: KeyCacheOptions) {
    redis.defineCommand("terseStamp", { numberOfKeys: 2, lua: STAMP_SCRIPT });
    this.redis = redis as ScriptedRedis;
    this.announcer = new KeyChangeAnnouncer(redis, options);
  }

  /**
   * Writes `put` and removes `remove` in one MULTI, so a rotation swaps the old key for
   * the new one atomically for every reader; then waits until every proxy process has
   * dropped its copies of them. `fresh`: hashes of keys made in this change, which no
   * process can have seen (a create, a rotation's new key): nothing to wait for.
   */
  async apply(change: { put?: CacheEntry[]; remove?: string[]; fresh?: string[] }): Promise<void> {
    const multi = this.redis.multi();
    for (const entry of change.put ?? []) multi.hset(cacheKeyFor(entry.keyHash), encodeCachedKey(entry.value));
    for (const hash of change.remove ?? []) multi.unlink(cacheKeyFor(hash));
    await this.run(async () => {
      const results = await multi.exec();
      const failed = results?.find(([err]) => err !== null);
      if (!results || failed) throw failed?.[0] ?? new Error("MULTI aborted");
    });
    const fresh = new Set(change.fresh);
    const changed = [...(change.put ?? []).map((e) => e.keyHash), ...(change.remove ?? [])].filter(
      (h) => !fresh.has(h),
    );
    await this.run(() => this.announcer.announce(changed));
  }

  /** After a resync: every proxy process drops every copy, whatever the rewrite changed. */
  async announceResync(): Promise<void> {
    await this.run(() => this.announcer.announce("all"));
  }

  /** Resync: many records in one pipeline (no MULTI: a full rewrite needs no atomicity). */
  async putMany(entries: CacheEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const entry of entries) pipeline.hset(cacheKeyFor(entry.keyHash), encodeCachedKey(entry.value));
    await this.run(() => execPipeline(pipeline));
  }

  /** Resync: removes records by their Redis key names (as `cachedKeyNames` yields them). */
  async removeByName(names: string[]): Promise<void> {
    if (names.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (let i = 0; i < names.length; i += 500) pipeline.unlink(...names.slice(i, i + 500));
    await this.run(() => execPipeline(pipeline));
  }

  /**
   * Removes the recall originals kept for an account (its last key was revoked: what it
   * sent through terse goes with it). Returns how many were removed.
   */
  async forgetRecallTexts(accountId: string): Promise<number> {
    let cursor = "0";
    let removed = 0;
    do {
      const [next, names] = await this.run(() =>
        this.redis.scan(cursor, "MATCH", recallPatternOf(accountId), "COUNT", SCAN_BATCH),
      );
      cursor = next;
      if (names.length > 0) removed += await this.run(() => this.redis.unlink(...names));
    } while (cursor !== "0");
    return removed;
  }

  /** The Redis key names of every cached key record, in batches as SCAN returns them. */
  async *cachedKeyNames(): AsyncGenerator<string[]> {
    let cursor = "0";
    do {
      const [next, names] = await this.run(() => this.redis.scan(cursor, "MATCH", SCAN_PATTERN, "COUNT", SCAN_BATCH));
      cursor = next;
      if (names.length > 0) yield names;
    } while (cursor !== "0");
  }

  /** Resync: marks the start of a full rewrite; returns the token `stampGeneration` needs. */
  async beginRewrite(): Promise<string> {
    const token = randomBytes(16).toString("hex");
    await this.run(() => this.redis.set(CACHE_REWRITE_KEY, token));
    return token;
  }

  /**
   * Marks the cache complete; the data plane answers 503 while the stamp is missing.
   * False, with nothing written, when Redis lost the rewrite's marker (and so perhaps
   * some of its records) since `beginRewrite`.
   */
  async stampGeneration(token: string, generation: string): Promise<boolean> {
    const stamped = await this.run(() =>
      this.redis.terseStamp(CACHE_REWRITE_KEY, CACHE_GENERATION_KEY, token, generation),
    );
    return stamped === 1;
  }

  async hasGeneration(): Promise<boolean> {
    return (await this.run(() => this.redis.exists(CACHE_GENERATION_KEY))) === 1;
  }

  /** Any Redis failure is the same answer to the caller: the cache cannot be written. */
  private async run<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (cause) {
      throw new ApiError("auth_cache_unavailable", { cause });
    }
  }
}

async function execPipeline(pipeline: ReturnType<Redis["pipeline"]>): Promise<void> {
  const results = await pipeline.exec();
  const failed = results?.find(([err]) => err !== null);
  if (!results || failed) throw failed?.[0] ?? new Error("pipeline aborted");
}
