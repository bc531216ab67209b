import { seededRandom } from "@terse/testkit";
import { expect } from "chai";
import { CONTEXT_LEVELS } from "../src/context/levels.ts";
import { shortenResult } from "../src/context/shorten.ts";
import { INDEX_NOTE, indexBudget, spanIndex } from "../src/context/span-index.ts";
import { compressRequest } from "../src/index.ts";
import { contextSettings } from "./settings.ts";

// The index of a cut: the names of what went, listed once each beside the cut. An agent goes
// back to names it saw anywhere in a long output, so the whole cut is read, not its ends.

const standard = CONTEXT_LEVELS.standard;
const indexOf = (text: string) => text.split("\n").find((l) => l.includes(INDEX_NOTE));
const listed = (index: string) =>
  index
    .slice(index.indexOf(INDEX_NOTE) + INDEX_NOTE.length)
    .replace(/\]"?,?$/, "")
    .split(" ");

/** A build log of `lines` lines drawn from a small vocabulary, as long logs repeat themselves. */
function buildLog(lines: number, seed = 7): string[] {
  const rnd = seededRandom(seed);
  const steps = ["compiling", "linking", "checking", "bundling"];
  return Array.from(
    { length: lines },
    (_, i) => `[${String(i % 60).padStart(2, "0")}:00] ${steps[Math.floor(rnd() * steps.length)]} module ${i % 40}`,
  );
}

/** The text of a message's first tool result. */
const resultText = (message: unknown) =>
  ((message as { content?: { content?: string }[] } | undefined)?.content ?? [])[0]?.content ?? "";

describe("the index of a cut", () => {
  it("lists a name from the middle of a long log, far from the kept head and tail", () => {
    const lines = buildLog(20_000); // ~600 KB
    lines[10_000] = "wrote coverage report to reports/cov/summary_final.xml for checkout_flow";
    const text = lines.join("\n");
    const out = shortenResult(text, { limits: standard, command: "make" });
    expect(out.length).to.be.below(text.length / 10);
    const index = indexOf(out);
    expect(index, "the index line").to.be.a("string");
    expect(listed(index as string)).to.include.members(["reports/cov/summary_final.xml", "checkout_flow", "coverage"]);
  });

  it("lists paths and compound names before plain words when the budget runs short", () => {
    const words = Array.from({ length: 3_000 }, (_, i) => `plainword${String.fromCharCode(97 + (i % 26))}${i}`);
    const omitted = words.map((w, i) => `${w.replace(/\d+$/, "")} src/pkg_${i}/mod_${i}.ts`).join("\n");
    const index = spanIndex(omitted, "", 2_000) as string;
    const names = listed(index);
    expect(index.length).to.be.at.most(2_000 + INDEX_NOTE.length + 1);
    expect(names[0]).to.equal("src/pkg_0/mod_0.ts");
    // The budget went to paths: no plain word made it.
    expect(names.every((n) => n.includes("/"))).to.equal(true);
  });

  it("leaves out what the kept text already shows, and common function words", () => {
    const index = spanIndex("through parse_config the tests/test_io.py whose", "kept parse_config", 500) as string;
    expect(listed(index)).to.deep.equal(["tests/test_io.py"]);
    expect(spanIndex("about", "", 500)).to.equal(undefined);
    expect(spanIndex("src/a/b.ts", "", 0)).to.equal(undefined);
  });

  it("leaves out the names the conversation showed before the result, and nothing that only a later one shows", () => {
    const log = (names: string[], seed: number) => {
      const lines = buildLog(3_000, seed);
      names.forEach((n, i) => {
        lines[1_000 + i * 50] = `note: ${n} was touched`;
      });
      return lines.join("\n");
    };
    const earlier = ["src/shared/early_name.ts", "shared_early_symbol"];
    const own = ["src/own/late_name.ts", "own_late_symbol"];
    const call = (id: string) => ({
      role: "assistant",
      content: [{ type: "tool_use", id, name: "bash", input: { command: "make" } }],
    });
    const result = (id: string, text: string) => ({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: id, content: text }],
    });
    const messages = [
      { role: "user", content: "Build it." },
      call("a"),
      result("a", `short output naming ${earlier.join(" ")}`),
      call("b"),
      result("b", log([...earlier, ...own], 3)),
    ];
    const body = { model: "claude-test", max_tokens: 100, messages };
    const out = compressRequest("anthropic", body, contextSettings("standard")).body as typeof body;
    const index = indexOf(resultText(out.messages[4])) as string;
    expect(index, "the index line").to.be.a("string");
    expect(listed(index)).to.include.members(own);
    for (const name of earlier) expect(listed(index)).not.to.include(name);
    // Without the earlier result, the same output lists them: the test can fail.
    const alone = { ...body, messages: [messages[0], call("b"), result("b", log([...earlier, ...own], 3))] };
    const outAlone = compressRequest("anthropic", alone, contextSettings("standard")).body as typeof body;
    const indexAlone = indexOf(resultText(outAlone.messages[2])) as string;
    expect(listed(indexAlone)).to.include.members([...earlier, ...own]);
  });

  it("reads a long text of lines that seldom repeat (a listing) whole, the names after its first lines included", () => {
    const listing = Array.from(
      { length: 2_000 },
      (_, i) => `-rw-r--r-- 1 dev staff ${1_000 + i} Nov 24 src/pkg_${i}/mod.ts`,
    );
    listing.push("-rw-r--r-- 1 dev staff 9 Nov 24 src/zz_last_entry.ts");
    const index = spanIndex(listing.join("\n"), "", 200_000) as string;
    expect(listed(index)).to.include.members(["src/pkg_0/mod.ts", "src/pkg_1999/mod.ts", "src/zz_last_entry.ts"]);
  });

  it("grows with the cut, a fifth of it, to a ceiling", () => {
    expect(indexBudget(2_000, 10_000)).to.equal(4_000);
    expect(indexBudget(2_000, 10_000_000)).to.equal(66_000);
    expect(indexBudget(0, 10_000)).to.equal(0);
  });
});

