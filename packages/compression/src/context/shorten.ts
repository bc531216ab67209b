import { shortenDiff } from "./diff.ts";
import { shortenFileView } from "./file-view.ts";
import { shortenJson } from "./json-result.ts";
import { kindOf, type OutputKind } from "./kinds.ts";
import type { ContextLimits } from "./levels.ts";
import { shortenListing } from "./listing.ts";
import { shortenLines } from "./log-lines.ts";

/**
 * What a shortening depends on beside the text: the level's limits, the command that made
 * the output (where its call says), and the names the conversation showed before it (no
 * index lists them again).
 */
export interface CutContext {
  limits: ContextLimits;
  command?: string;
  shown?: ReadonlySet<string>;
}

/** A shortening that saves less than this share is not worth its markers: the text stays whole. */
const MIN_SAVING = 0.1;

/**
 * One long tool result within the level's budget, by its kind (kinds.ts): JSON by
 * structure, a listing keeps every distinct path, a file view its definitions and line
 * numbers, a diff its files, hunk headers and changes, a log or test run its head, tail
 * and error lines. Depends on the text and its context alone, so the same result after the
 * same results is always shortened the same way (prefix stability).
 */
export function shortenResult(text: string, context: CutContext): string {
  if (text.length <= context.limits.shortenAbove) return text;
  const out = shortenAs(kindOf(text, context.command), text, context);
  return out !== undefined && out.length <= text.length * (1 - MIN_SAVING) ? out : text;
}

/**
 * `text` shortened as output of its `kind`, or undefined where that kind spares it (a file
 * view the agent will work on). A JSON result whose main string is the output itself (an
 * agent that wraps every output in JSON: Cline's SDK, `{"query", "result"}`; Codex CLI's
 * `{"output", "metadata"}` of old) has that string shortened as output of its own kind.
 */
function shortenAs(kind: OutputKind, text: string, context: CutContext): string | undefined {
  if (kind === "file-view")
    return text.length <= context.limits.fileViewAbove ? undefined : shortenFileView(text, context);
  if (kind === "json")
    return (
      shortenJson(text, context, (main) => shortenAs(kindOf(main, context.command), main, context)) ??
      shortenLines(text, context)
    );
  if (kind === "listing") return shortenListing(text, context);
  if (kind === "diff") return shortenDiff(text, context);
  return shortenLines(text, context);
}
