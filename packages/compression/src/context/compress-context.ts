import { createHash } from "node:crypto";
import type { ToolResultMapper } from "../formats/format.ts";
import { CONTEXT_LEVELS, type ContextLevel } from "./levels.ts";
import { truncateResult } from "./truncate.ts";

/**
 * Tier 1 context compression over the tool results of a request, in conversation
 * order. A result identical to an earlier one becomes a short reference to it (the
 * LATER copy is replaced, never the earlier); a very long result is cut to head and
 * tail. The compressed form of a result depends only on it and the results before it,
 * so consecutive requests of one agent session keep sharing their prefix and the
 * provider's prompt cache keeps hitting. Messages are never removed or reordered, so
 * tool-call / tool-result pairing stays as the caller had it.
 */
export function compressContext(
  body: Record<string, unknown>,
  level: ContextLevel,
  mapper: ToolResultMapper,
): { body: Record<string, unknown>; changed: number } {
  const limits = CONTEXT_LEVELS[level];
  const seen = new Map<string, string>();
  let changed = 0;
  const out = mapper(body, (text, ref) => {
    let next = text;
    if (text.length >= limits.dedupeAtLeast) {
      const digest = createHash("sha1").update(text).digest("base64");
      const earlier = seen.get(digest);
      if (earlier !== undefined) {
        next = `[terse: identical to the earlier tool result ${earlier} (${text.length} characters); not repeated]`;
      } else {
        seen.set(digest, ref);
      }
    }
    if (next === text) next = truncateResult(text, limits);
    if (next !== text) changed++;
    return next;
  });
  return { body: out, changed };
}
