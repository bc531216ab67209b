import { personsWordsFrom } from "./persons-words.ts";
import { commandOf } from "./tool-command.ts";

// Agents without native tool calls (mini-swe-agent, SWE-agent's text modes, Aider) send a
// command's output back as a plain user message. terse compresses such an observation as
// it compresses a tool result, and nothing else a user message holds: what a person typed
// stays as typed. So an observation is recognised by a strict shape only: the whole
// message is one agent's template around the output, nothing before or after it (nor
// another text beside it, where the message is a list of texts: Cline's result, whose
// parts are texts of their own, is the one template among other texts), and
// (where the agent's protocol has actions) it answers the action of the assistant message
// before it. A person who pastes such text as the first message, or after an answer
// without a command, is left alone. The shapes, from each agent's own templates:
// - mini-swe-agent: `<returncode>N</returncode>` then the output in `<output>` tags (or the
//   agent's own cut of a long one: `<warning>`, `<output_head>`, `<elided_chars>`,
//   `<output_tail>`), after 2.x's `<exception>` line where the command failed to run; and
//   1.x's timeout notice, which names the command it answers.
// - SWE-agent, thought-action and XML modes: the output then `(Open file: ..)`,
//   `(Current directory: ..)` (and `(Interactive session: ..)` for CTFs) and `bash-$` (0.x,
//   and the 0.7 configs of 1.x); `OBSERVATION:` then the output (1.x); the output in
//   `<observation>` tags, or the agent's cut of a long one (`bash_only`); the default
//   template's clipped output (`Observation: ..<response clipped><NOTE>..`).
// - Aider: `/run` and `/test` output ("I ran this command: .. And got this output: .."),
//   which names its command and answers no action; and the output of shell commands an
//   answer suggested ("Output from <command>"), its command one of that answer's.
// - OpenHands without native function calls (its fn_call_converter): "EXECUTION RESULT of
//   [tool]:" then the output, answering a `<function=tool>` call of that tool.
// - Cline, Roo Code and Kilo Code in their XML tool protocol: the heading `[tool for '..']
//   Result:` in a text block of its own and the output in the next (their pushToolResult),
//   or both in one text where a provider's conversion joined them, before the
//   `<environment_details>` block they add to every message; answering the `<tool>` call of
//   the assistant message before (`<read_file>\n<path>a.ts</path>\n</read_file>`). A result
//   that is the person's words (a denied call, with the feedback they typed) is none, and
//   their feedback after a running command's output so far is no part of the output.
// What the agents send that holds no command output (format errors, "ran successfully and
// did not produce any output") is no observation here: there is nothing in it to compress.

/** An observation's parts: the agent's text before and after the output, and the output; they join back to the message. */
export interface Observation {
  open: string;
  output: string;
  close: string;
  /** The command as the message itself names it, where it does. */
  command?: string;
  /** The tool whose call the message answers, where it names one (OpenHands). */
  tool?: string;
  /** Whether the message is an observation only as the answer to an assistant's action. */
  needsAction: boolean;
  /** Whether the output is the next text of the message, this one its heading alone (Cline's XML protocol). */
  outputFollows: boolean;
  /**
   * Whether the template stands among other texts of its message (Cline's XML protocol:
   * the heading, the output and the environment details are texts of their own); every
   * other template is the message's only text.
   */
  amongTexts: boolean;
}

/**
 * The parts of a message that has the shape of an observation, else undefined. Whether it
 * answers the action before it is for `answers` to say.
 */
export function splitObservation(text: string): Observation | undefined {
  // Each shape is told by its first or last characters before any expression runs: this is
  // called on every user message of every request.
  return byStart(text) ?? sweAgentPrompt(text);
}

