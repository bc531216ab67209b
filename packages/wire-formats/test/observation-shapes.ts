// Each text-protocol agent's observation of an output, as the agent's own template renders
// it (mini-swe-agent's `observation_template` / `action_observation_template` and 1.x
// `timeout_template`, SWE-agent's `next_step_template` of its 0.7, thought-action and
// `bash_only` configs and its default truncated template, Aider's `run_output` prompt and
// shell-command output, OpenHands' non-function-calling tool result, Cline's XML-protocol
// result), for the tests of the observation shapes here and in compression.

const TOO_LONG_MINI = [
  "<warning>",
  "The output of your last command was too long.",
  "Please try a different command that produces less output.",
  "If you're looking at a file you can try use head, tail or sed to view a smaller number of lines selectively.",
  "If you're using grep or find and it produced too much output, you can use a more selective search pattern.",
  "If you really need to see something from the full command's output, you can redirect output to a file and then search in that file.",
  "</warning>",
].join("\n");

/** Cline's (and Roo Code's) call of a command in its XML tool protocol. */
export const CLINE_CALL =
  "I'll run the tests.\n\n<execute_command>\n<command>python -m pytest -x</command>\n<requires_approval>false</requires_approval>\n</execute_command>";

/** What Cline adds to every user message. */
export const ENVIRONMENT_DETAILS =
  "<environment_details>\n# VSCode Visible Files\nsrc/app.py\n\n# Current Time\n11/25/2026, 5:02:11 AM (UTC)\n\n# Current Mode\nACT MODE\n</environment_details>";

/**
 * Each agent's observation of `output`, as the agent renders it; `command` where the
 * message names one; `action`, an assistant message it answers where that is not a fenced
 * command block.
 */
export const SHAPES: {
  name: string;
  render: (output: string) => string;
  command?: string;
  needsAction: boolean;
  action?: string;
}[] = [
  { name: "mini-swe-agent", render: (o) => `<returncode>1</returncode>\n<output>\n${o}</output>`, needsAction: true },
  {
    name: "mini-swe-agent, cut by the agent",
    render: (o) =>
      `<returncode>0</returncode>\n${TOO_LONG_MINI}<output_head>\n${o}\n</output_head>\n<elided_chars>\n120 characters elided\n</elided_chars>\n<output_tail>\n${o}\n</output_tail>`,
    needsAction: true,
  },
  {
    name: "mini-swe-agent 2.x, a command (of two lines) that failed to run",
    render: (o) =>
      `<exception>An error occurred while executing the command: Command 'cd /repo\nsleep 100' timed out after 30 seconds</exception>\n<returncode>-1</returncode>\n<output>\n${o}</output>`,
    needsAction: true,
  },
  {
    name: "mini-swe-agent 1.x timeout",
    render: (o) =>
      `The last command <command>sleep 100</command> timed out and has been killed.\nThe output of the command was:\n <output>\n${o}\n</output>\nPlease try another command and make sure to avoid those requiring interactive input.`,
    command: "sleep 100",
    needsAction: true,
  },
  {
    name: "SWE-agent 0.x prompt",
    render: (o) => `${o}\n(Open file: /repo/src/app.py)\n(Current directory: /repo)\nbash-$`,
    needsAction: true,
  },
  {
    name: "SWE-agent 0.x prompt, CTF config",
    render: (o) =>
      `${o}\n(Open file: /ctf/exploit.py)\n(Current directory: /ctf)\n(Interactive session: connect 10.0.0.1 1337)\nbash-$`,
    needsAction: true,
  },
  { name: "SWE-agent 1.x", render: (o) => `OBSERVATION:\n${o}`, needsAction: true },
  {
    name: "SWE-agent, clipped by its default template",
    render: (o) =>
      `Observation: ${o}<response clipped><NOTE>Observations should not exceeded 100000 characters. 2048 characters were elided. Please try a different command that produces less output or use head/tail/grep/redirect the output to a file. Do not use interactive pagers.</NOTE>`,
    needsAction: true,
  },
  { name: "SWE-agent bash_only", render: (o) => `<observation>\n${o}\n</observation>`, needsAction: true },
  {
    name: "SWE-agent bash_only, cut by the agent",
    render: (o) =>
      `${TOO_LONG_MINI.replace(/\n<\/warning>$/, "")}\n</warning>\n\n<observation_head>\n${o}\n</observation_head>\n\n<elided_chars>\n12 characters elided\n</elided_chars>\n\n<observation_tail>\n${o}\n</observation_tail>`,
    needsAction: true,
  },
  {
    name: "Aider /run",
    render: (o) => `I ran this command:\n\npython -m pytest -x\n\nAnd got this output:\n\n${o}\n`,
    command: "python -m pytest -x",
    needsAction: false,
  },
  {
    name: "Aider, a suggested command's output",
    render: (o) => `Output from python -m pytest -x\n${o}\n\n\n`,
    command: "python -m pytest -x",
    needsAction: true,
  },
  {
    name: "OpenHands without native function calls",
    render: (o) => `EXECUTION RESULT of [execute_bash]:\n${o}`,
    needsAction: true,
    action:
      "Let me run the tests.\n<function=execute_bash>\n<parameter=command>python -m pytest -x</parameter>\n</function>",
  },
  {
    name: "Cline's XML protocol, heading and output in one text",
    render: (o) => `[execute_command for 'python -m pytest -x'] Result:\n${o}`,
    needsAction: true,
    action: CLINE_CALL,
  },
  {
    name: "Cline's XML protocol, before its environment details",
    render: (o) => `[execute_command for 'python -m pytest -x'] Result:\n${o}\n\n${ENVIRONMENT_DETAILS}`,
    needsAction: true,
    action: CLINE_CALL,
  },
];

/** Shapes whose output is all after their heading: words after them are output. */
export const HEADED_SHAPES = [
  "SWE-agent 1.x",
  "OpenHands without native function calls",
  "Cline's XML protocol, heading and output in one text",
  "Cline's XML protocol, before its environment details",
];
