import { expect } from "chai";
import { ADAPTERS, type WireFormat } from "../src/index.ts";
import { actionOf, answers, ObservationReader, splitObservation } from "../src/observation.ts";
import { ENVIRONMENT_DETAILS, SHAPES } from "./observation-shapes.ts";

// Each text-protocol agent's observation, as its template renders it, splits into the
// agent's text and the command output, and joins back byte for byte; a message that only
// looks like one is no observation.

const LOG =
  "============ test session starts ============\ntests/test_app.py::test_one PASSED\ntests/test_app.py::test_two FAILED\n";

describe("text-protocol observation shapes", () => {
  for (const shape of SHAPES) {
    it(`${shape.name}: the output is split from the agent's text, and the parts join back`, () => {
      const text = shape.render(LOG);
      const o = splitObservation(text);
      expect(o, text).to.not.equal(undefined);
      if (!o) return;
      expect(o.open + o.output + o.close).to.equal(text);
      expect(o.output).to.include("tests/test_app.py::test_two FAILED");
      // The output is the command's (an agent's cut: its head to its tail), the agent's text all outside it.
      expect(o.output.startsWith(LOG.trimEnd())).to.equal(true);
      expect(o.output.trimEnd().endsWith(LOG.trimEnd())).to.equal(true);
      expect(o.open + o.close).to.not.include("test session starts");
      expect(o.command).to.equal(shape.command);
      expect(o.needsAction).to.equal(shape.needsAction);
    });
  }

  it("SWE-agent 0.x: the shell's state after the output is the agent's, the output everything before it", () => {
    const text = "344\n\n(Open file: /repo/reproduce.py)\n(Current directory: /repo)\nbash-$";
    expect(splitObservation(text)).to.deep.equal({
      open: "",
      output: "344\n",
      close: "\n(Open file: /repo/reproduce.py)\n(Current directory: /repo)\nbash-$",
      command: undefined,
      tool: undefined,
      needsAction: true,
      outputFollows: false,
      amongTexts: false,
    });
  });

  it("mini-swe-agent: an empty output splits into the tags alone", () => {
    expect(splitObservation("<returncode>0</returncode>\n<output>\n</output>")).to.deep.include({
      open: "<returncode>0</returncode>\n<output>\n",
      output: "",
    });
  });

  it("a message with anything around a shape, or a shape changed, is no observation", () => {
    const nearMisses = [
      // Text before or after the template.
      `Here is what I got:\n<returncode>0</returncode>\n<output>\n${LOG}</output>`,
      `<returncode>0</returncode>\n<output>\n${LOG}</output>\nWhat does this mean?`,
      `${LOG}\n(Open file: /repo/app.py)\n(Current directory: /repo)\nbash-$\nwhy does it fail?`,
      `Can you look at this?\n<observation>\n${LOG}\n</observation>`,
      `<observation>\n${LOG}\n</observation>\nThanks`,
      `Please read:\nI ran this command:\n\npytest\n\nAnd got this output:\n\n${LOG}\n`,
      // A template's words, but not its form.
      `I ran this command:\npytest\nAnd got this output:\n${LOG}\n`,
      `I ran this command:\n\npytest\n\nAnd got this output:\n\n${LOG.trimEnd()}`,
      `Observation: the second test fails, ${LOG}`,
      "Observation: it fails<response clipped>",
      `OBSERVATION: ${LOG}`,
      `observation:\n${LOG}`,
      `${LOG}\n(Current directory: /repo)\nbash-$`,
      `${LOG}\n(Open file: /repo/app.py)\n(Current directory: /repo)\n$`,
      `<returncode>zero</returncode>\n<output>\n${LOG}</output>`,
      `<returncode>0</returncode>\n${LOG}`,
      `<exception>x</exception>\n<output>\n${LOG}</output>`,
      `The last command <command>make</command> timed out.\n <output>\n${LOG}\n</output>`,
      "Output from the script was empty, what now?",
      "Your command ran successfully and did not produce any output.",
      "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.",
    ];
    for (const text of nearMisses) expect(splitObservation(text), text).to.equal(undefined);
  });

  it("a template of one text is an observation only as its message's only text; Cline's result stands among others", () => {
    const mini = `<returncode>1</returncode>\n<output>\n${LOG}</output>`;
    const reader = new ObservationReader();
    reader.message(1);
    expect(reader.read(mini)?.output.trimEnd()).to.equal(LOG.trimEnd());
    reader.message(2);
    expect(reader.read("This is what I saw:")).to.equal(undefined);
    expect(reader.read(mini)).to.equal(undefined);
    reader.message(3);
    expect(reader.read("[execute_command for 'pytest'] Result:")?.outputFollows).to.equal(true);
    expect(reader.read(LOG)?.output).to.equal(LOG);
    expect(reader.read(ENVIRONMENT_DETAILS)).to.equal(undefined);
    reader.message(2);
    expect(reader.read(`[execute_command for 'pytest'] Result:\n${LOG}`)?.output).to.equal(LOG);
  });

  it("an observation answers the action before it; one that names its command or tool, only that one", () => {
    const of = (name: string) => splitObservation(SHAPES.find((s) => s.name === name)?.render(LOG) ?? "");
    const plain = of("SWE-agent 1.x");
    const timeout = of("mini-swe-agent 1.x timeout");
    const shell = of("Aider, a suggested command's output");
    const run = of("Aider /run");
    const openHands = of("OpenHands without native function calls");
    if (!plain || !timeout || !shell || !run || !openHands) throw new Error("shapes not recognised");
    const fenced = (...blocks: string[]) => actionOf(blocks.map((b) => `\`\`\`bash\n${b}\n\`\`\``).join("\nand\n"));
    expect(answers(plain, fenced("ls"))).to.equal(true);
    expect(answers(plain, undefined)).to.equal(false);
    expect(answers(timeout, fenced("sleep 100"))).to.equal(true);
    expect(answers(timeout, fenced("make"))).to.equal(false);
    // Aider runs each line of a suggested block: any of them may be the one named.
    expect(answers(shell, fenced("pip install -e .\npython -m pytest -x"))).to.equal(true);
    expect(answers(shell, fenced("python -m pytest -x", "pip install -e ."))).to.equal(true);
    expect(answers(shell, fenced("pip install -e ."))).to.equal(false);
    expect(answers(shell, undefined)).to.equal(false);
    // `/run` is the person's own command: it answers no action.
    expect(answers(run, undefined)).to.equal(true);
    // OpenHands names the tool it answers: a call of that tool, and of no other.
    const call = (tool: string) =>
      actionOf(`Let me look.\n<function=${tool}>\n<parameter=command>\nls\n</parameter>\n</function>`);
    expect(answers(openHands, call("execute_bash"))).to.equal(true);
    expect(answers(openHands, call("str_replace_editor"))).to.equal(false);
    expect(answers(openHands, fenced("ls"))).to.equal(false);
  });

  it("an action is the last command block: a fence of any info string, a <command> tag or a <function=..> call", () => {
    const command = (text: string) => actionOf(text)?.command;
    expect(command("THOUGHT: look.\n\n```bash\nls -la\n```")).to.equal("ls -la");
    expect(command("Let me look.\n```\nopen setup.py\n```")).to.equal("open setup.py");
    expect(command("THOUGHT: x\n\n```mswea_bash_command\ngrep -rn foo src\n```")).to.equal("grep -rn foo src");
    expect(command("We'll create it.\n<command>\ncreate reproduce.py\n</command>")).to.equal("create reproduce.py");
    expect(command("<mswea_bash_command>ls -la</mswea_bash_command>")).to.equal("ls -la");
    expect(command("```python\nprint(1)\n```\nthen\n<command>\npython x.py\n</command>")).to.equal("python x.py");
    expect(command("<command>\npython x.py\n</command>\nthen\n```bash\nls\n```")).to.equal("ls");
    expect(
      actionOf(
        "Let me view it.\n<function=str_replace_editor>\n<parameter=command>view</parameter>\n<parameter=path>/w/a.py</parameter>\n</function>",
      ),
    ).to.deep.equal({
      command: "view",
      blocks: ["view"],
      tool: "str_replace_editor",
      // The shell command it stands for: an editor's view of a file is `cat -n` of it.
      shell: "cat -n /w/a.py",
    });
    expect(actionOf("```sh\npip install -e .\npytest\n```\nand\n```bash\nmake\n```")).to.deep.equal({
      command: "make",
      blocks: ["pip install -e .\npytest", "make"],
      shell: "make",
    });
    expect(actionOf("No command here, only `inline code`.")).to.equal(undefined);
  });
});

