import { endOfText } from "./observation.ts";
import { personsWordsFrom } from "./persons-words.ts";

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
// Claude Code's Bash, where a command failed: `Exit code 3`, then the output.
//
// OpenCode, where it kept only a long output's tail: `...output truncated...`, a blank
// line, `Full output saved to: <file>`, a blank line, the tail. Continue's CLI (1.5, as
// packages/agent-clis captures it) in the same case: `(previous 29001 lines truncated)`, a
// blank line, the tail; and before a file its Read tool shows: `Content of <path>:`.
//
// Gemini CLI (its run_shell_command; 0.61 as the agent-CLI test captures it, and the
// `Command:` / `Directory:` lines of 0.1x-0.2x) starts the output on the report's own line
// and ends with sections of the run, each only where it has something to say; 0.61 wraps
// it, as every output of a command, a fetch or an MCP tool, in `<untrusted_context>` tags:
//
//   <untrusted_context>
//   Output: <the output's first line>
//   <the rest of the output>
//   Exit Code: 1
//   Process Group PGID: 2075
//   </untrusted_context>
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
/** Claude Code's first line of a command that failed (its Bash tool, 2.1.330 as captured), the output on the next. */
const CLAUDE_EXIT = /^Exit code -?\d+\n/;
/** The line after which the output follows. */
const OUTPUT_FOLLOWS = "Output:";
/** A report is a few lines: a longer run of such lines is the output itself. */
const MAX_REPORT_LINES = 8;

/** A tool result in its parts, which join back to it: what the agent put before and after the command's output, and the output. */
export interface ToolOutput {
  report: string;
  output: string;
  trailer: string;
}

/**
 * A tool result split into its report, output and trailer; undefined when it has neither
 * report nor trailer. What a person typed in the output's place, or after it, is part of
 * the trailer (persons-words.ts): kept as sent, as the agent's own lines are.
 */
export function splitToolOutput(text: string): ToolOutput | undefined {
  const parts = agentParts(text);
  const output = parts?.output ?? text;
  const words = personsWordsFrom(output);
  if (words < 0) return parts;
  return {
    report: parts?.report ?? "",
    output: output.slice(0, words),
    trailer: output.slice(words) + (parts?.trailer ?? ""),
  };
}

/** The report and trailer an agent put around the output; undefined when there are none. */
function agentParts(text: string): ToolOutput | undefined {
  if (text.startsWith(UNTRUSTED_OPEN)) return inEnvelope(text);
  const shell = geminiShell(text);
  if (shell !== undefined) return shell;
  const start = reportEnd(text);
  const end = trailerStart(text, start);
  if (start === 0 && end === text.length) return undefined;
  return { report: text.slice(0, start), output: text.slice(start, end), trailer: text.slice(end) };
}

/** Where the output starts: after the report (through the `Output:` line and its newline), or 0. */
function reportEnd(text: string): number {
  if (text.startsWith("Exit code ")) return CLAUDE_EXIT.exec(text)?.[0].length ?? 0;
  if (text.startsWith(OPENCODE_CUT)) return openCodeCutEnd(text);
  if (text.startsWith("(previous ")) return CONTINUE_CUT.exec(text)?.[0].length ?? 0;
  if (text.startsWith("Content of ")) return CONTINUE_READ.exec(text)?.[0].length ?? 0;
  const heading = text.charCodeAt(0) === 0x5b /* [ */ ? (HEADING.exec(text)?.[0].length ?? 0) : 0;
  // Without an `Output:` line after it, a heading is the whole report.
  let at = heading;
  for (let lines = 0; lines <= MAX_REPORT_LINES; lines++) {
    const nl = text.indexOf("\n", at);
    if (nl < 0) return heading;
    const line = text.slice(at, nl);
    at = nl + 1;
    if (line === OUTPUT_FOLLOWS) return lines > 0 || heading > 0 ? at : 0;
    if (!REPORT_LINE.test(line)) return heading;
  }
  return heading;
}

/** OpenCode's note before the part of a long output it kept (the tail), naming the file that holds all of it. */
const OPENCODE_CUT = "...output truncated...\n\nFull output saved to: ";

/** Where the output starts after OpenCode's note: past the file's line and the blank line after it, or 0. */
function openCodeCutEnd(text: string): number {
  const nl = text.indexOf("\n", OPENCODE_CUT.length);
  return nl > 0 && text.charAt(nl + 1) === "\n" ? nl + 2 : 0;
}

/** Continue's CLI: its note before the part of a long output it kept (the tail), and its line before a file read. */
const CONTINUE_CUT = /^\(previous \d+ lines truncated\)\n\n/;
const CONTINUE_READ = /^Content of [^\n]+:\n/;

/** Gemini CLI's envelope of what a tool brought in from outside (its wrapUntrusted). */
const UNTRUSTED_OPEN = "<untrusted_context>\n";
const UNTRUSTED_CLOSE = "\n</untrusted_context>";

