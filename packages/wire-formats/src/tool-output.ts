// The output inside a tool result. Agents report a command's run in a few lines before
// its output: Codex CLI (as packages/agent-clis sees it against the fake provider),
//
//   Chunk ID: a848c9                    Exit code: 0
//   Wall time: 0.0000 seconds           Wall time: 0.5 seconds
//   Process exited with code 0          Output:
//   Original token count: 12            <the output>
//   Output:
//   <the output>
//
// Cline 3 (its ToolResultUtils: every result starts with the heading line; a file's text,
// or any other tool's output, follows it right away) and Roo Code (its execute_command; a
// failed run's first line says "Command execution was not successful, inspect the cause
// and adjust as needed." where the exit code was, and that follows on a line of its own):
//
//   [execute_command for 'npm test'] Result:     Command executed in terminal  within working directory '/ws'. Exit code: 0
//   Command executed successfully (exit code 0). Output:
//   Output:                                      <the output>
//   <the output>
//
// Compression shortens the output by its kind and keeps those lines as they are: read as
// part of the output they would hide a JSON answer's shape and shift the line numbers a
// view's cut names (`cat file` starts at line 1 of the output, not of the report).

/**
 * A report line: `Key: value`; Codex's `Process exited with code N` / `Process running
 * with session ID N`; Cline's status of a command; Roo Code's.
 */
const REPORT_LINE = new RegExp(
  [
    String.raw`[A-Z][A-Za-z ]{1,30}: \S.*`,
    String.raw`Process (?:exited with code -?\d+|running with session ID \d+)`,
    String.raw`Command (?:executed(?: successfully \(exit code 0\))?|failed with exit code -?\d+|terminated by signal \w+)\.`,
    String.raw`Command executed in (?:terminal {1,2}within working directory )?'.*'\.(?: Exit code: -?\d+| Command execution was not successful, inspect the cause and adjust as needed\.)`,
  ]
    .map((line) => `^(?:${line})$`)
    .join("|"),
);
/** Cline 3's heading of every tool result: the tool and what it was called for (a command may span lines). */
const HEADING = /^\[[a-z_]+(?: for '[\s\S]{0,2000}?')?\] Result:\n/;
/** The line after which the output follows. */
const OUTPUT_FOLLOWS = "Output:";
/** A report is a few lines: a longer run of such lines is the output itself. */
const MAX_REPORT_LINES = 8;

/** A tool result as its report (through the `Output:` line and its newline) and its output; undefined when it has no report. */
export function splitToolOutput(text: string): { report: string; output: string } | undefined {
  const heading = text.charCodeAt(0) === 0x5b /* [ */ ? (HEADING.exec(text)?.[0].length ?? 0) : 0;
  // Without an `Output:` line after it, a heading is the whole report.
  const headed = heading > 0 ? { report: text.slice(0, heading), output: text.slice(heading) } : undefined;
  let at = heading;
  for (let lines = 0; lines <= MAX_REPORT_LINES; lines++) {
    const nl = text.indexOf("\n", at);
    if (nl < 0) return headed;
    const line = text.slice(at, nl);
    at = nl + 1;
    if (line === OUTPUT_FOLLOWS)
      return lines > 0 || heading > 0 ? { report: text.slice(0, at), output: text.slice(at) } : undefined;
    if (!REPORT_LINE.test(line)) return headed;
  }
  return headed;
}