describe("Cline's XML tool protocol (Roo Code's, Kilo Code's)", () => {
  it("a heading's own text says the output is the next text; a heading with text after it holds its output", () => {
    for (const heading of [
      "[execute_command for 'python -m pytest -x'] Result:",
      "[execute_command for 'cd /w &&\npytest'] Result:",
      "[read_file for 'src/a.ts', 'src/b.ts'] Result:",
      "[read_file for 3 files] Result:",
      "[attempt_completion] Result:",
    ]) {
      const alone = splitObservation(heading);
      expect(alone, heading).to.deep.include({ open: heading, output: "", close: "", outputFollows: true });
      const joined = splitObservation(`${heading}\n${LOG}`);
      expect(joined, heading).to.deep.include({ open: `${heading}\n`, output: LOG, outputFollows: false });
    }
    expect(splitObservation("[execute_command for 'ls'] Result:\n")).to.deep.include({
      output: "",
      outputFollows: false,
    });
  });

  it("near-misses of a heading are no observation", () => {
    for (const text of [
      "[execute_command for 'ls'] Result",
      "[execute_command for 'ls'] Result: it failed",
      "[Execute_command for 'ls'] Result:",
      "[ls] Result:",
      "[execute_command for 'ls']\nResult:",
      "See [execute_command for 'ls'] Result:",
      " [execute_command for 'ls'] Result:",
      "[execute_command for 'ls'] Result:\n\nok\n<environment_details>\nx\n</environment_details> and more",
    ])
      expect(splitObservation(text)?.outputFollows ?? false, text).to.equal(false);
    expect(splitObservation("[ls] Result:\nfoo")).to.equal(undefined);
    expect(splitObservation("See [execute_command for 'ls'] Result:\nfoo")).to.equal(undefined);
  });

  it("what the person said in a result (a denial, its feedback) is no output; feedback after the output so far stays out of it", () => {
    const heading = "[execute_command for 'npm test'] Result:";
    const feedback = `<feedback>\nDon't run it, it hangs. My log:\n${LOG}</feedback>`;
    const said = [
      "The user denied this operation.",
      `The user denied this operation and provided the following feedback:\n${feedback}`,
      `The user approved this operation and provided the following context:\n${feedback}`,
      `The user provided the following feedback:\n${feedback}`,
    ];
    for (const text of said) {
      const reader = new ObservationReader();
      expect(reader.read(heading)?.outputFollows, text).to.equal(true);
      expect(reader.read(text), text).to.equal(undefined);
      expect(splitObservation(`${heading}\n${text}\n\n${ENVIRONMENT_DETAILS}`), text).to.equal(undefined);
    }
    // A command the person answered while it ran: the output so far is output, the feedback the person's.
    const running = `Command is still running in the user's terminal.\nHere's the output so far:\n${LOG}`;
    const answered = `${running}\n\nThe user provided the following feedback:\n${feedback}`;
    const reader = new ObservationReader();
    reader.read(heading);
    expect(reader.read(answered)).to.deep.include({ output: running, close: answered.slice(running.length) });
    expect(splitObservation(`${heading}\n${answered}`)).to.deep.include({ output: running });
  });

  it("the calls in an assistant's text are actions of their tools, with the command or file they stand for", () => {
    const call =
      "<execute_command>\n<command>python -m pytest -x</command>\n<requires_approval>false</requires_approval>\n</execute_command>";
    expect(actionOf(`I'll run the tests.\n\n${call}`)).to.deep.include({
      command: "python -m pytest -x",
      tool: "execute_command",
      shell: "python -m pytest -x",
    });
    expect(actionOf("<read_file>\n<path>src/app.ts</path>\n</read_file>")).to.deep.include({
      tool: "read_file",
      shell: "cat -n src/app.ts",
    });
    // Roo Code's read of one file, and of two (no one file is the result).
    const roo = (...paths: string[]) =>
      `<read_file>\n<args>\n${paths.map((p) => `<file>\n<path>${p}</path>\n</file>`).join("\n")}\n</args>\n</read_file>`;
    expect(actionOf(roo("src/app.ts"))).to.deep.include({ tool: "read_file", shell: "cat -n src/app.ts" });
    expect(actionOf(roo("src/a.ts", "src/b.ts"))?.shell).to.equal(undefined);
    expect(actionOf("<list_files>\n<path>src</path>\n<recursive>true</recursive>\n</list_files>")).to.deep.include({
      tool: "list_files",
    });
    // The last to end is the action, whichever form it takes.
    expect(actionOf(`${call}\nthen\n\`\`\`bash\nls\n\`\`\``)?.command).to.equal("ls");
    // A tag that holds no parameters, or a one-word tag, is no call.
    expect(actionOf("<file_name>app.ts</file_name>")).to.equal(undefined);
    expect(actionOf("<details>\n<summary>x</summary>\n</details>")).to.equal(undefined);
  });

  it("a result answers a call of the tool its heading names, and no other", () => {
    const o = splitObservation(`[execute_command for 'python -m pytest -x'] Result:\n${LOG}`);
    if (!o) throw new Error("not recognised");
    const call = (tool: string) => actionOf(`<${tool}>\n<path>src</path>\n<command>pytest</command>\n</${tool}>`);
    expect(answers(o, call("execute_command"))).to.equal(true);
    expect(answers(o, call("read_file"))).to.equal(false);
    expect(answers(o, actionOf("```bash\npython -m pytest -x\n```"))).to.equal(false);
    expect(answers(o, undefined)).to.equal(false);
  });
});

