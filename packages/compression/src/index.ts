import { type CompressionSettingsOfKey, compressionSettingsOf } from "@terse/keys/settings";
import { ADAPTERS, commandOutputTexts, isRecord, type RequestFormat, type WireFormat } from "@terse/wire-formats";
import { compressContext, contextWorkChars, forgetContextWork } from "./context/compress-context.ts";
import { compressInputText, forgetInputTexts, inputTextChars } from "./input-compression.ts";
import { type Intensity, instructionFor } from "./instructions.ts";
import { detectIntensity, forgetSignals, signalTextChars } from "./smart-detect.ts";
import { countedTextChars, forgetTokenCounts, sumTokens } from "./tokens.ts";

export { pairingProblems } from "@terse/wire-formats";
export { CONTEXT_LEVELS } from "./context/levels.ts";
export { recallHandleOf } from "./context/recall-handles.ts";
export { compressInputText } from "./input-compression.ts";
export { INSTRUCTIONS, type Intensity, instructionFor } from "./instructions.ts";
export { segment } from "./protected-spans.ts";
export { detectIntensity } from "./smart-detect.ts";
export { countContentTokens, countExactTokens, SPECIAL_TOKENS_AS_TEXT } from "./tokens.ts";

/** A request's wire format (@terse/wire-formats declares the set): how compression reads it. */
export type Provider = WireFormat;
export type { ContextCompressLevel } from "@terse/keys/settings";

/** A key's settings (@terse/keys/settings), and what the request itself decides. */
export interface CompressionSettings extends CompressionSettingsOfKey {
  /** Cuts name a recall handle, and the originals cut are returned (issue 18); off when left out. */
  recall?: boolean;
}

/**
 * The settings of one request: the key's, and whether recall is on for it. Built field by
 * field: `{ ...keySettings, recall }` (a spread, then a field its source lacks) gets a new
 * hidden class from V8 on every call, and every read of such an object then misses its
 * inline caches: compressRequest's reads of the settings cost the proxy some 7 µs a request
 * (docs/benchmarks.md; json.ts withField in @terse/wire-formats says the same).
 */
export function compressionSettings(key: CompressionSettingsOfKey, recall: boolean): CompressionSettings {
  const settings: CompressionSettings = compressionSettingsOf(key);
  settings.recall = recall;
  return settings;
}

export interface CompressionResult {
  /**
   * A new object; the input is not mutated. Read-only: the messages compression changed
   * are shared with the session's later results (a session's last request is kept to
   * continue the next one from, context/trail.ts).
   */
  body: unknown;
  /** null: response compression skipped. */
  intensity: Intensity | null;
  reason: string;
  /**
   * Input tokens of the request as the caller sent it, and as compression returns it
   * (DESIGN.md section 5), by terse's tokenizer (tokens.ts: each text counted once per
   * process, a long one from samples). The returned body is counted part by part; what
   * was sent is that count plus what compression removed, less what it added (the
   * instruction), counted over the parts that differ only, so an unchanged message (most
   * of an agent's history) is counted once, not twice.
   */
  input_tokens_before: number;
  input_tokens_after: number;
  /** With recall on: the original of every tool result cut, by the recall handle its markers name. */
  cuts?: Map<string, string>;
}

/**
 * Characters the library's remembered work holds in this process (forms, session states
 * and trails, token counts, input results, signals): each store is bounded by count and by
 * characters, so this stays under 132 million whatever the traffic (the sum of their bounds). For a gauge.
 */
export function rememberedChars(): number {
  return contextWorkChars() + countedTextChars() + inputTextChars() + signalTextChars();
}

/** Forgets the per-process memory (token counts, compressed results): for benchmarks that replay sessions cold. */
export function forgetRemembered(): void {
  forgetTokenCounts();
  forgetContextWork();
  forgetInputTexts();
  forgetSignals();
}

/** How compression sees each wire format: its adapter's view. */
const viewOf = (format: WireFormat): RequestFormat => ADAPTERS[format].view;

/**
 * The one entry point (DESIGN.md section 5): the data plane, the benchmark and any tool
 * call it the same way. Pure: no I/O, the input is never mutated, and the caller does not
 * mutate it afterwards either (it is kept, read-only, until the session's next request).
 */
