import type { StreamFilter } from "../adapter.ts";
import { SseSplitter } from "../sse.ts";

// Gemini streams in one of two forms: SSE when the caller asks for it (`alt=sse`, as the
// SDKs and Gemini CLI do), otherwise one JSON array whose elements are the chunks, written
// as they come (what a raw REST call gets). terse always asks the upstream for SSE: its
// usage tap and recall relay read events. For a caller who did not ask for SSE this filter
// turns the relayed events back into the array, each chunk written once its event is whole.

const CONTENT_TYPE = "application/json; charset=UTF-8";

export class JsonArrayStream implements StreamFilter {
  readonly contentType = CONTENT_TYPE;
  private opened = false;
  private out = "";
  private readonly events = new SseSplitter((_raw, data) => {
    // Comments, keep-alives and events without JSON data are SSE's framing, not chunks.
    if (data === undefined) return;
    this.out += `${this.opened ? "\r\n," : "["}${JSON.stringify(data)}`;
    this.opened = true;
  });

  /** The chunks of `text`'s whole events, as array elements. */
  push(text: string): string {
    this.events.push(text);
    return this.take();
  }

  /** The last chunks and the array's end (`[]` for a stream without any). */
  flush(): string {
    this.events.flush();
    const end = this.opened ? "\r\n]" : "[]";
    this.opened = true;
    return `${this.take()}${end}`;
  }

  private take(): string {
    const text = this.out;
    this.out = "";
    return text;
  }
}
