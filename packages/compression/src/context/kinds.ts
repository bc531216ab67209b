// What kind of output a tool result is, from the command that made it where the call says
// and from its shape otherwise: each kind is shortened so that the names an agent goes on
// to use survive (shorten.ts). A wrong guess costs only a less fitting cut.

import { isNumbered } from "./numbered-lines.ts";

export type OutputKind = "json" | "diff" | "file-view" | "listing" | "log";

/** Programs whose output is one: the first program of the command's last step decides. */
const LISTERS = new Set(["grep", "egrep", "rg", "ag", "find", "ls", "tree", "fd", "git-grep", "git-ls-files"]);
const VIEWERS = new Set(["cat", "nl", "sed", "head", "tail", "less", "more", "bat"]);
const DIFFS = new Set(["git-diff", "git-show", "diff"]);

const GREP_HIT = /^\.?\/?[\w.@+-]+(?:\/[\w.@+-]+)*:\d+[:-]/;
const PATH_LINE = /^\.?\/?[\w.@+-]+(?:\/[\w.@+-]+)*\/?:?$/;
const LS_LONG = /^[dlcbps-][rwxsStT-]{9}[.@+]?\s/;

/** A file a program writes its run to (`build.log`, `pytest.out`, `stderr.err`). */
const LOG_FILE = /\.(?:log|out|err)$/;

/** Only so many lines are read to tell: the kind shows in the first screen. */
const SAMPLE_LINES = 50;

/** The program of a command's last step (`cd /x && grep ...` is grep; `git diff` is git-diff). */
export function programOf(command: string): string | undefined {
  const steps = command.split(/&&|\|\||;|\n/);
  const last =
    steps
      .map((s) => s.trim())
      .filter(Boolean)
      .at(-1) ?? "";
  const words = (last.split("|")[0] ?? "").trim().split(/\s+/);
  let i = 0;
  while (i < words.length && /^(?:\w+=\S*|sudo|timeout|time|env|\d+[smh]?)$/.test(words[i] ?? "")) i++;
  const program = words[i]?.split("/").at(-1);
  if (program === undefined || program === "") return undefined;
  return program === "git" ? `git-${words[i + 1] ?? ""}` : program;
}

function share(lines: string[], test: (l: string) => boolean): number {
  const real = lines.filter((l) => l.trim() !== "");
  return real.length === 0 ? 0 : real.filter(test).length / real.length;
}

export function kindOf(text: string, command?: string): OutputKind {
  const start = text.trimStart()[0];
  const end = text.trimEnd().at(-1);
  if ((start === "{" || start === "[") && (end === "}" || end === "]")) return "json";
  const lines = text.split("\n", SAMPLE_LINES);
  if (/^diff --git |^--- \S/.test(text) || (share(lines, (l) => /^[-+@ ]/.test(l)) > 0.9 && text.includes("\n@@ ")))
    return "diff";
  const program = command === undefined ? undefined : programOf(command);
  if (program !== undefined && DIFFS.has(program)) return "diff";
  // Numbered lines (numbered-lines.ts) are a file view, unless some are a search's hits.
  if (share(lines, isNumbered) >= 0.8 && !lines.some((l) => GREP_HIT.test(l) && !isNumbered(l))) return "file-view";
  // A log file shown whole or in part is a log: its errors matter, not its outline. Not where
  // lines are numbered (`cat -n`, which a read tool's call stands for): that asks for a view.
  if (program !== undefined && VIEWERS.has(program))
    return LOG_FILE.test(viewedFile(command).path ?? "") && !/\bcat\s+-n\b/.test(command ?? "") ? "log" : "file-view";
  if (program !== undefined && LISTERS.has(program)) return "listing";
  if (share(lines, (l) => GREP_HIT.test(l) || PATH_LINE.test(l) || LS_LONG.test(l)) >= 0.8) return "listing";
  return "log";
}

/** The file a viewing command shows and the file line of the view's first line, where the command says. */
export function viewedFile(command: string | undefined): { path?: string; firstLine?: number } {
  if (command === undefined) return {};
  const range = /sed\s+-n\s+['"]?(\d+)\s*,\s*\d+\s*p/.exec(command);
  // `cat -n` and `nl` number the lines themselves (and a file-reading tool's view is
  // written as `cat -n`: @terse/wire-formats' tool-command.ts): its numbers are read, never assumed.
  const firstLine = range ? Number(range[1]) : /^\s*(?:cat(?!\s+-n\b)|head)\b/.test(command) ? 1 : undefined;
  // Relative or absolute (`/testbed/...`, `~/...`): agents' sandboxes name files both ways.
  const path = /(?:^|\s)((?:~?\/)?(?:[\w.@+-]+\/)*[\w@+-]+\.[\w]+)(?=\s|$|\s*\|)/.exec(command)?.[1];
  return { ...(path ? { path } : {}), ...(firstLine !== undefined ? { firstLine } : {}) };
}

/** A command short enough to repeat in a marker, or undefined. */
export function repeatable(command: string | undefined): string | undefined {
  if (command === undefined) return undefined;
  const one = command.trim().replace(/\s+/g, " ");
  return one.length <= 100 && !one.includes("`") ? one : undefined;
}
