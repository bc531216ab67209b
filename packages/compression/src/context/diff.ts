import { shortenLines } from "./log-lines.ts";
import type { CutContext } from "./shorten.ts";
import { omitted } from "./truncate.ts";

// A diff shortened to what it changes: the file names, the hunk headers and the changed
// lines stay, the unchanged context lines go (the agent has the files); if that is still
// long, it is shortened as lines, its headers among what a reader looks for.

export function shortenDiff(text: string, context: CutContext): string {
  const out: string[] = [];
  let unchanged = 0;
  let inHunk = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("diff ") || line.startsWith("--- ") || line.startsWith("+++ ")) inHunk = false;
    if (line.startsWith("@@")) inHunk = true;
    if (inHunk && (line.startsWith(" ") || line === "")) {
      unchanged++;
      continue;
    }
    if (line.startsWith("index ")) continue;
    out.push(line);
  }
  if (unchanged > 0) out.push(omitted(`${unchanged} unchanged context lines`));
  const joined = out.join("\n");
  return joined.length > context.limits.shortenAbove ? shortenLines(joined, context) : joined;
}
