import { expect } from "chai";
import fc from "fast-check";
import { skim } from "../src/context/collapsed-lines.ts";
import { CONTEXT_LEVELS } from "../src/context/levels.ts";
import { shortenLines } from "../src/context/log-lines.ts";

/** The text with runs of 5+ look-alike lines collapsed, read whole: what skimming must agree with. */
const collapsedWhole = (text: string) =>
  skim(text, 0, text.length, Number.POSITIVE_INFINITY)
    .entries.map((e) => e.text)
    .join("\n");

describe("skimmed lines and the cut of a long log", () => {
  it("collapses a run of look-alike lines alike from either end", () => {
    const lines = ["start", ...Array.from({ length: 9 }, (_, i) => `step ${i} ok`), "end"];
    const text = lines.join("\n");
    const forward = skim(text, 0, text.length, Number.POSITIVE_INFINITY).entries.map((e) => e.text);
    const backward = skim(text, 0, text.length, Number.POSITIVE_INFINITY, true)
      .entries.map((e) => e.text)
      .reverse();
    expect(forward).to.deep.equal(["start", "step 0 ok", "[terse: 7 similar lines omitted]", "step 8 ok", "end"]);
    expect(backward).to.deep.equal(forward);
  });

  it("leaves a run of short look-alike lines whole where its marker, named, would be longer", () => {
    const lines = ["start", ...Array.from({ length: 6 }, (_, i) => `ok ${i}`), "end"];
    const text = lines.join("\n");
    expect(skim(text, 0, text.length, Number.POSITIVE_INFINITY).entries.map((e) => e.text)).to.deep.equal(lines);
    const backward = skim(text, 0, text.length, Number.POSITIVE_INFINITY, true).entries.map((e) => e.text);
    expect(backward.reverse()).to.deep.equal(lines);
  });

  it("reads from either end only as far as the budget, and says whether that was all", () => {
    const text = Array.from({ length: 1_000 }, (_, i) => `${"abcdefg"[i % 7]?.repeat(1 + (i % 5))} line`).join("\n");
    const head = skim(text, 0, text.length, 100);
    expect(head.complete).to.equal(false);
    expect(head.entries.map((e) => e.text).join("\n")).to.equal(
      text.split("\n").slice(0, head.entries.length).join("\n"),
    );
    expect(head.entries.reduce((n, e) => n + e.text.length + 1, 0)).to.be.at.most(100);
    expect(skim("one\ntwo", 0, 7, 100).complete).to.equal(true);
  });

  it("agrees from both ends with the whole text on generated logs (property)", () => {
    const line = fc.constantFrom("", "  ", "build ok", "step 1 ok", "step 22 ok", "error: failed", "x 7 y", "x 8 y");
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 40 }), (lines) => {
        const text = lines.join("\n");
        const backward = skim(text, 0, text.length, Number.POSITIVE_INFINITY, true)
          .entries.map((e) => e.text)
          .reverse()
          .join("\n");
        expect(backward).to.equal(collapsedWhole(text));
      }),
      { numRuns: 300 },
    );
  });

  it("counts every line a cut took, look-alike runs included", () => {
    const limits = CONTEXT_LEVELS.aggressive;
    const varied = (n: number, tag: string) =>
      Array.from({ length: n }, (_, i) => `${tag} ${"abcdefghij"[i % 10]?.repeat(1 + (i % 7))} handled`);
    const similar = Array.from({ length: 500 }, (_, i) => `progress ${i} of 500`);
    const lines = [...varied(100, "head"), ...similar, ...varied(100, "tail")];
    const out = shortenLines(lines.join("\n"), { limits }).split("\n");
    const counted = out.map((l) => /^\[terse: (\d+) (?:similar )?lines omitted\]$/.exec(l)).filter((m) => m !== null);
    const shown = out.filter((l) => !l.startsWith("[terse: ")).length;
    expect(counted.reduce((n, m) => n + Number(m[1]), 0) + shown).to.equal(lines.length);
  });

  it("keeps error lines from the middle, of a run of look-alike errors only its first and last", () => {
    const filler = (n: number, tag: string) =>
      Array.from({ length: n }, (_, i) => `${tag} ${"abcdefghij"[i % 10]?.repeat(1 + (i % 7))} handled`);
    const errors = Array.from({ length: 50 }, (_, i) => `test_${i} FAILED: expected ${i}`);
    const lines = [
      ...filler(200, "a"),
      ...errors,
      ...filler(200, "b"),
      "fatal: cannot open db.sqlite",
      ...filler(200, "c"),
    ];
    const out = shortenLines(lines.join("\n"), { limits: CONTEXT_LEVELS.standard });
    expect(out).to.include("test_0 FAILED: expected 0");
    expect(out).to.include("test_49 FAILED: expected 49");
    expect(out).not.to.include("test_1 FAILED");
    expect(out).to.include("fatal: cannot open db.sqlite");
  });
});
