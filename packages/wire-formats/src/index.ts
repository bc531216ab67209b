import type { IncomingHttpHeaders } from "node:http";
import type { Operation, WireFormat, WireFormatAdapter } from "./adapter.ts";
import { anthropicMessages } from "./anthropic-messages/index.ts";
import { gemini } from "./gemini/index.ts";
import { openaiChat } from "./openai-chat/index.ts";
import { openaiResponses } from "./openai-responses/index.ts";
import type { PairingCheck } from "./request-view.ts";

export * from "./adapter.ts";
export { holdsEncodedData } from "./encoded-data.ts";
export { isRecord } from "./json.ts";
export { commandOutputTexts, ObservationReader, splitObservation } from "./observation.ts";
export { isUsageOnlyChunk, UsageChunkFilter } from "./openai-chat/usage-chunk-filter.ts";
export * from "./recall.ts";
export {
  type PairingCheck,
  type RequestFormat,
  type ResultTransform,
  TERSE_INSTRUCTION_TAG,
  type ToolResultMapper,
} from "./request-view.ts";
export { SseSplitter } from "./sse.ts";
export { splitToolOutput } from "./tool-output.ts";

/** Every wire format terse serves: a new one is a new adapter and one line here. */
export const ADAPTERS: Readonly<Record<WireFormat, WireFormatAdapter>> = {
  openai: openaiChat,
  anthropic: anthropicMessages,
  gemini,
  "openai-responses": openaiResponses,
};

/**
 * The order routes are tried in. Paths are each format's own but one: `GET /v1/models`,
 * which Anthropic claims when the request says `anthropic-version`, Gemini when it
 * carries a Gemini key (`x-goog-api-key`, as @google/genai sends), and OpenAI takes
 * whatever is left, so it comes last.
 */
const ROUTING_ORDER: readonly WireFormat[] = ["anthropic", "gemini", "openai-responses", "openai"];
const ordered = ROUTING_ORDER.map((id) => ADAPTERS[id]);

/** Each format's tool-call pairing rules, by format (for the benchmark and tests). */
export const pairingProblems = Object.fromEntries(
  Object.entries(ADAPTERS).map(([id, adapter]) => [id, adapter.pairing]),
) as Readonly<Record<WireFormat, PairingCheck>>;

export interface Resolved {
  adapter: WireFormatAdapter;
  op: Operation;
}

/**
 * The adapter and operation a request names, or null for a path no format serves.
 * The method is not part of the match: a known path asked with another method is a 405.
 */
export function resolveOperation(path: string, headers: IncomingHttpHeaders): Resolved | null {
  for (const adapter of ordered) {
    const op = adapter.route(path, headers);
    if (op) return { adapter, op };
  }
  return null;
}
