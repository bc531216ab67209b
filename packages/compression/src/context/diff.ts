import { repeatable } from "./kinds.ts";
import { shortenLines } from "./log-lines.ts";
import type { CutContext } from "./shorten.ts";
import { omittedThroughout } from "./truncate.ts";

// A diff shortened to what it changes: the file names, the hunk headers and the changed
// lines stay, the unchanged context lines and the `index` lines go (the agent has the
// files), said by one marker for all of them, which names no lines: they are in every
// hunk, one run per hunk side, and a marker each would cost more than most runs. If that
// is still long, it is shortened as lines, its headers among what a reader looks for.

export function shortenDiff(text: string, context: CutContext): string {
  const out: string[] = [];
  let unchanged = 0;
  let indexLines = 0;
  let inHunk = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("diff ") || line.startsWith("--- ") || line.startsWith("+++ ")) inHunk = false;
    if (line.startsWith("@@")) inHunk = true;
    if (inHunk && (line.startsWith(" ") || line === "")) {
      unchanged++;
      continue;
    }
    if (line.startsWith("index ")) {
      indexLines++;
      continue;
    }
    out.push(line);
  }
  const what = [
    ...(unchanged > 0 ? [`${unchanged} unchanged context lines`] : []),
    ...(indexLines > 0 ? [`${indexLines} \`index\` line${indexLines === 1 ? "" : "s"}`] : []),
  ];
  if (what.length > 0) out.push(omittedThroughout(what.join(" and "), repeatable(context.command)));
  const joined = out.join("\n");
  return joined.length > context.limits.shortenAbove ? shortenLines(joined, context) : joined;
}
