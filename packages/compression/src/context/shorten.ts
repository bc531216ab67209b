import { shortenDiff } from "./diff.ts";
import { shortenFileView } from "./file-view.ts";
import { shortenJson } from "./json-result.ts";
import { kindOf } from "./kinds.ts";
import type { ContextLimits } from "./levels.ts";
import { shortenListing } from "./listing.ts";
import { shortenLines } from "./log-lines.ts";

/** A shortening that saves less than this share is not worth its markers: the text stays whole. */
const MIN_SAVING = 0.1;

/**
 * One long tool result within the level's budget, by its kind (kinds.ts): JSON by
 * structure, a listing keeps every distinct path, a file view its definitions and line
 * numbers, a diff its files, hunk headers and changes, a log or test run its head, tail
 * and error lines. Depends on the text and the command alone, so the same result is
 * always shortened the same way (prefix stability).
 */
export function shortenResult(text: string, limits: ContextLimits, command?: string): string {
  if (text.length <= limits.shortenAbove) return text;
  const kind = kindOf(text, command);
  if (kind === "file-view" && text.length <= limits.fileViewAbove) return text;
  let out: string;
  if (kind === "json") out = shortenJson(text, limits, command) ?? shortenLines(text, limits, command);
  else if (kind === "listing") out = shortenListing(text, limits, command);
  else if (kind === "file-view") out = shortenFileView(text, limits, command);
  else if (kind === "diff") out = shortenDiff(text, limits, command);
  else out = shortenLines(text, limits, command);
  return out.length <= text.length * (1 - MIN_SAVING) ? out : text;
}
