// A service key's compression settings (spec 2.1), spelt once: their values, their
// defaults and their names as the API, the key cache and the compression library take
// them. Plain data with no imports, so the dashboard's browser bundle takes it too
// (`@terse/keys/settings`).

export const INTENSITIES = ["lite", "full", "ultra"] as const;
export type Intensity = (typeof INTENSITIES)[number];

export const CONTEXT_LEVELS = ["conservative", "standard", "aggressive"] as const;
export type ContextCompressLevel = (typeof CONTEXT_LEVELS)[number];

/** What a key's settings decide about compression, by their API names. */
export interface CompressionSettingsOfKey {
  intensity: Intensity;
  auto_compress_input: boolean;
  smart_detect_enabled: boolean;
  context_compress: boolean;
  context_compress_level: ContextCompressLevel;
}

/** Every settable field of a key, by its API name. */
export interface KeySettingsFields extends CompressionSettingsOfKey {
  name: string;
}

/** Spec 2.1 "Default on create": what a key gets for a field the create body leaves out. */
export const KEY_DEFAULTS: Readonly<KeySettingsFields> = {
  name: "Default",
  intensity: "full",
  auto_compress_input: false,
  smart_detect_enabled: true,
  context_compress: false,
  context_compress_level: "standard",
};

/** The compression settings of a key record (the cache's, the API's): the five fields, nothing else. */
export function compressionSettingsOf(k: CompressionSettingsOfKey): CompressionSettingsOfKey {
  return {
    intensity: k.intensity,
    auto_compress_input: k.auto_compress_input,
    smart_detect_enabled: k.smart_detect_enabled,
    context_compress: k.context_compress,
    context_compress_level: k.context_compress_level,
  };
}
