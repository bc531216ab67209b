import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import fc from "fast-check";
import { compressInputText, compressRequest, countContentTokens, segment } from "../src/index.ts";

const MT_BENCH = join(
  import.meta.dirname,
  "..",
  "..",
  "..",
  "..",
  "shared",
  "corpus",
  "mt-bench-questions",
  "question.jsonl",
);

/** Every protected span of `input` appears in `output`, byte-identical and in order. */
function assertSpansKept(input: string, output: string): number {
  let at = 0;
  let spans = 0;
  for (const s of segment(input)) {
    if (!s.protected) continue;
    const found = output.indexOf(s.text, at);
    expect(
      found,
      `protected span ${JSON.stringify(s.text)} changed or lost in ${JSON.stringify(output)}`,
    ).to.be.at.least(0);
    at = found + s.text.length;
    spans++;
  }
  return spans;
}

describe("input compression", () => {
  it("drops filler and repeated sentences, keeps the ask", () => {
    const input =
      "Hi! Could you please explain, in order to help me understand, why my build fails? Basically   it fails every time.\n\n\n\nWhy does my build fail on CI? Why does my build fail on CI? Thanks in advance!";
    const out = compressInputText(input);
    expect(out.length).to.be.lessThan(input.length * 0.8);
    expect(out).to.include("to help me understand");
    expect(out).not.to.match(/please|Basically|Thanks/i);
    expect(out.match(/Why does my build fail on CI\?/g)).to.have.length(1);
  });

  it("never touches code, URLs, paths, numbers, quotes or JSON", () => {
    const input =
      'Please run `npm   test` in ./src/app.ts and   see https://example.com/a?b=1  , then "quoted   text" stays, 3.14159 too, {"a":   1, "b": [1,  2]} and\n```\nbasically   code\n```';
    const out = compressInputText(input);
    expect(assertSpansKept(input, out)).to.be.at.least(7);
    expect(out).to.include("```\nbasically   code\n```");
  });

  it("keeps every protected span byte-identical on generated text (property)", () => {
    const prose = fc.constantFrom(
      "please",
      "Could you please",
      "in order to",
      "basically",
      "the build",
      "fails again.",
      "  ",
      "\n\n\n",
      "Thanks!",
      "I would like you to",
      "check it",
    );
    const spans = fc.oneof(
      fc.string({ minLength: 1, maxLength: 20 }).map((s) => `\`${s.replace(/[`\n]/g, "x")}\``),
      fc.string({ maxLength: 40 }).map((s) => `\n\`\`\`\n${s.replace(/`/g, "'")}\n\`\`\`\n`),
      fc.webUrl(),
      fc.integer().map(String),
      fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => d.toFixed(3)),
      fc.json(),
      fc.stringMatching(/^\.\/[a-z]{1,8}\/[a-z]{1,8}\.ts$/),
      fc.string({ maxLength: 20 }).map((s) => JSON.stringify(s)),
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(prose, spans), { maxLength: 20 }), (pieces) => {
        const input = pieces.join(" ");
        assertSpansKept(input, compressInputText(input));
      }),
      { numRuns: 500 },
    );
  });

  it("shortens the prose of the MT-Bench prompts, every protected span unchanged", () => {
    let before = 0;
    let after = 0;
    let spans = 0;
    for (const line of readFileSync(MT_BENCH, "utf8").split("\n").filter(Boolean)) {
      for (const turn of (JSON.parse(line) as { turns: string[] }).turns) {
        const out = compressInputText(turn);
        spans += assertSpansKept(turn, out);
        before += countContentTokens(turn);
        after += countContentTokens(out);
      }
    }
    expect(spans).to.be.greaterThan(50);
    expect(after).to.be.lessThan(before);
  });

  it("is applied to user and system text only, never to tool results or assistant turns", () => {
    const filler = "Could you please basically check this?";
    const out = compressRequest(
      "anthropic",
      {
        model: "m",
        system: "Please be   brief.",
        messages: [
          { role: "user", content: filler },
          { role: "assistant", content: filler },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "t", content: filler },
              { type: "text", text: filler },
            ],
          },
        ],
      },
      {
        intensity: "full",
        auto_compress_input: true,
        smart_detect_enabled: false,
        context_compress: false,
        context_compress_level: "standard",
      },
    ).body as { system: { text: string }[]; messages: { content: unknown }[] };
    expect(out.system[0]?.text).to.equal("Be brief.");
    expect(out.messages[0]?.content).to.equal("Check this?");
    expect(out.messages[1]?.content).to.equal(filler);
    const blocks = (out.messages[2]?.content ?? []) as { content?: string; text?: string }[];
    expect(blocks[0]?.content).to.equal(filler);
    expect(blocks[1]?.text).to.equal("Check this?");
  });
});
