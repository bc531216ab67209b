import { shortenDiff } from "./diff.ts";
import { shortenFileView } from "./file-view.ts";
import { shortenJson } from "./json-result.ts";
import { kindOf } from "./kinds.ts";
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
  const { limits, command } = context;
  if (text.length <= limits.shortenAbove) return text;
  const kind = kindOf(text, command);
  if (kind === "file-view" && text.length <= limits.fileViewAbove) return text;
  let out: string;
  if (kind === "json") out = shortenJson(text, context) ?? shortenLines(text, context);
  else if (kind === "listing") out = shortenListing(text, context);
  else if (kind === "file-view") out = shortenFileView(text, context);
  else if (kind === "diff") out = shortenDiff(text, context);
  else out = shortenLines(text, context);
  return out.length <= text.length * (1 - MIN_SAVING) ? out : text;
}