function byStart(text: string): Observation | undefined {
  switch (text.charCodeAt(0)) {
    case 0x3c /* < */:
      return text.startsWith("<returncode>") || text.startsWith("<exception>")
        ? match(MINI, text, true)
        : text.startsWith("<observation>\n")
          ? match(SWE_TAGGED, text, true)
          : text.startsWith(SWE_TOO_LONG)
            ? match(SWE_TAGGED_CUT, text, true)
            : undefined;
    case 0x54 /* T */:
      return text.startsWith("The last command <command>") ? match(MINI_TIMEOUT, text, true) : undefined;
    case 0x4f /* O */:
      if (text.startsWith(SWE_OBSERVATION)) return split(text, SWE_OBSERVATION.length, text.length, true);
      if (text.startsWith("Observation: ")) return match(SWE_CLIPPED, text, true);
      return text.startsWith("Output from ") ? headed(AIDER_SHELL, text, true) : undefined;
    case 0x49 /* I */:
      return text.startsWith("I ran this command:\n\n") ? headed(AIDER_RUN, text, false) : undefined;
    case 0x45 /* E */:
      return text.startsWith("EXECUTION RESULT of [") ? openHands(text) : undefined;
    case 0x5b /* [ */:
      return xmlToolResult(text);
  }
  return undefined;
}

/**
 * Reads a user message's texts in order, each as splitObservation does, but for the text
 * right after an XML-protocol tool's heading (Cline's: the output in a text of its own):
 * that text is all the tool's output, read as the heading's observation. A template of one
 * text is an observation only as the message's only text: beside it, a person's words
 * say the message is theirs.
 */
export class ObservationReader {
  private heading: Observation | undefined;
  /** Whether the message read holds one text (true where the caller does not say: each text read for itself). */
  private soleText = true;

  /** A user message starts, holding `texts` texts. */
  message(texts: number): void {
    this.heading = undefined;
    this.soleText = texts === 1;
  }

  read(text: string): Observation | undefined {
    const heading = this.heading;
    this.heading = undefined;
    if (heading !== undefined) return xmlToolOutput(text, 0, text.length, heading.tool);
    const o = splitObservation(text);
    if (o === undefined || (!o.amongTexts && !this.soleText)) return undefined;
    if (o.outputFollows) this.heading = o;
    return o;
  }

  /** The next text follows no heading: a message ended, or a heading answered nothing. */
  reset(): void {
    this.heading = undefined;
  }
}

/**
 * A test over the texts of a request's user messages, taken in order: whether each has an
 * observation's shape or follows an XML-protocol tool's heading. What input compression
 * leaves as sent: command output is not a person's prose.
 */
export function commandOutputTexts(): (text: string) => boolean {
  const reader = new ObservationReader();
  return (text) => reader.read(text) !== undefined;
}

/**
 * Whether observation `o` answers the assistant message before it, given that message's
 * action (undefined where it has none). A message that names its command must name the
 * action's, or (Aider's shell output) a line of one of its blocks; one that names a tool,
 * the action's tool; a message that needs no action answers whatever came before.
 */
export function answers(o: Observation, action: TextAction | undefined): boolean {
  if (!o.needsAction) return true;
  if (action === undefined) return false;
  if (o.tool !== undefined && o.tool !== action.tool) return false;
  if (o.command === undefined) return true;
  const named = o.command.trim();
  return named === action.command || action.blocks.some((b) => b.split("\n").some((line) => line.trim() === named));
}

/**
 * Whether a user message, given its texts, is an observation (a text of it holds output),
 * given the text of the assistant message right before it (undefined where there is none):
 * the same test the request walkers make.
 */
export function isObservationAfter(texts: readonly string[], before: string | undefined): boolean {
  const action = before === undefined ? undefined : actionOf(before);
  const reader = new ObservationReader();
  reader.message(texts.length);
  return texts.some((text) => {
    const o = reader.read(text);
    return o !== undefined && !o.outputFollows && answers(o, action);
  });
}

// Each shape as one expression over the whole message, with its output as the group
// `out` and the command it names, if any, as `cmd` (the `d` flag gives their offsets).

