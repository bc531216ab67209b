import { expect } from "chai";
import { ADAPTERS, type WireFormat } from "../src/index.ts";
import { actionOf, answers, splitObservation } from "../src/observation.ts";
import { SHAPES } from "./observation-shapes.ts";

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
