// Placeholder with the final signature of DESIGN.md section 5, so the data plane can wire
// the hook now. The compression issue replaces the body of compressRequest.

export type Provider = "openai" | "anthropic" | "gemini";
export type Intensity = "lite" | "full" | "ultra";
export type ContextCompressLevel = "conservative" | "standard" | "aggressive";

export interface CompressionSettings {
  intensity: Intensity;
  auto_compress_input: boolean;
  smart_detect_enabled: boolean;
  context_compress: boolean;
  context_compress_level: ContextCompressLevel;
}

export interface CompressionResult {
  /** A new object; the input is not mutated. */
  body: unknown;
  /** null: response compression skipped. */
  intensity: Intensity | null;
  reason: string;
  input_tokens_before: number;
  input_tokens_after: number;
}

export function compressRequest(_provider: Provider, body: unknown, _settings: CompressionSettings): CompressionResult {
  return { body, intensity: null, reason: "not implemented", input_tokens_before: 0, input_tokens_after: 0 };
}
