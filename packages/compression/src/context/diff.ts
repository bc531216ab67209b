import type { ContextLimits } from "./levels.ts";
import { shortenLines } from "./log-lines.ts";
import { omitted } from "./truncate.ts";

// A diff shortened to what it changes: the file names, the hunk headers and the changed
// lines stay, the unchanged context lines go (the agent has the files); if that is still
// long, it is shortened as lines, its headers among what a reader looks for.

export function shortenDiff(
  text: string,
  limits: ContextLimits,
  command?: string,
  shown?: ReadonlySet<string>,
): string {
  const out: string[] = [];
  let context = 0;
  let inHunk = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("diff ") || line.startsWith("--- ") || line.startsWith("+++ ")) inHunk = false;
    if (line.startsWith("@@")) inHunk = true;
    if (inHunk && (line.startsWith(" ") || line === "")) {
      context++;
      continue;
    }
    if (line.startsWith("index ")) continue;
    out.push(line);
  }
  if (context > 0) out.push(omitted(`${context} unchanged context lines`));
  const joined = out.join("\n");
  return joined.length > limits.shortenAbove ? shortenLines(joined, limits, command, shown) : joined;
}
