import { expect } from "chai";
import { countTokens } from "gpt-tokenizer";
import { countContentTokens, countExactTokens } from "../src/index.ts";

// The remembered counts are keyed by numbers read from a few characters of each text
// (tokens.ts): texts that agree on those characters must still get their own counts.

describe("token counts", () => {
  it("a short text counts as the tokenizer counts it, also beside a text that shares its key's characters", () => {
    // 640 characters: the key reads every 20th; the two differ only between the 1st and the 20th.
    const a = "ab".repeat(320);
    const b = `${a.slice(0, 1)}1 2 3 4 5 6 7 8 9 ${a.slice(19)}`;
    expect(a.length).to.equal(b.length);
    for (let round = 0; round < 2; round++) {
      expect(countContentTokens(a)).to.equal(countTokens(a));
      expect(countContentTokens(b)).to.equal(countTokens(b));
    }
    expect(countTokens(a)).to.not.equal(countTokens(b));
  });

  it("a text parsed again (a new string) is found by its content", () => {
    const text = "Summarise the following notes in three bullet points. ".repeat(10);
    const first = countContentTokens(JSON.parse(JSON.stringify(text)));
    expect(countContentTokens(JSON.parse(JSON.stringify(text)))).to.equal(first);
    expect(first).to.equal(countTokens(text));
  });

  it("long texts of one length that differ in their fingerprint's slices get their own counts", () => {
    const words = (word: string) => `${word} `.repeat(1_000).slice(0, 2_000);
    const a = words("alpha");
    const b = words("be");
    expect(a.length).to.equal(b.length);
    expect(countContentTokens(a)).to.equal(countTokens(a));
    expect(countContentTokens(b)).to.equal(countTokens(b));
    expect(countContentTokens(a)).to.equal(countTokens(a));
  });

  it("a special token's spelling in a caller's text is counted as text, short or long, not thrown on", () => {
    const short = "print(tokenizer.decode([199999]))  # <|endoftext|>";
    const long = `${"x = load()\n".repeat(200)}<|endoftext|>\n`;
    expect(() => countTokens(short)).to.throw(/special token/); // gpt-tokenizer's default
    expect(countContentTokens(short)).to.equal(countTokens(short, { disallowedSpecial: new Set() }));
    expect(countContentTokens(long)).to.equal(countTokens(long, { disallowedSpecial: new Set() }));
    expect(countContentTokens(long.repeat(2))).to.be.greaterThan(0); // past 3,000 characters: counted from samples
    expect(countExactTokens(long)).to.equal(countTokens(long, { disallowedSpecial: new Set() }));
  });

  it("field names and short values count as the tokenizer counts them, also past the remembered ones' bound", () => {
    const names = Array.from({ length: 12_000 }, (_, i) => `field_${i}`);
    for (const name of names) countContentTokens({ [name]: "x" });
    for (const name of ["role", "content", "assistant", names[0] as string, names[11_999] as string, "tool_calls"]) {
      expect(countContentTokens(JSON.parse(JSON.stringify(name))), name).to.equal(countTokens(name));
    }
  });

  it("a message counts its texts and their JSON punctuation", () => {
    const message = { role: "user", content: "Run the tests" };
    const expected =
      1 + (countTokens("role") + 3 + countTokens("user")) + (countTokens("content") + 3 + countTokens("Run the tests"));
    expect(countContentTokens(message)).to.equal(expected);
  });
});
