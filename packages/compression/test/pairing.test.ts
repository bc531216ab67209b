import { expect } from "chai";
import { pairingProblems } from "../src/index.ts";

// The validator every compressed request goes through must itself catch what each
// provider rejects, or the corpus test that relies on it proves nothing.

describe("tool pairing validator", () => {
  const call = (id: string) => ({ id, type: "function", function: { name: "sh", arguments: "{}" } });

  it("OpenAI: accepts answered calls, rejects a missing, stray or misplaced tool message", () => {
    const ok = [
      { role: "user", content: "go" },
      { role: "assistant", content: null, tool_calls: [call("a"), call("b")] },
      { role: "tool", tool_call_id: "a", content: "1" },
      { role: "tool", tool_call_id: "b", content: "2" },
      { role: "user", content: "next" },
    ];
    expect(pairingProblems.openai({ messages: ok })).to.deep.equal([]);
    expect(pairingProblems.openai({ messages: ok.filter((_, i) => i !== 3) })).to.have.length(1);
    expect(pairingProblems.openai({ messages: [{ role: "tool", tool_call_id: "x", content: "" }] })).to.have.length(1);
    expect(pairingProblems.openai({ messages: [ok[1], ok[4], ok[2], ok[3]] })).to.not.deep.equal([]);
  });

  it("Anthropic: each tool_use answered in the next user message, each tool_result by a tool_use before", () => {
    const use = { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Bash", input: {} }] };
    const result = { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] };
    const other = { role: "user", content: [{ type: "tool_result", tool_use_id: "t2", content: "ok" }] };
    expect(pairingProblems.anthropic({ messages: [{ role: "user", content: "go" }, use, result] })).to.deep.equal([]);
    expect(pairingProblems.anthropic({ messages: [use, other] })).to.have.length(2);
    expect(pairingProblems.anthropic({ messages: [result] })).to.have.length(1);
    // The last tool_use of a request may be unanswered: the result comes in the next one.
    expect(pairingProblems.anthropic({ messages: [{ role: "user", content: "go" }, use] })).to.deep.equal([]);
  });

  it("Gemini: function calls answered one for one in the next content", () => {
    const calls = { role: "model", parts: [{ functionCall: { name: "a" } }, { functionCall: { name: "b" } }] };
    const answers = (names: string[]) => ({
      role: "user",
      parts: names.map((name) => ({ functionResponse: { name, response: {} } })),
    });
    expect(pairingProblems.gemini({ contents: [calls, answers(["a", "b"])] })).to.deep.equal([]);
    expect(pairingProblems.gemini({ contents: [calls, answers(["a"])] })).to.have.length(1);
    expect(pairingProblems.gemini({ contents: [answers(["a"])] })).to.have.length(1);
  });
});
