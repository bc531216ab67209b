import { viewedFile } from "./kinds.ts";
import { afterLineNumber, isNumbered, lineNumberOf } from "./numbered-lines.ts";
import type { CutContext } from "./shorten.ts";
import { cutIndex } from "./span-index.ts";
import { omitted } from "./truncate.ts";

// A file view (cat, nl, sed -n, an editor's view) shortened the way a reader skims code:
// the first and last screen stay, and from the middle the definitions (def, class,
// function, ..., a document's headings) with their line numbers, so the agent knows what is where and can view
// a range again; each cut names its line range and, where the command says which file
// it is, the command that shows it.

const DEFINITION = afterLineNumber(
  String.raw`(?:#{1,4} \S|@\w|(?:(?:export|public|private|protected|internal|static|async|pub|default|abstract|final|override)\s+)*(?:def|class|function|func|fn|interface|struct|impl|enum|trait|type|module|object|sub|macro_rules!)\s+\w)`,
);
/** Definitions are what a view is skimmed for: they may use twice the budget a log's error lines get. */
const DEFINITIONS_SHARE = 2;
/** A kept line longer than this is cut: a definition's name is at its start. */
const LINE_CHARS = 200;

interface ViewLine {
  text: string;
  /** The file's line number, where known. */
  n: number | undefined;
}

function linesOf(text: string, firstLine: number | undefined): ViewLine[] {
  const lines = text.split("\n");
  const part = firstLine === undefined ? partShown(lines) : undefined;
  return lines.map((line, i) => {
    const own = lineNumberOf(line);
    if (own !== undefined) return { text: line, n: own };
    if (part) return { text: line, n: i > part.at ? part.first + i - part.at - 1 : undefined };
    return { text: line, n: firstLine === undefined ? undefined : firstLine + i };
  });
}

/**
 * Gemini CLI's read_file shows a file's lines unnumbered, and a part of a file after a
 * notice that says which lines it is (`Status: Showing lines 2001-4000 of 5000 total
 * lines.`) and a line after which they follow (`--- FILE CONTENT (truncated) ---`): that
 * line's index and the file line of the one after it. An unnumbered view without such a
 * notice gets no numbers: another tool may put a notice of its own before the lines.
 */
function partShown(lines: readonly string[]): { at: number; first: number } | undefined {
  const at = lines.slice(0, PART_NOTICE_LINES).indexOf(PART_FOLLOWS);
  if (at < 0) return undefined;
  for (const line of lines.slice(0, at)) {
    const status = PART_STATUS.exec(line);
    if (status) return { at, first: Number(status[1]) };
  }
  return undefined;
}
const PART_FOLLOWS = "--- FILE CONTENT (truncated) ---";
const PART_STATUS = /^Status: Showing lines (\d+)-\d+ of \d+ total lines\.$/;
/** The notice is a few lines: a file's own line that looks like its end, further down, is no notice. */
const PART_NOTICE_LINES = 8;

/** The first lines of `lines` (from the end when `backward`) that fit `budget` characters. */
function fit(lines: ViewLine[], budget: number, backward = false): number {
  let used = 0;
  let n = 0;
  for (const l of backward ? [...lines].reverse() : lines) {
    used += l.text.length + 1;
    if (used > budget && n > 0) break;
    n++;
  }
  return n;
}

export function shortenFileView(text: string, context: CutContext): string {
  const { limits, command, shown } = context;
  const { path, firstLine } = viewedFile(command);
  const lines = linesOf(text, firstLine);
  const head = fit(lines, limits.keepHead);
  const tail = Math.min(lines.length - head, fit(lines, limits.keepTail, true));
  const middle = lines.slice(head, lines.length - tail);
  const out: string[] = lines.slice(0, head).map((l) => l.text);
  const gone: string[] = [];
  let run: ViewLine[] = [];
  let signatures = 0;
  let said = false;
  const cut = () => {
    if (run.length === 0) return;
    const from = run[0]?.n;
    const to = run.at(-1)?.n;
    const where = from !== undefined && to !== undefined ? `lines ${from}-${to}` : `${run.length} lines`;
    // The first cut says how to view a range again; the others only their range (a few tokens each).
    const marker = omitted(where);
    const again = path && from !== undefined && !said ? `; sed -n ${from},${to}p ${path}` : "";
    said = true;
    out.push(again ? `${marker.slice(0, -1)}${again}]` : marker);
    gone.push(...run.map((l) => l.text));
    run = [];
  };
  for (const l of middle) {
    if (DEFINITION.test(l.text) && signatures + l.text.length <= DEFINITIONS_SHARE * limits.keepSignals) {
      cut();
      const own = isNumbered(l.text) || l.n === undefined ? l.text : `${l.n}: ${l.text}`;
      out.push(own.length > LINE_CHARS ? `${own.slice(0, LINE_CHARS)}…` : own);
      signatures += own.length + 1;
    } else run.push(l);
  }
  cut();
  out.push(...lines.slice(lines.length - tail).map((l) => l.text));
  const index = cutIndex(gone, out, limits.keepNames, shown);
  if (index) out.splice(head, 0, index);
  return out.join("\n");
}
