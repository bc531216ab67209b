import type Anthropic from "@anthropic-ai/sdk";
import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import type OpenAI from "openai";
import { type Harness, sdkClients, startHarness } from "./harness.ts";

// Agents without native tool calls (mini-swe-agent, SWE-agent, Aider) send a command's
// output back as a plain user message in their own template (mini-swe-agent's
// `<returncode>..</returncode><output>..</output>`; SWE-agent's output, then its shell's
// state and prompt). Through the data plane, with context compression on, such an
// observation reaches the upstream compressed like a tool result, while a message a person
// typed in the same shape arrives as typed. Cline's XML tool protocol sends the output in a
// text block of its own, after its heading's.

/** A pytest run's output, long enough for `standard` to shorten. */
const testRun = Array.from({ length: 400 }, (_, i) =>
  i === 250 ? "tests/test_query.py::test_nulls_last FAILED" : `tests/test_query.py::test_case_${i} PASSED`,
).join("\n");
const observation = `<returncode>1</returncode>\n<output>\n${testRun}\n</output>`;
const action = "THOUGHT: Run the query tests.\n\n```bash\npython -m pytest tests/test_query.py -v\n```";

/** SWE-agent's observation of the same run (its 0.x template, as its text-mode runs send it). */
const sweState = "\n(Open file: /repo/tests/test_query.py)\n(Current directory: /repo)\nbash-$";
const sweObservation = `${testRun}${sweState}`;
const sweAction = "Let's run the query tests to see which fails.\n```\npython -m pytest tests/test_query.py -v\n```";

describe("data plane: text-protocol observations", () => {
  let h: Harness;
  let client: OpenAI;
  let anthropic: Anthropic;
  before(async () => {
    h = await startHarness();
    const { rawKey } = await h.addKey({
      context_compress: true,
      context_compress_level: "standard",
      smart_detect_enabled: false,
    });
    client = sdkClients(h.url, rawKey).openai();
    anthropic = sdkClients(h.url, rawKey).anthropic();
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  const sent = () => h.fake.received[0]?.body.messages as { role: string; content: string }[];

  it("an observation answering a fenced command reaches the upstream compressed, its tags kept", async () => {
    await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [
        { role: "user", content: "Fix the ordering bug." },
        { role: "assistant", content: action },
        { role: "user", content: observation },
      ],
    });
    const messages = sent();
    expect(messages[0]).to.deep.equal({ role: "user", content: "Fix the ordering bug." });
    expect(messages[1]).to.deep.equal({ role: "assistant", content: action });
    const out = messages[2]?.content ?? "";
    // Cut to its head, tail, failure and the index of its 400 test names (a fifth of what went).
    expect(out.length).to.be.below(observation.length / 2);
    expect(out.startsWith("<returncode>1</returncode>\n<output>\n")).to.equal(true);
    expect(out.endsWith("\n</output>")).to.equal(true);
    expect(out).to.include("tests/test_query.py::test_nulls_last FAILED");
    expect(out).to.include("`python -m pytest tests/test_query.py -v` shows all");
    const event = await waitFor(async () => (await h.events()).find((e) => e.model === "gpt-4o-mini"));
    expect(event.input_tokens_before_compression).to.be.greaterThan(event.input_tokens);
  });

  it("a person's message in the same shape, with no command before it, reaches the upstream as typed", async () => {
    await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [
        { role: "user", content: "Fix the ordering bug." },
        { role: "assistant", content: "Which test fails?" },
        { role: "user", content: observation },
      ],
    });
    expect(sent()[2]).to.deep.equal({ role: "user", content: observation });
  });

  it("SWE-agent's observation answering its action reaches the upstream compressed, its shell state kept (Anthropic SDK)", async () => {
    await anthropic.messages.create({
      model: "claude-test-swe",
      max_tokens: 100,
      messages: [
        { role: "user", content: "Fix the ordering bug." },
        { role: "assistant", content: sweAction },
        { role: "user", content: sweObservation },
      ],
    });
    const messages = h.fake.received[0]?.body.messages as { role: string; content: string }[];
    expect(messages[1]).to.deep.equal({ role: "assistant", content: sweAction });
    const out = messages[2]?.content ?? "";
    expect(out.length).to.be.below(sweObservation.length / 2);
    expect(out.endsWith(sweState)).to.equal(true);
    expect(out).to.include("tests/test_query.py::test_nulls_last FAILED");
    expect(out).to.include("`python -m pytest tests/test_query.py -v` shows all");
  });

  it("Cline's XML-protocol result, the output in the text after its heading, reaches the upstream compressed (Anthropic SDK)", async () => {
    const call =
      "I'll run the query tests.\n\n<execute_command>\n<command>python -m pytest tests/test_query.py -v</command>\n<requires_approval>false</requires_approval>\n</execute_command>";
    const heading = "[execute_command for 'python -m pytest tests/test_query.py -v'] Result:";
    const output = `Command executed.\nOutput:\n${testRun}`;
    const details = "<environment_details>\n# Current Mode\nACT MODE\n</environment_details>";
    const result = [heading, output, details].map((text) => ({ type: "text" as const, text }));
    await anthropic.messages.create({
      model: "claude-test-cline",
      max_tokens: 100,
      messages: [
        { role: "user", content: [{ type: "text", text: "<task>\nFix the ordering bug.\n</task>" }] },
        { role: "assistant", content: [{ type: "text", text: call }] },
        { role: "user", content: result },
      ],
    });
    const messages = h.fake.received[0]?.body.messages as { role: string; content: { text: string }[] }[];
    expect(messages[1]?.content).to.deep.equal([{ type: "text", text: call }]);
    const [head, out, tail] = (messages[2]?.content ?? []).map((b) => b.text);
    expect(head).to.equal(heading);
    expect(tail).to.equal(details);
    expect(out?.length).to.be.below(output.length / 2);
    expect(out?.startsWith("Command executed.\nOutput:\n")).to.equal(true);
    expect(out).to.include("tests/test_query.py::test_nulls_last FAILED");
    expect(out).to.include("`python -m pytest tests/test_query.py -v` shows all");
  });

  it("a person's message in SWE-agent's shape, after an answer without a command, reaches the upstream as typed", async () => {
    await anthropic.messages.create({
      model: "claude-test-swe",
      max_tokens: 100,
      messages: [
        { role: "user", content: "Fix the ordering bug." },
        { role: "assistant", content: "Which test fails?" },
        { role: "user", content: sweObservation },
      ],
    });
    const messages = h.fake.received[0]?.body.messages as { role: string; content: string }[];
    expect(messages[2]).to.deep.equal({ role: "user", content: sweObservation });
  });
});