describe("the index of a JSON result", () => {
  const items = (prefix: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({ id: i, path: `${prefix}/module_${i}/index.ts`, owner: "team_payments" }));

  it("is one list for the whole result, beside its first cut, and the JSON stays valid", () => {
    const text = JSON.stringify({ open: items("pkg", 12), closed: items("lib", 12) }, null, 2);
    const out = shortenResult(text, { limits: CONTEXT_LEVELS.aggressive });
    const parsed = JSON.parse(out) as { open: string[]; closed: string[] };
    const kept = CONTEXT_LEVELS.aggressive.jsonArrayItems;
    expect(parsed.open[kept]).to.match(/^\[terse: \d+ more items omitted\]$/);
    const index = parsed.open[kept + 1] as string;
    expect(index.startsWith(INDEX_NOTE)).to.equal(true);
    // Both arrays' omitted paths, in one list; the second array has its marker and no list of its own.
    expect(listed(index)).to.include.members(["pkg/module_11/index.ts", "lib/module_11/index.ts"]);
    expect(parsed.closed.filter((v) => typeof v === "string" && v.startsWith(INDEX_NOTE))).to.have.length(0);
    expect(out.split(INDEX_NOTE)).to.have.length(2);
  });

  it("names what a string's lines name, not the JSON escape before them", () => {
    // A CI API's runs, each with its log: the log's lines are escaped newlines in the JSON text.
    const runs = Array.from({ length: 30 }, (_, i) => ({
      id: i,
      log: Array.from({ length: 4 }, (_, j) => `src/mod_${i}_${j}.py passed`).join("\n"),
    }));
    const out = JSON.parse(shortenResult(JSON.stringify({ runs }), { limits: CONTEXT_LEVELS.aggressive })) as {
      runs: unknown[];
    };
    const index = out.runs.find((v) => typeof v === "string" && v.startsWith(INDEX_NOTE)) as string;
    const names = listed(index);
    expect(names).to.include.members(["src/mod_20_0.py", "src/mod_20_3.py"]);
    expect(names.filter((n) => /^n(?:src|passed)/.test(n))).to.deep.equal([]);
  });

  it("is one budget for the whole result: a main string cut as lines brings the only index", () => {
    // `gh issue view --json body`: most of the result is one string, cut as lines with its own index.
    const body = Array.from({ length: 400 }, (_, i) => `src/app_${i}.py fails at line ${i}: "check_${i}"`).join("\n");
    const text = JSON.stringify({ number: 4711, body, labels: ["bug"] });
    const out = JSON.parse(shortenResult(text, { limits: standard })) as { body: string };
    const indexes = out.body.split("\n").filter((l) => l.startsWith(INDEX_NOTE));
    expect(indexes).to.have.length(1);
    expect(listed(indexes[0] as string)).to.include("src/app_200.py");
    expect((indexes[0] as string).length).to.be.at.most(
      indexBudget(standard.keepNames, text.length) + INDEX_NOTE.length,
    );
  });

  it("follows as the last line when the structure alone is still too long and the JSON is cut as lines", () => {
    const big = Array.from({ length: 400 }, (_, i) => ({
      id: i,
      body: `step ${i} ran checks on services/api_${i}/handler.go `.repeat(20),
    }));
    const text = JSON.stringify({ runs: big, note: "x".repeat(10) }, null, 2);
    const out = shortenResult(text, { limits: CONTEXT_LEVELS.conservative });
    expect(out.length).to.be.below(text.length);
    const last = out.split("\n").at(-1) as string;
    expect(last.startsWith(INDEX_NOTE)).to.equal(true);
    expect(listed(last)).to.include("services/api_399/handler.go");
  });
});
