import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { holdsEncodedData } from "../src/encoded-data.ts";
import { geminiFormat } from "../src/gemini/request-view.ts";
import { mapToolResults } from "../src/request-view.ts";

// An image or a file a tool returns in base64 is never cut nor rewritten (encoded-data.ts):
// compression leaves a text holding one whole, and Gemini's view never takes its base64 for
// a response's text.

const png = (bytes: number) => randomBytes(bytes).toString("base64");
const log = Array.from({ length: 2_000 }, (_, i) => `tests/test_models.py::test_case_${i} PASSED`).join("\n");

describe("encoded data", () => {
  it("is found in a long base64 run, a data: URL, or base64 beside a mime type", () => {
    expect(holdsEncodedData(png(30_000))).to.equal(true);
    expect(holdsEncodedData(`${log}\n${png(300)}\n${log}`)).to.equal(true);
    expect(holdsEncodedData(Buffer.from(randomBytes(300)).toString("base64url"))).to.equal(true);
    expect(holdsEncodedData(`<img src="data:image/png;base64,${png(40)}">`)).to.equal(true);
    // An image too small for a long run, in MCP's content list.
    const mcp = JSON.stringify({ content: [{ type: "image", data: png(60), mimeType: "image/png" }] });
    expect(holdsEncodedData(mcp)).to.equal(true);
  });

  it("is not found in logs, code, hashes, rules or paths", () => {
    const sha512 = randomBytes(64).toString("hex");
    const texts = [
      log,
      `commit ${sha512}\n${"-".repeat(400)}\n${"=".repeat(400)}\n${"_".repeat(400)}`,
      "const value = compute(input, 42); // ".repeat(500),
      Array.from({ length: 300 }, (_, i) => `src/module_${i}/index.ts`).join("\n"),
      JSON.stringify({ files: [{ name: "a.png", mimeType: "image/png", data: "done" }] }),
      `${"x".repeat(255)} ${"y".repeat(255)}`,
    ];
    for (const text of texts) expect(holdsEncodedData(text), text.slice(0, 60)).to.equal(false);
  });

  it("Gemini: an image's base64 is never taken for a response's text, alone or in MCP's content list", () => {
    const data = png(30_000);
    const seen: string[] = [];
    const responses = [
      { image: { mimeType: "image/png", data } },
      { content: [{ type: "image", data, mimeType: "image/png" }] },
      {
        content: [
          { type: "text", text: "Screenshot taken." },
          { type: "image", data, mimeType: "image/png" },
        ],
      },
    ];
    const body = {
      contents: responses.flatMap((response) => [
        { role: "model", parts: [{ functionCall: { name: "screenshot", args: {} } }] },
        { role: "user", parts: [{ functionResponse: { name: "screenshot", response } }] },
      ]),
    };
    mapToolResults(geminiFormat.toolResults, body, (text) => {
      seen.push(text);
      return text;
    });
    expect(seen).to.have.length(3);
    // Each response is read whole, as its JSON: the image stays inside it.
    for (const [i, text] of seen.entries()) expect(JSON.parse(text)).to.deep.equal(responses[i]);
  });
});
