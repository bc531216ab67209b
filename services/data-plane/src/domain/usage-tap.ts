import type { ReportedUsage, WireFormatAdapter } from "@terse/wire-formats";

// Reads token usage from a response while it is relayed, JSON or SSE, as its wire
// format's adapter says. Also keeps the text the model produced, for the tokenizer
// estimate when no usage arrives (error, abort).

export class UsageTap {
  usage: ReportedUsage | undefined;
  text = "";

  constructor(private readonly adapter: WireFormatAdapter) {}

  /** One JSON value: a whole non-streamed body, or the data of one SSE event. */
  observe(data: unknown): void {
    if (typeof data !== "object" || data === null || Array.isArray(data)) return;
    const record = data as Record<string, unknown>;
    const usage = this.adapter.usage(record, this.usage);
    if (usage) this.usage = usage;
    // The text is only for an estimate when no usage came: once some has, it is never read.
    else if (this.usage === undefined) this.text += this.adapter.text(record);
  }
}
