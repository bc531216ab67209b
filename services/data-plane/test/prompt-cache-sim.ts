import { countContentTokens } from "@terse/compression";
import { ADAPTERS, type ReportedUsage } from "@terse/wire-formats";

// A provider's prompt cache, simulated at message granularity, to check terse's estimate
// of the cost without terse against the truth (the same session sent uncompressed through
// the same cache): the savings test and bench/savings.
//
// Anthropic ("marked", as Claude Code marks it: after the system prompt and at the end
// of each request): a request reads the longest marked prefix written before and writes
// the rest. OpenAI ("automatic"): reads the longest prefix shared with an earlier request,
// in 128-token steps from 1,024, and bills the rest as plain input.

/** Tokens a provider counts per message beyond its text (its framing), which terse's tokenizer does not see. */
const FRAMING = 3;

export type SimulatedFormat = "anthropic" | "openai";

export class ProviderCache {
  private readonly written = new Set<string>();

  constructor(private readonly format: SimulatedFormat) {}

  send(body: Record<string, unknown>): ReportedUsage {
    const parts = ADAPTERS[this.format].view.inputParts(body).filter((p) => p !== "");
    const counts = parts.map((p) => countContentTokens(p) + FRAMING);
    const keys: string[] = [];
    let key = "";
    for (const p of parts) {
      key += `${JSON.stringify(p)}\u0000`;
      keys.push(key);
    }
    const input = counts.reduce((a, b) => a + b, 0);
    let read = 0;
    let sum = 0;
    keys.forEach((k, i) => {
      sum += counts[i] as number;
      if (this.written.has(k)) read = sum;
    });
    if (this.format === "anthropic") {
      this.written.add(keys[0] as string);
      this.written.add(keys.at(-1) as string);
      return { input, output: 100, cacheRead: read, cacheWrite: input - read };
    }
    for (const k of keys) this.written.add(k);
    const automatic = read >= 1024 ? read - (read % 128) : 0;
    return { input, output: 100, cacheRead: automatic, cacheWrite: 0 };
  }

  /** The provider dropped its cache (an expiry, another server). */
  forget(): void {
    this.written.clear();
  }
}

/** USD per million tokens of input, by kind. */
export interface InputPrice {
  input: number;
  cached_input: number;
  cache_write: number;
}

/** USD of an input split as the provider bills it. */
export function inputCost(p: InputPrice, input: number, read: number, write: number): number {
  return ((input - read - write) * p.input + read * p.cached_input + write * p.cache_write) / 1e6;
}