export function compressRequest(provider: Provider, body: unknown, settings: CompressionSettings): CompressionResult {
  if (!isRecord(body))
    return { body, intensity: null, reason: "not a JSON object", ...unchangedCounts(provider, body) };
  const format = viewOf(provider);

  const context = settings.context_compress
    ? compressContext(body, settings.context_compress_level, format.toolResults, settings.recall === true)
    : undefined;
  const cuts = context && context.cuts.size > 0 ? context.cuts : undefined;
  const contextBody = context && context.changed > 0 ? context.body : body;
  // Context compression counts what it saved item by item, once per session (an agent
  // resends every changed result each turn); the parts changed after it are counted here.
  const contextSaved = context && context.changed > 0 ? context.tokensSaved : 0;
  // A text-protocol observation is command output, not the user's prose: input compression leaves it alone.
  const isOutput = commandOutputTexts();
  const shortened = settings.auto_compress_input
    ? format.mapPromptTexts(contextBody, (text) => (isOutput(text) ? text : compressInputText(text)))
    : contextBody;
  const contextNote = context && context.changed > 0 ? `; context: ${context.changed} tool results shortened` : "";

  const structured = format.structuredOutput(body);
  if (structured) {
    return {
      body: shortened,
      intensity: null,
      reason: structured + contextNote,
      ...counts(format, contextBody, contextSaved, shortened),
      cuts,
    };
  }

  const choice = settings.smart_detect_enabled
    ? detectIntensity(format.latestUserText(body), settings.intensity)
    : { intensity: settings.intensity, reason: "key setting" };
  const compressed = format.withInstruction(shortened, instructionFor(choice.intensity));
  return {
    body: compressed,
    intensity: choice.intensity,
    reason: choice.reason + contextNote,
    ...counts(format, contextBody, contextSaved, compressed),
    cuts,
  };
}

/**
 * The request's tokens before and after compression: the body returned counted part by
 * part, and before = after + what context compression saved (counted item by item, once
 * per session) + what the parts changed after it saved.
 */
function counts(
  format: RequestFormat,
  contextBody: Record<string, unknown>,
  contextSaved: number,
  returned: Record<string, unknown>,
): Pick<CompressionResult, "input_tokens_before" | "input_tokens_after"> {
  const parts = format.inputParts(returned);
  const after = sumTokens(parts);
  const saved = contextSaved + tokensSaved(format.inputParts(contextBody), parts);
  return { input_tokens_before: after + saved, input_tokens_after: after };
}

/** The counts of a request compression left as it was (a caller falling back to the original counts it so too). */
export function unchangedCounts(
  provider: Provider,
  body: unknown,
): Pick<CompressionResult, "input_tokens_before" | "input_tokens_after"> {
  const tokens = countInputTokens(provider, body);
  return { input_tokens_before: tokens, input_tokens_after: tokens };
}

/**
 * Tokens of the parts only `before` has, less those of the parts only `after` has. Most
 * parts are the same object at the same place on both sides (a whole history, of which
 * only the instruction's slot differs): those are passed over, and only the parts
 * between them are looked for on the other side (a set for many; putting a parsed
 * object in a set first gives it an identity hash, most of the cost when all went in).
 */
function tokensSaved(before: readonly unknown[], after: readonly unknown[]): number {
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start++;
  let end = 0;
  while (
    end < before.length - start &&
    end < after.length - start &&
    before[before.length - 1 - end] === after[after.length - 1 - end]
  ) {
    end++;
  }
  const onlyBefore = before.slice(start, before.length - end);
  const onlyAfter = after.slice(start, after.length - end);
  const inBefore = onlyAfter.length > FEW_PARTS ? new Set(before) : before;
  const inAfter = onlyBefore.length > FEW_PARTS ? new Set(after) : after;
  const has = (parts: ReadonlySet<unknown> | readonly unknown[], p: unknown) =>
    parts instanceof Set ? parts.has(p) : (parts as readonly unknown[]).includes(p);
  return sumTokens(onlyBefore.filter((p) => !has(inAfter, p))) - sumTokens(onlyAfter.filter((p) => !has(inBefore, p)));
}

/** Up to this many differing parts are looked for by a scan of the other side, not in a set. */
const FEW_PARTS = 8;

/** The input tokens of a whole request (estimated as on the hot path): for tools and benchmarks. */
export function countInputTokens(provider: Provider, body: unknown): number {
  return isRecord(body) ? sumTokens(viewOf(provider).inputParts(body)) : 0;
}
