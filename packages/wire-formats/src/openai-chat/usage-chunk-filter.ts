import type { StreamFilter } from "../adapter.ts";

// OpenAI sends a stream's usage only when asked (`stream_options.include_usage`), in one
// extra chunk after the last choice. The proxy asks for it to meter the call; a caller
// who did not ask must not see it. The filter drops that chunk and passes everything
// else on at once, line by line: it recognises the chunk by itself (empty `choices`, a
// `usage` object) from its own data line, so no event waits for the next one to be
// relayed (an upstream that dies before sending the next would take it with it).

export class UsageChunkFilter implements StreamFilter {
  /** The start of a line whose end has not come yet. */
  private partial = "";
  /** Inside the usage chunk's event: its lines up to the blank line that ends it are dropped. */
  private dropping = false;

  /** What of `chunk` to relay now. */
  push(chunk: string): string {
    const text = this.partial + chunk;
    const lastBreak = text.lastIndexOf("\n");
    if (lastBreak < 0) {
      this.partial = text;
      return "";
    }
    this.partial = text.slice(lastBreak + 1);
    return this.filterLines(text.slice(0, lastBreak + 1));
  }

  /** The rest, when the stream ends: a last line without its line break. */
  flush(): string {
    const rest = this.partial;
    this.partial = "";
    return this.dropping ? "" : rest;
  }

  /** `lines`: whole lines, each with its line break. */
  private filterLines(lines: string): string {
    // The common case, with nothing to drop, is passed on without splitting.
    if (!this.dropping && !lines.includes('"usage"')) return lines;
    let out = "";
    let start = 0;
    while (start < lines.length) {
      const end = lines.indexOf("\n", start) + 1;
      const line = lines.slice(start, end);
      start = end;
      if (this.dropping) {
        if (line.trim() === "") this.dropping = false;
        continue;
      }
      if (isUsageOnlyLine(line)) {
        this.dropping = true;
        continue;
      }
      out += line;
    }
    return out;
  }
}

/**
 * Empty choices, as a JSON writer may space them. With usage asked for, every chunk
 * carries `"usage":null`: only a line that also has no choices is worth parsing (the tap
 * parses each event once already; parsing each twice cost 4% of a streamed answer's CPU).
 */
const NO_CHOICES = /"choices"\s*:\s*\[\s*\]/;

function isUsageOnlyLine(line: string): boolean {
  if (!line.startsWith("data:") || !line.includes('"usage"') || !NO_CHOICES.test(line)) return false;
  try {
    return isUsageOnlyChunk(JSON.parse(line.slice(5)));
  } catch {
    return false;
  }
}

/** The chunk OpenAI adds for include_usage: no choices, a usage object. */
export function isUsageOnlyChunk(data: unknown): boolean {
  if (typeof data !== "object" || data === null) return false;
  const d = data as { choices?: unknown[]; usage?: unknown };
  return Array.isArray(d.choices) && d.choices.length === 0 && d.usage != null;
}
