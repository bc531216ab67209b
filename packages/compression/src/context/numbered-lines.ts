// How agents' file reads number a file's lines, in one place: the kind of a result
// (kinds.ts) and the line numbers a view's cut names (file-view.ts) both read them.
//
//   `     12→code`   Claude Code's Read
//   `    12\tcode`   cat -n, nl, an editor's view (str_replace_editor), Zed's read_file
//   `12:code`        SWE-agent's open; `12: code` OpenCode's read
//   `  12 | code`    Roo Code's and Kilo Code's read_file, Cline's (3.77 on: unpadded)
//   `00012| code`    OpenCode's read before 1.1.5x
//   `L12: code`      Codex CLI's read_file

/** What follows a line's number, in every form above (which may put `L` before it). */
const AFTER_NUMBER = String.raw`(?:→|\t|:| ?\| )`;

const NUMBERED = new RegExp(String.raw`^\s*L?(\d+)${AFTER_NUMBER}`);

/** The file line number a view's line carries, or undefined. */
export function lineNumberOf(line: string): number | undefined {
  const m = NUMBERED.exec(line);
  return m ? Number(m[1]) : undefined;
}

export function isNumbered(line: string): boolean {
  return NUMBERED.test(line);
}

/**
 * A regular expression for `body` at the start of a line, after its indent and the line's
 * number where it has one. (Shaped as `^\s*(?:number\s*)?body`: an indent matched inside
 * the optional number as well costs every line without one twice the time.)
 */
export function afterLineNumber(body: string): RegExp {
  return new RegExp(String.raw`^\s*(?:L?\d+${AFTER_NUMBER}\s*)?${body}`);
}
