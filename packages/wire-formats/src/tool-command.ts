import { isRecord } from "./json.ts";

// The shell command a tool call stands for, read from its arguments: what compression
// needs to tell a result's kind and to say in a marker how to see a cut part again
// (packages/compression, context/kinds.ts). A call that runs no command and reads no
// file has none.

/**
 * The command of a tool call's input (an object, or OpenAI's JSON string), if it has one:
 * `command` as a line (Claude Code, OpenHands, SWE-agent, Gemini CLI) or as an argv (Codex
 * CLI's `shell`), or `cmd` (Codex CLI's `exec_command`); and for a call that reads a file
 * without a shell (an editor's `view`, Claude Code's `Read`, Gemini CLI's `read_file`),
 * `cat -n` of that file, the command that shows it as such tools do.
 */
export function commandOf(input: unknown): string | undefined {
  let value = input;
  if (typeof input === "string") {
    try {
      value = JSON.parse(input);
    } catch {
      return undefined;
    }
  }
  if (!isRecord(value)) return undefined;
  const file = readFile(value);
  if (file !== undefined) return `cat -n ${quoted(file)}`;
  const command = value.command ?? value.cmd;
  if (typeof command === "string")
    return EDITOR_VERBS.has(command) && typeof value.path === "string" ? undefined : command;
  return Array.isArray(command) && command.length > 0 && command.every((w) => typeof w === "string")
    ? commandLine(command)
    : undefined;
}

/**
 * An editor tool's verbs (Anthropic's text editor, SWE-agent's and OpenHands'
 * str_replace_editor: `{command: "view", path}`): no shell command, so no marker may offer
 * one to run again. A `view` of a file reads it (readFile).
 */
const EDITOR_VERBS = new Set(["view", "create", "str_replace", "insert", "undo_edit"]);

/**
 * The arguments a file-reading tool may take beside the file (a range: Claude Code's and
 * older Gemini CLIs' `offset` / `limit`, Gemini CLI 0.61's `start_line` / `end_line`): only
 * these, so a search (`path` and `pattern`) or a write (`content`) is none.
 */
const READ_ARGUMENTS = new Set(["file_path", "absolute_path", "offset", "limit", "start_line", "end_line", "pages"]);
const VIEW_ARGUMENTS = new Set(["command", "path", "view_range"]);

/**
 * The file a call reads, if it only reads one: an editor's `view` of a path that names a
 * file (a directory's view is a listing), or a read tool's `file_path` / `absolute_path`
 * with at most a range beside it.
 */
function readFile(args: Record<string, unknown>): string | undefined {
  const keys = Object.keys(args);
  if (args.command === "view" && typeof args.path === "string" && keys.every((k) => VIEW_ARGUMENTS.has(k)))
    return FILE_NAME.test(args.path) ? args.path : undefined;
  const file = args.file_path ?? args.absolute_path;
  return typeof file === "string" && file !== "" && keys.every((k) => READ_ARGUMENTS.has(k)) ? file : undefined;
}

/** A path whose last part has an extension: a file, where a bare name may be a directory. */
const FILE_NAME = /[^/\s]\.\w+$/;

/** `bash -lc`'s script and its kin: what the agent wrote is the script, not the shell around it. */
const SHELL_SCRIPT = /^(?:\/(?:usr\/)?bin\/)?(?:ba|z|da)?sh$/;

/** An argv as the command line it stands for: a shell's script as it is, other words quoted where they need it. */
function commandLine(argv: string[]): string {
  const [program, flag, script] = argv;
  if (argv.length === 3 && SHELL_SCRIPT.test(program as string) && /^-\w*c$/.test(flag as string))
    return script as string;
  return argv.map(quoted).join(" ");
}

/** A word as a shell reads it back: as it is, or single-quoted where it needs to be. */
function quoted(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
