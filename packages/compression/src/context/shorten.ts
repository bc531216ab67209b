import { shortenJson } from "./json-result.ts";
import type { ContextLimits } from "./levels.ts";
import { shortenLines } from "./log-lines.ts";

/** A shortening that saves less than this share is not worth its markers: the text stays whole. */
const MIN_SAVING = 0.1;
/** A text whose lines start with a line number this often is a file view. */
const FILE_VIEW_SHARE = 0.8;
/** Only so many lines are read to tell: the kind shows in the first screen. */
const FILE_VIEW_SAMPLE_LINES = 50;

/** Numbered lines: `     1→text` (Claude Code Read), `     1\ttext` (str_replace_editor), `1:text` (SWE-agent). */
function isFileView(text: string): boolean {
  const lines = text.split("\n", FILE_VIEW_SAMPLE_LINES);
  const numbered = lines.filter((l) => /^\s*\d+(?:→|\t|:)/.test(l)).length;
  return lines.length >= 5 && numbered >= lines.length * FILE_VIEW_SHARE;
}

/**
 * One long tool result within the level's budget, by its content: JSON by structure,
 * anything else by lines (head, tail, the error lines between). Depends on the text
 * alone, so the same result is always shortened the same way (prefix stability).
 */
export function shortenResult(text: string, limits: ContextLimits): string {
  if (text.length <= limits.shortenAbove) return text;
  if (text.length <= limits.fileViewAbove && isFileView(text)) return text;
  let out = shortenJson(text, limits) ?? text;
  if (out.length > limits.shortenAbove) out = shortenLines(out, limits);
  return out.length <= text.length * (1 - MIN_SAVING) ? out : text;
}