/** mini-swe-agent 1.x and 2.x (text-based configs). */
const MINI =
  /^(?:<exception>[\s\S]*?<\/exception>\n)?<returncode>-?\d{1,3}<\/returncode>\n(?:<warning>\n[^<]*<\/warning>)?(?:<output>\n|<output_head>\n)(?<out>[\s\S]*?)(?:\n?<\/output>|\n?<\/output_tail>)\s*$/d;

/** mini-swe-agent 1.x's notice of a command that timed out (its default `timeout_template`). */
const MINI_TIMEOUT =
  /^The last command <command>(?<cmd>[\s\S]*?)<\/command> timed out and has been killed\.\nThe output of the command was:\n <output>\n(?<out>[\s\S]*)\n<\/output>\nPlease try another command and make sure to avoid those requiring interactive input\.\s*$/d;

/** SWE-agent 1.x (`next_step_template` of its thought-action configs): all after it is output. */
const SWE_OBSERVATION = "OBSERVATION:\n";

/** SWE-agent's default `next_step_truncated_observation_template`. */
const SWE_CLIPPED =
  /^Observation: (?<out>[\s\S]*)<response clipped><NOTE>Observations should not exceeded \d+ characters\. \d+ characters were elided\. Please try a different command that produces less output or use head\/tail\/grep\/redirect the output to a file\. Do not use interactive pagers\.<\/NOTE>\s*$/d;

/** SWE-agent's `bash_only` config, and its cut of a long output. */
const SWE_TAGGED = /^<observation>\n(?<out>[\s\S]*)\n<\/observation>\s*$/d;
const SWE_TOO_LONG = "<warning>\nThe output of your last command was too long.\n";
const SWE_TAGGED_CUT =
  /^<warning>\nThe output of your last command was too long\.\n[^<]*<\/warning>\n\n<observation_head>\n(?<out>[\s\S]*)\n<\/observation_tail>\s*$/d;

// Aider's messages, by their heading (the command the group `cmd`); the output runs from
// there to the message's last line end.

/** Aider's `/run` and `/test` output (its `run_output` prompt). */
const AIDER_RUN = /^I ran this command:\n\n(?<cmd>[^\n]+)\n\nAnd got this output:\n\n/;

/** Aider's output of the shell commands an answer suggested, one `Output from` block each. */
const AIDER_SHELL = /^Output from (?<cmd>[^\n]+)\n/;

function headed(heading: RegExp, text: string, needsAction: boolean): Observation | undefined {
  const m = heading.exec(text);
  const command = m?.groups?.cmd;
  if (!m || command === undefined) return undefined;
  // The heading's own line ends are not the output's (an empty output leaves only them).
  const end = Math.max(endOfText(text), m[0].length);
  if (!text.includes("\n", end)) return undefined;
  return split(text, m[0].length, end, needsAction, command);
}

/** Where text[0, end) ends but for its trailing white space. */
export function endOfText(text: string, end = text.length): number {
  let at = end;
  while (at > 0 && /\s/.test(text.charAt(at - 1))) at--;
  return at;
}

/** OpenHands' tool result as a user message: all after the heading is output. */
const OPENHANDS = /^EXECUTION RESULT of \[(?<tool>[^\]\n]+)\]:\n/;

function openHands(text: string): Observation | undefined {
  const m = OPENHANDS.exec(text);
  const tool = m?.groups?.tool;
  if (!m || tool === undefined) return undefined;
  return split(text, m[0].length, text.length, true, undefined, tool);
}

/**
 * Cline's heading of a tool's result (its toolDescription): the tool, and what it was called
 * for, quoted (a command may span lines) or not (Roo Code's `for 3 files`), or nothing.
 * Their tools' names all have an underscore, as the calls actionOf reads do.
 */
