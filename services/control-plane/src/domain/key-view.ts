import type { ServiceKey } from "@terse/db";

// The two response shapes of spec 2.1. Field order follows the spec's table.

export interface KeyListView {
  id: string;
  key_prefix: string;
  name: string;
  intensity: string;
  auto_compress_input: boolean;
  smart_detect_enabled: boolean;
  context_compress: boolean;
  context_compress_level: string;
  is_active: boolean;
  rate_limit_rpm: number;
  created_at: string;
  last_used_at: string | null;
}

export type KeyCreateView = Omit<KeyListView, "rate_limit_rpm"> & { raw_key: string };

/** List, PATCH and DELETE: never the raw key; rate_limit_rpm shown. */
export function listView(k: ServiceKey): KeyListView {
  return {
    id: k.id,
    key_prefix: k.keyPrefix,
    name: k.name,
    intensity: k.intensity,
    auto_compress_input: k.autoCompressInput,
    smart_detect_enabled: k.smartDetectEnabled,
    context_compress: k.contextCompress,
    context_compress_level: k.contextCompressLevel,
    is_active: k.isActive,
    rate_limit_rpm: k.rateLimitRpm,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
  };
}

/** Create and rotate: the raw key, exactly once, after the id; no rate_limit_rpm (spec 2.1). */
export function createView(k: ServiceKey, rawKey: string): KeyCreateView {
  const { id, rate_limit_rpm: _notShown, ...rest } = listView(k);
  return { id, raw_key: rawKey, ...rest };
}
