import type { CompressionSettings } from "../src/index.ts";

/** Context compression alone at `level` (response instruction `full`, smart detect and input compression off). */
export const contextSettings = (level: CompressionSettings["context_compress_level"]): CompressionSettings => ({
  intensity: "full",
  auto_compress_input: false,
  smart_detect_enabled: false,
  context_compress: true,
  context_compress_level: level,
});