const XML_TOOL_HEADING =
  /^\[(?<tool>[a-z]+(?:_[a-z]+)+)(?: for (?:'[\s\S]{0,2000}?'|[^'\]\n][^\]\n]{0,200}))?\] Result:(?:\n|$)/;
/** What Cline and Roo Code add to every user message, after the tool's result. */
const ENVIRONMENT_DETAILS = "<environment_details>";
const ENVIRONMENT_DETAILS_END = "</environment_details>";

function xmlToolResult(text: string): Observation | undefined {
  const m = XML_TOOL_HEADING.exec(text);
  const tool = m?.groups?.tool;
  if (!m || tool === undefined) return undefined;
  const start = m[0].length;
  // The heading's own block (exactly the heading: pushToolResult's first text).
  if (start === text.length && !text.endsWith("\n"))
    return split(text, start, start, true, undefined, tool, true, true);
  let end = text.length;
  if (text.endsWith(ENVIRONMENT_DETAILS_END, endOfText(text))) {
    const details = text.lastIndexOf(ENVIRONMENT_DETAILS);
    if (details >= start && (details === start || text.charAt(details - 1) === "\n")) {
      end = details;
      while (end > start && text.charAt(end - 1) === "\n") end--;
    }
  }
  return xmlToolOutput(text, start, end, tool);
}

/**
 * The output of an XML-protocol tool's result, text[start, end), as an observation: none
 * where the result is the person's words (a denied call's feedback, under the heading of a
 * command that never ran), and only up to their words where they follow the output
 * (persons-words.ts).
 */
function xmlToolOutput(text: string, start: number, end: number, tool: string | undefined): Observation | undefined {
  const words = personsWordsFrom(text, start);
  if (words === start) return undefined;
  return split(text, start, words >= 0 && words < end ? words : end, true, undefined, tool, false, true);
}

/** SWE-agent 0.x and its 0.7 configs: the output, then the shell's state (and, for CTFs, its interactive session) and prompt. */
const SWE_PROMPT_TAIL =
  /^\n\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)(?:\n\(Interactive session: [^\n]*\))?\nbash-\$\s*$/;

function sweAgentPrompt(text: string): Observation | undefined {
  if (!text.endsWith("\nbash-$", endOfText(text))) return undefined;
  const at = text.lastIndexOf("\n(Open file: ");
  if (at < 0 || !SWE_PROMPT_TAIL.test(text.slice(at))) return undefined;
  return split(text, 0, at, true);
}

function match(shape: RegExp, text: string, needsAction: boolean): Observation | undefined {
  const m = shape.exec(text);
  const at = m?.indices?.groups?.out;
  if (!m || !at) return undefined;
  return split(text, at[0], at[1], needsAction, m.groups?.cmd);
}

/**
 * An observation of `text` whose output runs from `start` to `end`. Every shape builds it
 * here, all fields present in one order: built as a spread plus fields, each came out of
 * V8 with a hidden class of its own, and every read of it later missed its inline caches
 * (json.ts withField).
 */
function split(
  text: string,
  start: number,
  end: number,
  needsAction: boolean,
  command?: string,
  tool?: string,
  outputFollows = false,
  amongTexts = false,
): Observation {
  return {
    open: text.slice(0, start),
    output: text.slice(start, end),
    close: text.slice(end),
    command,
    tool,
    needsAction,
    outputFollows,
    amongTexts,
  };
}

/** The action of an assistant message in a text protocol. */
export interface TextAction {
  /** Its command: the last command block, trimmed. */
  command: string;
  /** Every command block of the message, in the order they end. */
  blocks: readonly string[];
  /** The tool, where the last block is a `<function=tool>` call. */
  tool?: string;
  /**
   * The shell command the action stands for (tool-command.ts): the last block's, or a
   * `<function=tool>` call's as its parameters give it (an editor's `view` of a file is
   * `cat -n` of it; its other verbs, and a call without a command, have none).
   */
  shell?: string;
}

const FENCE = /```[\w.+-]*[ \t]*\n([\s\S]*?)\n?```/g;
const COMMAND_TAG = /<(command|mswea_bash_command)>([\s\S]*?)<\/\1>/g;
const FUNCTION_CALL = /<function=([^>\n]+)>\n([\s\S]*?)<\/function>/g;
const PARAMETER = /<parameter=([\w-]+)>([\s\S]*?)<\/parameter>/g;
/** Cline's and Roo Code's XML tool call: `<tool_name>`, its parameters as tags, `</tool_name>`. */
const XML_CALL = /<([a-z]+(?:_[a-z]+)+)>(\s*<[a-z]+(?:_[a-z]+)*>[\s\S]*?)<\/\1>/g;
const XML_PARAMETER = /<([a-z]+(?:_[a-z]+)*)>([\s\S]*?)<\/\1>/g;

/**
 * The action of an agent's message, or undefined: its command blocks are fenced code
 * blocks (any info string: ```bash, mini-swe-agent 2.x's ```mswea_bash_command, SWE-agent's
 * bare ```), the `<command>` / `<mswea_bash_command>` tags of XML protocols, and the
 * `<function=tool>` calls of OpenHands' and the `<tool_name>` calls of Cline's and Roo
 * Code's (whose command is their `command` parameter, as a native call's is); the last to
 * end is the action the next user message answers.
 */
export function actionOf(text: string): TextAction | undefined {
  const found: { end: number; body: string; tool?: string; args?: Record<string, unknown> }[] = [];
  for (const m of text.matchAll(FENCE)) found.push({ end: m.index + m[0].length, body: m[1] ?? "" });
  if (text.includes("</command>") || text.includes("</mswea_bash_command>"))
    for (const m of text.matchAll(COMMAND_TAG)) found.push({ end: m.index + m[0].length, body: m[2] ?? "" });
  if (text.includes("</function>"))
    for (const m of text.matchAll(FUNCTION_CALL)) {
      const call = m[2] ?? "";
      const args = parametersOf(call);
      found.push({ end: m.index + m[0].length, body: args.command ?? call, tool: m[1], args });
    }
  if (text.includes("</"))
    for (const m of text.matchAll(XML_CALL)) {
      const call = m[2] ?? "";
      const args = xmlParametersOf(call);
      const body = typeof args.command === "string" ? args.command : call;
      found.push({ end: m.index + m[0].length, body, tool: m[1], args });
    }
  if (found.length === 0) return undefined;
  found.sort((a, b) => a.end - b.end);
  const last = found[found.length - 1] as (typeof found)[number];
  const command = last.body.trim();
  // A call without a command (OpenHands' `think`, `finish`) is still an action of its tool.
  if (command === "" && last.tool === undefined) return undefined;
  const shell = last.args === undefined ? command : commandOf(last.args, last.tool);
  return {
    command,
    blocks: found.map((f) => f.body),
    ...(last.tool === undefined ? {} : { tool: last.tool }),
    ...(shell ? { shell } : {}),
  };
}

/**
 * An XML call's parameters, trimmed (a repeated one: its first). Roo Code's read of files
 * (`<args><file><path>a.ts</path></file>..</args>`) becomes `files`, as its native call has it.
 */
function xmlParametersOf(call: string): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const m of call.matchAll(XML_PARAMETER)) args[m[1] as string] ??= (m[2] as string).trim();
  if (typeof args.args === "string" && args.args.includes("</file>"))
    args.files = [...args.args.matchAll(/<file>([\s\S]*?)<\/file>/g)].map((f) => xmlParametersOf(f[1] as string));
  return args;
}

/** A `<function=tool>` call's parameters, trimmed, as the tool call's arguments would be (a repeated one: its first). */
function parametersOf(call: string): Record<string, string> {
  const args: Record<string, string> = {};
  for (const m of call.matchAll(PARAMETER)) args[m[1] as string] ??= (m[2] as string).trim();
  return args;
}