describe("the latest user text (what smart detect reads) passes over observations only", () => {
  const task = `Fix the ordering bug.\n\n(Open file: n/a)\n(Current directory: /repo)\nbash-$`;
  const action = "Let me look.\n```\nls\n```";
  const observation = `setup.py\nsrc\n\n(Open file: n/a)\n(Current directory: /repo)\nbash-$`;
  const bodies: Record<string, Record<string, unknown>> = {
    openai: {
      messages: [
        { role: "user", content: task },
        { role: "assistant", content: action },
        { role: "user", content: observation },
      ],
    },
    anthropic: {
      messages: [
        { role: "user", content: [{ type: "text", text: task }] },
        { role: "assistant", content: [{ type: "text", text: action }] },
        { role: "user", content: [{ type: "text", text: observation }] },
      ],
    },
    gemini: {
      contents: [
        { role: "user", parts: [{ text: task }] },
        { role: "model", parts: [{ text: action }] },
        { role: "user", parts: [{ text: observation }] },
      ],
    },
    "openai-responses": {
      input: [
        { type: "message", role: "user", content: task },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: action }] },
        { type: "message", role: "user", content: observation },
      ],
    },
  };
  for (const [format, body] of Object.entries(bodies)) {
    it(`${format}: SWE-agent's task, which ends in its shell prompt as observations do, is the user's text`, () => {
      expect(ADAPTERS[format as WireFormat].view.latestUserText(body)).to.equal(task);
    });
  }
});

