import type { ReportedUsage, WireFormatAdapter } from "@terse/wire-formats";

// Reads token usage from a response while it is relayed, JSON or SSE, as its wire
// format's adapter says. Also keeps the text the model produced, for the tokenizer
// estimate when no final count arrives (error, cut, abort).

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
    // The text is for an estimate where no final count comes (an error, a cut, an abort):
    // once one has, it is never read.
    if (this.usage === undefined || this.usage.partial) this.text += this.adapter.text(record);
  }
}
