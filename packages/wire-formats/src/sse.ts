// Server-sent events (the WHATWG format every provider streams in), split as they arrive.

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

/** The event's `data:` lines joined, parsed as JSON. Read in place: a split per event cost more than the parse of a short one. */
function parseData(raw: string): unknown {
  let data = "";
  for (let at = 0; at < raw.length; ) {
    const nl = raw.indexOf("\n", at);
    const end = nl < 0 ? raw.length : nl;
    if (raw.startsWith("data:", at)) {
      const lineEnd = end > at && raw.charCodeAt(end - 1) === 13 ? end - 1 : end;
      data += raw.slice(at + (raw.charCodeAt(at + 5) === 32 ? 6 : 5), lineEnd);
    }
    at = end + 1;
  }
  if (!data || data === "[DONE]") return undefined;
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}
