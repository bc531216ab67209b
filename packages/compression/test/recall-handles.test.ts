import { createHash } from "node:crypto";
import { seededRandom } from "@terse/testkit";
import { expect } from "chai";
import { type CompressionSettings, compressRequest, forgetRemembered, recallHandleOf } from "../src/index.ts";
import { contextSettings } from "./settings.ts";

// Every cut names the recall handle of its original and, where the cut is whole lines,
// which lines of the original it stands for; the originals come back with the result.

const withRecall = (level: CompressionSettings["context_compress_level"]): CompressionSettings => ({
  ...contextSettings(level),
  recall: true,
});

/** A log whose every line is unique, so that a range can be checked line by line. */
const varied = (lines: number) =>
  Array.from({ length: lines }, (_, i) => `${"abcdefghij"[i % 10]?.repeat(1 + (i % 7))} event ${i} handled`).join("\n");

const session = (results: string[]) => ({
  model: "claude-test",
  max_tokens: 100,
  messages: results.flatMap((r, i) => [
    {
      role: "assistant",
      content: [{ type: "tool_use", id: `toolu_${i}`, name: "Bash", input: { command: `run ${i}` } }],
    },
    { role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${i}`, content: r }] },
  ]),
});

const resultOf = (body: unknown, i: number): string =>
  (body as { messages: { content: { content: string }[] }[] }).messages[2 * i + 1]?.content[0]?.content ?? "";

const MARKER = /\[terse: [^\]]*?; recall ([0-9a-f]{12})(?: lines (\d+)-(\d+))?\]/g;
const markersIn = (text: string) =>
  [...text.matchAll(MARKER)].map((m) => ({ handle: m[1], from: Number(m[2]), to: Number(m[3]) }));

describe("recall handles in cut markers", () => {
  beforeEach(() => forgetRemembered());

  it("names the handle and the exact lines each cut of a log stands for, and returns the original under that handle", () => {
    const original = varied(3_000);
    const out = compressRequest("anthropic", session([original]), withRecall("standard"));
    const shown = resultOf(out.body, 0);
    const markers = markersIn(shown);
    expect(markers).to.have.length.greaterThan(0);
    const handle = recallHandleOf(createHash("sha1").update(original).digest("base64"));
    const lines = original.split("\n");
    const shownLines = new Set(shown.split("\n"));
    for (const m of markers) {
      expect(m.handle).to.equal(handle);
      expect(m.from).to.be.within(1, m.to);
      // The lines named are cut (none is shown), and the lines either side of the range are shown.
      for (let n = m.from; n <= m.to; n++) expect(shownLines.has(lines[n - 1] as string), `line ${n}`).to.equal(false);
      expect(shownLines.has(lines[m.from - 2] as string)).to.equal(true);
      expect(shownLines.has(lines[m.to] as string)).to.equal(true);
    }
    expect([...(out.cuts ?? new Map()).entries()]).to.deep.equal([[handle, original]]);
  });

  it("names the handle in a reference to an earlier copy, and in a marker inside a JSON array", () => {
    const repeated = varied(1_000);
    const json = JSON.stringify(
      { items: Array.from({ length: 500 }, (_, i) => ({ id: i, name: `item ${i}` })) },
      null,
      2,
    );
    const out = compressRequest("anthropic", session([repeated, repeated, json]), withRecall("standard"));
    const reference = resultOf(out.body, 1);
    expect(reference).to.match(
      /^\[terse: same output as tool result toolu_0 above \(\d+ characters\); recall [0-9a-f]{12}/,
    );
    const shortened = resultOf(out.body, 2);
    expect(() => JSON.parse(shortened)).not.to.throw();
    expect(shortened).to.match(/more items omitted; recall [0-9a-f]{12}\]/);
    expect(out.cuts?.size).to.equal(2); // the repeated text once (content-addressed), the JSON once
  });

  it("names the handle in the marker of a JSON result's main string cut as a log, which says how to see it all", () => {
    const log = Array.from({ length: 300 }, (_, i) => `step ${i}: ${["fetch", "build", "lint", "test"][i % 4]} done`);
    const json = JSON.stringify({ number: 4, title: "CI log", body: log.join("\n") }, null, 2);
    const shown = resultOf(compressRequest("anthropic", session([json]), withRecall("standard")).body, 0);
    const body = (JSON.parse(shown) as { body: string }).body;
    expect(body).to.match(/\[terse: \d+ lines omitted; `run 0` shows all; recall [0-9a-f]{12}\]/);
    const cuts = [...shown.matchAll(/\[terse: (?!the omitted part mentions)/g)].length;
    expect(cuts).to.be.greaterThan(0);
    expect(markersIn(shown)).to.have.length(cuts);
  });

  it("names the handle but no lines in the one marker of a diff's context lines, cut from every hunk", () => {
    const diff = ["diff --git a/app.py b/app.py", "index 3f2a9c0..1b7e2d4 100644", "--- a/app.py", "+++ b/app.py"];
    for (let h = 0; h < 30; h++)
      diff.push(
        `@@ -${h * 20 + 1},5 +${h * 20 + 1},5 @@ def handler_${h}(request):`,
        `     context line one of hunk ${h}`,
        `-    old_value_${h} = compute(${h})`,
        `+    new_value_${h} = compute(${h} + 1)`,
        `     context line two of hunk ${h}`,
      );
    const shown = resultOf(compressRequest("anthropic", session([diff.join("\n")]), withRecall("standard")).body, 0);
    expect(shown).not.to.include("context line one");
    expect(shown).to.match(
      /^\[terse: 60 unchanged context lines and 1 `index` line omitted throughout; `run 0` shows all; recall [0-9a-f]{12}\]$/m,
    );
    // No range: the lines it stands for are in every hunk, not one run.
    for (const m of markersIn(shown)) expect(m.from).to.be.NaN;
  });

  it("cuts no gap its named marker costs more than: separator lines between error lines stay", () => {
    const rows = Array.from({ length: 40 }, (_, i) => `row ${i}: ${"=".repeat(60)}`);
    const middle = Array.from({ length: 120 }, (_, i) => (i % 2 ? "-".repeat(40) : `E${i}: error`));
    const original = [...rows, ...middle, ...rows].join("\n");
    const shown = resultOf(compressRequest("anthropic", session([original]), withRecall("aggressive")).body, 0);
    expect(shown.length).to.be.below(original.length);
    expect(shown).to.include(middle.join("\n"));
    const lines = original.split("\n");
    for (const m of shown.matchAll(MARKER)) {
      if (m[2] === undefined) continue;
      const stands = lines.slice(Number(m[2]) - 1, Number(m[3])).join("\n");
      expect(stands.length, m[0]).to.be.above(m[0].length);
    }
  });

  it("never makes a result longer, markers named (property, seeded logs of short runs, separators and errors)", () => {
    const rnd = seededRandom(11);
    const pieces = [
      () => Array.from({ length: 5 + Math.floor(rnd() * 4) }, (_, i) => `ok ${i}`).join("\n"),
      () => "-".repeat(Math.floor(rnd() * 60)),
      () => `E${Math.floor(rnd() * 1000)}: error in step`,
      () => `building module_${Math.floor(rnd() * 100)} (${"x".repeat(Math.floor(rnd() * 200))})`,
    ];
    for (let round = 0; round < 40; round++) {
      const original = Array.from({ length: 40 + Math.floor(rnd() * 300) }, () =>
        (pieces[Math.floor(rnd() * pieces.length)] as () => string)(),
      ).join("\n");
      for (const level of ["standard", "aggressive"] as const) {
        const shown = resultOf(compressRequest("anthropic", session([original]), withRecall(level)).body, 0);
        expect(shown.length, `round ${round} ${level}`).to.be.at.most(original.length);
      }
    }
  });

  it("leaves markers plain and returns no originals when recall is off", () => {
    const out = compressRequest("anthropic", session([varied(3_000)]), contextSettings("standard"));
    expect(resultOf(out.body, 0)).to.match(/\[terse: \d+ lines omitted/);
    expect(resultOf(out.body, 0)).not.to.include("; recall ");
    expect(out.cuts).to.equal(undefined);
  });

  it("names the same handles in every turn of a session (prefix stability), from memory or cold", () => {
    const results = [varied(3_000), varied(2_500), varied(4_000)];
    const first = resultOf(compressRequest("anthropic", session(results.slice(0, 2)), withRecall("standard")).body, 0);
    const next = compressRequest("anthropic", session(results), withRecall("standard"));
    expect(resultOf(next.body, 0)).to.equal(first);
    expect(next.cuts?.size).to.equal(3); // results answered from the last turn's trail are returned too
    forgetRemembered();
    expect(resultOf(compressRequest("anthropic", session(results), withRecall("standard")).body, 0)).to.equal(first);
  });

  it("does not mix the forms with and without handles (one remembered work per mode)", () => {
    const results = [varied(3_000)];
    const plain = resultOf(compressRequest("anthropic", session(results), contextSettings("standard")).body, 0);
    const named = resultOf(compressRequest("anthropic", session(results), withRecall("standard")).body, 0);
    expect(named).not.to.equal(plain);
    expect(resultOf(compressRequest("anthropic", session(results), contextSettings("standard")).body, 0)).to.equal(
      plain,
    );
  });
});
