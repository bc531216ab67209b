// The output inside a tool result. Codex CLI reports a command's run in a few lines before
// its output (packages/agent-clis runs it against the fake provider):
//
//   Chunk ID: a848c9                    Exit code: 0
//   Wall time: 0.0000 seconds           Wall time: 0.5 seconds
//   Process exited with code 0          Output:
//   Original token count: 12            <the output>
//   Output:
//   <the output>
//
// Compression shortens the output by its kind and keeps those lines as they are: read as
// part of the output they would hide a JSON answer's shape and shift the line numbers a
// view's cut names (`cat file` starts at line 1 of the output, not of the report).

/** A report line: `Key: value`, or Codex's `Process exited with code N` / `Process running with session ID N`. */
const REPORT_LINE = /^(?:[A-Z][A-Za-z ]{1,30}: \S.*|Process (?:exited with code -?\d+|running with session ID \d+))$/;
/** The line after which the output follows. */
const OUTPUT_FOLLOWS = "Output:";
/** A report is a few lines: a longer run of such lines is the output itself. */
const MAX_REPORT_LINES = 8;

/** A tool result as its report (through the `Output:` line and its newline) and its output; undefined when it has no report. */
export function splitToolOutput(text: string): { report: string; output: string } | undefined {
  let at = 0;
  for (let lines = 0; lines <= MAX_REPORT_LINES; lines++) {
    const nl = text.indexOf("\n", at);
    if (nl < 0) return undefined;
    const line = text.slice(at, nl);
    at = nl + 1;
    if (line === OUTPUT_FOLLOWS) return lines > 0 ? { report: text.slice(0, at), output: text.slice(at) } : undefined;
    if (!REPORT_LINE.test(line)) return undefined;
  }
  return undefined;
}
