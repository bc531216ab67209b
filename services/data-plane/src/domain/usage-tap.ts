import type { Provider } from "@terse/usage-events";

// Reads token usage from a response while it is relayed, for all three wire formats,
// JSON and SSE. Also keeps the text the model produced, for the tokenizer estimate when
// no usage arrives (error, abort).

export interface TappedUsage {
  input: number;
  output: number;
}

/** Usage object of one parsed JSON body or SSE event, by provider. Undefined if none. */
function usageOf(
  provider: Provider,
  data: Record<string, unknown>,
  seen: TappedUsage | undefined,
): TappedUsage | undefined {
  if (provider === "openai") {
    const u = data.usage as { prompt_tokens?: number; completion_tokens?: number } | null | undefined;
    return u ? { input: u.prompt_tokens ?? 0, output: u.completion_tokens ?? 0 } : undefined;
  }
  if (provider === "anthropic") {
    // Input is billed in three parts; message_start carries them, message_delta the output.
    const u = ((data.message as { usage?: unknown } | undefined)?.usage ?? data.usage) as
      | {
          input_tokens?: number;
          output_tokens?: number;
          cache_creation_input_tokens?: number;
          cache_read_input_tokens?: number;
        }
      | undefined;
    if (!u) return undefined;
    const input = (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
    // message_delta's counts are cumulative, the final word: newer streams repeat the
    // input there (it can differ from message_start's, e.g. after a fallback); older
    // ones carry only output_tokens, and the input stays message_start's.
    if (data.type === "message_delta" && u.input_tokens === undefined) {
      return { input: seen?.input ?? 0, output: u.output_tokens ?? 0 };
    }
    return { input, output: u.output_tokens ?? 0 };
  }
  const m = data.usageMetadata as
    | { promptTokenCount?: number; candidatesTokenCount?: number; thoughtsTokenCount?: number }
    | undefined;
  return m
    ? { input: m.promptTokenCount ?? 0, output: (m.candidatesTokenCount ?? 0) + (m.thoughtsTokenCount ?? 0) }
    : undefined;
}

/** Text the model produced in one parsed body or event. */
function textOf(provider: Provider, data: Record<string, unknown>): string {
  if (provider === "openai") {
    const choices =
      (data.choices as { delta?: { content?: string }; message?: { content?: string } }[] | undefined) ?? [];
    return choices.map((c) => c.delta?.content ?? c.message?.content ?? "").join("");
  }
  if (provider === "anthropic") {
    const delta = data.delta as { text?: string; partial_json?: string } | undefined;
    if (delta) return delta.text ?? delta.partial_json ?? "";
    const content = (data.content as { text?: string }[] | undefined) ?? [];
    return content.map((b) => b.text ?? "").join("");
  }
  const candidates = (data.candidates as { content?: { parts?: { text?: string }[] } }[] | undefined) ?? [];
  return candidates
    .flatMap((c) => c.content?.parts ?? [])
    .map((p) => p.text ?? "")
    .join("");
}

export class UsageTap {
  usage: TappedUsage | undefined;
  text = "";

  constructor(private readonly provider: Provider) {}

  /** One JSON value: a whole non-streamed body, or the data of one SSE event. */
  observe(data: unknown): void {
    if (typeof data !== "object" || data === null) return;
    const record = data as Record<string, unknown>;
    const usage = usageOf(this.provider, record, this.usage);
    if (usage) this.usage = usage;
    this.text += textOf(this.provider, record);
  }
}

/**
 * Splits an SSE byte stream into events without holding more than one partial event.
 * `onEvent` gets the raw event text (with its terminating blank line) and its parsed
 * `data:` JSON, if any.
 */
export class SseSplitter {
  private pending = "";

  constructor(private readonly onEvent: (raw: string, data: unknown) => void) {}

  push(chunk: string): void {
    this.pending += chunk;
    for (;;) {
      const end = findEventEnd(this.pending);
      if (end < 0) return;
      const raw = this.pending.slice(0, end.valueOf());
      this.pending = this.pending.slice(end.valueOf());
      this.onEvent(raw, parseData(raw));
    }
  }

  /** What is left when the stream ends (an unterminated last event). */
  flush(): string {
    const rest = this.pending;
    this.pending = "";
    if (rest) this.onEvent(rest, parseData(rest));
    return rest;
  }
}

function findEventEnd(s: string): number {
  const lf = s.indexOf("\n\n");
  const crlf = s.indexOf("\r\n\r\n");
  if (lf < 0 && crlf < 0) return -1;
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return crlf + 4;
  return lf + 2;
}

function parseData(raw: string): unknown {
  let data = "";
  for (const line of raw.split(/\r?\n/)) {
    if (line.startsWith("data:")) data += line.slice(line[5] === " " ? 6 : 5);
  }
  if (!data || data === "[DONE]") return undefined;
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}