describe("the latest user text is a message of a template and a person's words beside it", () => {
  const action = "THOUGHT: run it\n```bash\npython worker.py\n```";
  // SWE-agent 1.x's template is its heading: joined into one text, the words after it would pass for output.
  const texts = [`OBSERVATION:\n${LOG}`, "Is this what you expected? It is not what I saw."];
  const bodies: Record<string, Record<string, unknown>> = {
    openai: {
      messages: [
        { role: "assistant", content: action },
        { role: "user", content: texts.map((text) => ({ type: "text", text })) },
      ],
    },
    anthropic: {
      messages: [
        { role: "assistant", content: [{ type: "text", text: action }] },
        { role: "user", content: texts.map((text) => ({ type: "text", text })) },
      ],
    },
    gemini: {
      contents: [
        { role: "model", parts: [{ text: action }] },
        { role: "user", parts: texts.map((text) => ({ text })) },
      ],
    },
    "openai-responses": {
      input: [
        { type: "message", role: "assistant", content: [{ type: "output_text", text: action }] },
        { type: "message", role: "user", content: texts.map((text) => ({ type: "input_text", text })) },
      ],
    },
  };
  for (const [format, body] of Object.entries(bodies)) {
    it(`${format}: the message is the user's text`, () => {
      expect(ADAPTERS[format as WireFormat].view.latestUserText(body)).to.equal(texts.join("\n"));
    });
  }
});

describe("the latest user text passes over Cline's results, its heading and output in texts of their own", () => {
  const task = "<task>\nFix the ordering bug.\n</task>";
  const call = "<execute_command>\n<command>pytest</command>\n</execute_command>";
  const result = ["[execute_command for 'pytest'] Result:", LOG, ENVIRONMENT_DETAILS];
  const bodies: Record<string, Record<string, unknown>> = {
    openai: {
      messages: [
        { role: "user", content: [{ type: "text", text: task }] },
        { role: "assistant", content: call },
        { role: "user", content: result.map((text) => ({ type: "text", text })) },
      ],
    },
    anthropic: {
      messages: [
        { role: "user", content: [{ type: "text", text: task }] },
        { role: "assistant", content: [{ type: "text", text: call }] },
        { role: "user", content: result.map((text) => ({ type: "text", text })) },
      ],
    },
    gemini: {
      contents: [
        { role: "user", parts: [{ text: task }] },
        { role: "model", parts: [{ text: call }] },
        { role: "user", parts: result.map((text) => ({ text })) },
      ],
    },
  };
  for (const [format, body] of Object.entries(bodies)) {
    it(`${format}: the task is the user's text`, () => {
      expect(ADAPTERS[format as WireFormat].view.latestUserText(body)).to.equal(task);
    });
  }
});
