import { isRecord } from "./json.ts";

// The shell command a tool call stands for, read from its arguments: what compression
// needs to tell a result's kind and to say in a marker how to see a cut part again
// (packages/compression, context/kinds.ts). A call that runs no command and reads no
// file has none.

/**
 * The command of a tool call's input (an object, or OpenAI's JSON string), if it has one:
 * `command` as a line (Claude Code, OpenHands, SWE-agent, Gemini CLI) or as an argv (Codex
 * CLI's `shell`), `cmd` (Codex CLI's `exec_command`), or the one line of `commands` (Cline's
 * SDK's `run_commands`); and for a call that reads a file
 * without a shell (an editor's `view`, a read tool such as Claude Code's `Read`, Gemini
 * CLI's, Cline's or Zed's `read_file`, OpenCode's `read`), `cat -n` of that file, the
 * command that shows it as such tools do. `name` is the tool's name, where the call gives it.
 */
export function commandOf(input: unknown, name?: string): string | undefined {
  let value = input;
  if (typeof input === "string") {
    try {
      value = JSON.parse(input);
    } catch {
      return undefined;
    }
  }
  if (!isRecord(value)) return undefined;
  const file = (name !== undefined && READ_TOOLS.has(toolWord(name)) ? namedRead(value) : undefined) ?? readFile(value);
  if (file !== undefined) return `cat -n ${quoted(file)}`;
  const command = value.command ?? value.cmd ?? soleCommand(value.commands);
  if (typeof command === "string")
    return EDITOR_VERBS.has(command) && typeof value.path === "string" ? undefined : command;
  return Array.isArray(command) && command.length > 0 && command.every((w) => typeof w === "string")
    ? commandLine(command)
    : undefined;
}

/** The one command of a list of command lines (Cline's SDK, `run_commands`); of several, no one is the result's. */
function soleCommand(commands: unknown): string | undefined {
  return Array.isArray(commands) && commands.length === 1 && typeof commands[0] === "string" ? commands[0] : undefined;
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

/**
 * The tools that read a file, by name (as toolWord gives it): Claude Code's `Read`, Gemini
 * CLI's, Cline's, Zed's, Codex CLI's and Continue's `read_file`, Continue's
 * `read_file_range`, OpenCode's `read`, the MCP filesystem server's `read_text_file`, and
 * `read_files` (Cline 4) of one file. Their names say what their arguments alone cannot: a
 * bare `{path}` is also a listing's (`list_files`) or an outline's.
 */
const READ_TOOLS = new Set(["read", "readfile", "readfiles", "readtextfile", "readfilerange", "viewfile"]);

/** The arguments that name the file a read tool reads, in each agent's spelling. */
const READ_PATHS = ["path", "file_path", "filePath", "filepath", "absolute_path", "target_file", "file"] as const;

/** A tool's name without its server's prefix (`mcp__fs__read_text_file`), case and separators: `readtextfile`. */
function toolWord(name: string): string {
  return (name.split(/__|[./:]/).at(-1) ?? name).toLowerCase().replace(/[-_]/g, "");
}

/**
 * The file a read tool's call reads: the first path argument, or the one entry of a list of
 * files (Roo Code's and Cline 4's `files: [{path, ...}]`; of several, no one file is the
 * result). Its other arguments (a range, a mode, Cline's `task_progress`) do not matter: the
 * tool reads.
 */
function namedRead(args: Record<string, unknown>): string | undefined {
  const files = args.files;
  if (Array.isArray(files)) return files.length === 1 && isRecord(files[0]) ? namedRead(files[0]) : undefined;
  for (const key of READ_PATHS) {
    const file = args[key];
    if (typeof file === "string" && file.trim() !== "") return file;
  }
  return undefined;
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
