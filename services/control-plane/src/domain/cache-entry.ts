import type { Plan, ServiceKey } from "@terse/db";
import type { CacheEntry } from "../infra/key-cache.ts";
import type { ActiveKeyRow } from "../infra/key-store.ts";

/** What the Redis cache holds for an active key: its settings and its account's plan. */
export function cacheEntryOf(key: ServiceKey | ActiveKeyRow, plan: Plan): CacheEntry {
  return {
    keyHash: key.keyHash,
    value: {
      key_id: key.id,
      account_id: key.accountId,
      plan,
      rate_limit_rpm: key.rateLimitRpm,
      intensity: key.intensity,
      auto_compress_input: key.autoCompressInput,
      smart_detect_enabled: key.smartDetectEnabled,
      context_compress: key.contextCompress,
      context_compress_level: key.contextCompressLevel,
    },
  };
}

export const cacheEntryOfRow = (row: ActiveKeyRow): CacheEntry => cacheEntryOf(row, row.plan);
