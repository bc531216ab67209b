import { countInputTokens } from "@terse/compression";
import type { WireFormat, WireFormatAdapter } from "@terse/wire-formats";

// The terse_recall declaration is input terse adds, like its instruction: it counts
// against what compression saved (the X-Terse-Input-Tokens-* headers, the usage event's
// tokens before compression), so "before" stays what the caller's own request held.

const tokens = new Map<WireFormat, number>();

/** Input tokens the declaration adds to a request of the adapter's format (counted once). */
export function recallToolTokens(adapter: WireFormatAdapter): number {
  let n = tokens.get(adapter.id);
  if (n === undefined) {
    n = countInputTokens(adapter.id, adapter.recall.withTool({})) - countInputTokens(adapter.id, {});
    tokens.set(adapter.id, n);
  }
  return n;
}