/** A text in Gemini CLI's envelope: the envelope's tags are the report's start and the trailer's end. */
function inEnvelope(text: string): ToolOutput | undefined {
  const close = endOfText(text) - UNTRUSTED_CLOSE.length;
  if (close < UNTRUSTED_OPEN.length - 1 || !text.startsWith(UNTRUSTED_CLOSE, close)) return undefined;
  const inner = text.slice(UNTRUSTED_OPEN.length, close);
  // The person's words inside are split off by splitToolOutput, once, from the output found here.
  const parts = agentParts(inner) ?? { report: "", output: inner, trailer: "" };
  return {
    report: UNTRUSTED_OPEN + parts.report,
    output: parts.output,
    trailer: parts.trailer + text.slice(close),
  };
}

/** Gemini CLI's report: the command and directory (before 0.3), then `Output: ` (`Stdout: ` before 0.1x). */
const GEMINI_REPORT = /^(?:Command: [^\n]*\nDirectory: [^\n]*\n)?(?:Output|Stdout): /;
/** Gemini CLI's sections after the output, a line each (its `(empty)` stderr, of 0.1x, among them). */
const GEMINI_SECTION =
  /^(?:Stderr: \(empty\)|Error: .*|Exit Code: .*|Signal: .*|Background PIDs: .*|Process Group PGID: .*)$/;
const GEMINI_SECTIONS = 6;

/** Gemini CLI's shell result in its parts, or undefined for any other text. */
function geminiShell(text: string): ToolOutput | undefined {
  const first = text.charCodeAt(0);
  if (first !== 0x4f /* O */ && first !== 0x43 /* C */ && first !== 0x53 /* S */) return undefined;
  const start = GEMINI_REPORT.exec(text)?.[0].length;
  if (start === undefined) return undefined;
  let end = text.length;
  for (let n = 0; n < GEMINI_SECTIONS; n++) {
    const nl = text.lastIndexOf("\n", end - 1);
    if (nl < start || !GEMINI_SECTION.test(text.slice(nl + 1, end))) break;
    end = nl;
  }
  return { report: text.slice(0, start), output: text.slice(start, end), trailer: text.slice(end) };
}

// What agents put after an output (the trailer), each a few lines at the very end:
// - OpenHands' state after a command: `[The command completed with exit code 0.]`,
//   `[Current working directory: /workspace/x]`, `[Python interpreter: ..]`, `[Command
//   finished with exit code 0]` (or that it timed out), one a line;
// - Claude Code's `<system-reminder>` blocks (after a file it read, one saying to consider
//   whether it is malware), OpenCode's `<bash_metadata>` (a run timed out, cut or aborted);
// - Goose's `Command exited with code N` after a blank line, Continue's `[Status: Command
//   completed]` / `[Status: Command failed with exit code N]`.
// Kept as sent, they neither take the room a cut keeps for the output's last lines nor
// hide a JSON answer's end, and a repeat of the output is found whatever they say.

const TRAILER_LINE =
  /\n\[(?:The command (?:completed with exit code -?\d+\.|timed out after [^\]\n]*)|Current working directory: [^\]\n]*|Python interpreter: [^\]\n]*|Command finished with exit code -?\d+|Status: Command (?:completed|failed with exit code -?\d+))\]\s*$|\n\nCommand exited with code -?\d+\s*$/;
/** Blocks an agent appends, each in tags of its own: Claude Code's reminders, OpenCode's notes on a run. */
const TRAILER_BLOCKS = ["system-reminder", "bash_metadata"].map((tag) => ({ open: `<${tag}>`, close: `</${tag}>` }));

/** Where the trailer starts (the newlines before it included): text.length when there is none; never before `from`. */
function trailerStart(text: string, from: number): number {
  let end = text.length;
  for (;;) {
    const at = trailerPartStart(text, end);
    if (at === undefined || at < from) return end;
    end = at;
  }
}

/** Where the last trailer part of text[0, end) starts, newlines before it included, or undefined. */
function trailerPartStart(text: string, end: number): number | undefined {
  const close = endOfText(text, end);
  for (const block of TRAILER_BLOCKS) {
    if (!text.startsWith(block.close, close - block.close.length)) continue;
    const open = text.lastIndexOf(block.open, close - block.close.length);
    if (open < 0 || (open > 0 && text.charAt(open - 1) !== "\n")) return undefined;
    let at = open;
    while (at > 0 && text.charAt(at - 1) === "\n") at--;
    return at;
  }
  // A trailer line is short: only the end of the text is searched.
  const tail = Math.max(0, end - MAX_TRAILER_LINE);
  const m = TRAILER_LINE.exec(text.slice(tail, end));
  return m ? tail + m.index : undefined;
}
const MAX_TRAILER_LINE = 400;
