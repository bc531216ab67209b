import { expect } from "chai";
import { closedRequestReason, withInstructionInFirstTurn } from "../src/gemini/closed-request.ts";
import { ADAPTERS, TERSE_INSTRUCTION_TAG } from "../src/index.ts";
import { frozen } from "./recall-kit.ts";

// Gemini requests that take no system instruction and no tools (a cached content's, a
// Gemma model's): terse's instruction goes to the front of the first user turn instead.

const OURS = { text: `${TERSE_INSTRUCTION_TAG} Answer tersely.` };
const ask = { role: "user", parts: [{ text: "What is 2+2?" }] };

describe("Gemini requests closed to a system instruction and tools", () => {
  it("are those naming a cached content, either spelling, and those to a Gemma model", () => {
    expect(closedRequestReason({ cachedContent: "cachedContents/a" }, "gemini-2.5-pro")).to.equal("cached content");
    expect(closedRequestReason({ cached_content: "cachedContents/a" }, undefined)).to.equal("cached content");
    expect(closedRequestReason({}, "gemma-3-27b-it")).to.equal("a Gemma model");
    expect(closedRequestReason({}, "models/Gemma-3-4b-it")).to.equal("a Gemma model");
    expect(closedRequestReason({}, "gemini-2.5-flash")).to.equal(null);
    expect(closedRequestReason({}, undefined)).to.equal(null);
  });

  it("get terse's instruction at the front of the first user turn, the rest as sent", () => {
    const body = frozen({ cachedContent: "c", systemInstruction: { parts: [OURS] }, contents: [ask] });
    expect(withInstructionInFirstTurn(body)).to.deep.equal({
      cachedContent: "c",
      contents: [{ role: "user", parts: [OURS, ...ask.parts] }],
    });
    const snake = frozen({ system_instruction: { parts: [OURS] }, contents: [ask] });
    expect(withInstructionInFirstTurn(snake)).to.deep.equal({
      contents: [{ role: "user", parts: [OURS, ...ask.parts] }],
    });
  });

  it("open with a user turn of terse's when the conversation opens with the model's", () => {
    const model = { role: "model", parts: [{ text: "Hello." }] };
    const body = frozen({ systemInstruction: { parts: [OURS] }, contents: [model, ask] });
    expect(withInstructionInFirstTurn(body)).to.deep.equal({ contents: [{ role: "user", parts: [OURS] }, model, ask] });
  });

  it("leave a caller's own system instruction, and one beside terse's, where it was sent", () => {
    const theirs = frozen({ systemInstruction: { parts: [{ text: "Be brief." }, OURS] }, contents: [ask] });
    expect(withInstructionInFirstTurn(theirs)).to.equal(theirs);
    const none = frozen({ contents: [ask] });
    expect(withInstructionInFirstTurn(none)).to.equal(none);
  });

  it("go upstream so, generation and count alike; other requests keep their system instruction", () => {
    const op = { kind: "generate", method: "POST", path: "/v1beta/models/gemma-3-27b-it:generateContent" } as const;
    const body = { systemInstruction: { parts: [OURS] }, contents: [ask] };
    const upstream = (model: string, sent: Record<string, unknown>, kind: "generate" | "count_tokens" = "generate") =>
      ADAPTERS.gemini.upstream({
        base: "https://g",
        op: { ...op, kind, pathModel: model },
        body: sent,
        providerKey: "k",
        model,
        query: "",
        callerHeaders: {},
      }).body;
    expect(upstream("gemma-3-27b-it", body)).to.deep.equal({
      contents: [{ role: "user", parts: [OURS, ...ask.parts] }],
    });
    expect(upstream("gemini-2.5-flash", body)).to.deep.equal(body);
    const counted = upstream(
      "gemma-3-27b-it",
      { generateContentRequest: { model: "models/gemma-3-27b-it", ...body } },
      "count_tokens",
    );
    expect(counted).to.deep.equal({
      generateContentRequest: {
        model: "models/gemma-3-27b-it",
        contents: [{ role: "user", parts: [OURS, ...ask.parts] }],
      },
    });
  });
});
