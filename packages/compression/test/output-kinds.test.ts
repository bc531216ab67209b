import { seededRandom } from "@terse/testkit";
import { splitObservation } from "@terse/wire-formats";
import { expect } from "chai";
import fc from "fast-check";
import { ENVIRONMENT_DETAILS, HEADED_SHAPES, SHAPES } from "../../wire-formats/test/observation-shapes.ts";
import { kindOf, programOf, viewedFile } from "../src/context/kinds.ts";
import { type CompressionSettings, compressRequest, type Provider } from "../src/index.ts";
import { contextSettings } from "./settings.ts";

// Results are shortened by the kind of output they are, so that the names an agent goes
// on to use survive; and a text-protocol observation (a user message in mini-swe-agent's
// `<returncode>`/`<output>` shape answering a fenced command) is compressed like a tool
// result, while anything a person typed stays as typed.

/** One tool call and its result, Anthropic format; the result's text after compression. */
function compressOne(
  command: string | Record<string, unknown>,
  output: string,
  level: CompressionSettings["context_compress_level"] = "standard",
  tool = "bash",
) {
  const input = typeof command === "string" ? { command } : command;
  const body = {
    model: "claude-test",
    max_tokens: 100,
    messages: [
      { role: "user", content: "Fix the bug." },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: tool, input }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: output }] },
    ],
  };
  const out = compressRequest("anthropic", body, contextSettings(level)).body as typeof body;
  const blocks = (out.messages[2]?.content ?? []) as { content: string }[];
  return blocks[0]?.content ?? "";
}

const WORDS = ["cache", "router", "session", "parser", "models", "fields", "loader", "utils", "views", "query"];

/** Python-like source of `n` lines with a definition every 12 lines. */
function source(n: number, rnd: () => number): string[] {
  const pick = () => WORDS[Math.floor(rnd() * WORDS.length)] as string;
  return Array.from({ length: n }, (_, i) =>
    i % 12 === 0
      ? `def handle_${pick()}_${i}(self, request, *args):`
      : `    value_${i} = self.${pick()}.lookup(request, "${pick()}", ${i})  # keep ${pick()} in step`,
  );
}

describe("output kinds", () => {
  it("tells the kind from the command, and from the text where no command says", () => {
    expect(programOf("cd /testbed && grep -rn foo src | head -50")).to.equal("grep");
    expect(programOf("git diff HEAD~1")).to.equal("git-diff");
    expect(kindOf("src/a.py:12:def foo():\nsrc/b.py:40:    foo()\n")).to.equal("listing");
    expect(kindOf("./a/b.py\n./a/c.py\n./d/e.py\n")).to.equal("listing");
    expect(kindOf("     1\timport os\n     2\t\n     3\tdef f():\n     4\t    pass\n     5\t")).to.equal("file-view");
    expect(kindOf("import os\n\ndef f():\n    pass\n", "cat src/f.py")).to.equal("file-view");
    expect(kindOf("diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n")).to.equal("diff");
    expect(kindOf("============ test session starts ============\ncollected 3 items\n")).to.equal("log");
    // A log file shown by a viewer is a log, not a file's view.
    for (const command of ["cat build.log", "tail -n 200 /tmp/pytest.out", "cd /w && head -100 logs/stderr.err"])
      expect(kindOf("collecting ...\nbuilding module_1 ... ok\n", command), command).to.equal("log");
    expect(kindOf("[metadata]\nname = app\n", "cat setup.cfg")).to.equal("file-view");
    expect(viewedFile("nl -ba django/db/models/query.py | sed -n '120,260p'")).to.deep.equal({
      path: "django/db/models/query.py",
      firstLine: 120,
    });
    expect(viewedFile("sed -n '40,90p' /testbed/django/db/models/query.py")).to.deep.equal({
      path: "/testbed/django/db/models/query.py",
      firstLine: 40,
    });
    expect(viewedFile("cat -n ~/src/app.py")).to.deep.equal({ path: "~/src/app.py" });
    expect(viewedFile("cat ./setup.cfg")).to.deep.equal({ path: "./setup.cfg", firstLine: 1 });
  });

  it("a log file shown by a viewer keeps its errors, as the run's own output does", () => {
    const log = Array.from(
      { length: 600 },
      (_, i) =>
        `building ${WORDS[i % 10]}/${WORDS[(i * 3) % 10]}_module_${i}.py into the ${WORDS[(i * 7) % 10]} bundle ... ${i === 450 ? "FAILED: no module named yaml" : "ok"}`,
    ).join("\n");
    for (const command of ["cat build.log", "tail -n 600 /tmp/build.log"]) {
      const out = compressOne(command, log);
      expect(out.length, command).to.be.below(log.length / 3);
      expect(out, command).to.include(
        "cache/cache_module_450.py into the cache bundle ... FAILED: no module named yaml",
      );
    }
  });

  it("a listing keeps every distinct path (property, seeded cases)", () => {
    const rnd = seededRandom(7);
    for (let round = 0; round < 20; round++) {
      const paths = Array.from(
        { length: 60 + Math.floor(rnd() * 200) },
        (_, i) => `pkg/${WORDS[i % WORDS.length]}/sub_${Math.floor(rnd() * 40)}/file_${i}.py`,
      );
      const hits = paths.flatMap((p, i) => [
        `${p}:${10 + i}:    result = ${WORDS[i % 10]}.lookup(request, key_${i})  ${"# a long trailing comment ".repeat(1 + (i % 4))}`,
        `${p}:${200 + i}:    return result`,
      ]);
      const out = compressOne("grep -rn lookup pkg", hits.join("\n"), "aggressive");
      expect(out.length, "shortened").to.be.below(hits.join("\n").length);
      for (const p of paths) expect(out, `round ${round}`).to.include(p);
    }
  });

  it("`ls -l` keeps the names, and one marker says the other columns of every line went and how to see them", () => {
    const ls = Array.from(
      { length: 80 },
      (_, i) =>
        `-rwxr-x---  1 deploy staff ${String(1000 + i * 37).padStart(6)} Jan ${1 + (i % 28)} 12:0${i % 10} file_${i}.py`,
    );
    const out = compressOne("ls -la", ["total 320", ...ls].join("\n"), "standard").split("\n");
    expect(out.slice(0, 3)).to.deep.equal(["total 320", "file_0.py", "file_1.py"]);
    expect(out.filter((l) => l.startsWith("[terse: "))).to.deep.equal([
      "[terse: the mode, owner, size and date of 80 long-listed files omitted throughout; `ls -la` shows all]",
    ]);
  });

  it("a file view keeps its definitions with their line numbers, and says how to view a cut range again", () => {
    const lines = source(700, seededRandom(3));
    const out = compressOne("sed -n '100,999p' app/handlers.py", lines.join("\n"), "standard");
    expect(out.length).to.be.below(lines.join("\n").length / 3);
    let numbered = 0;
    for (const [i, line] of lines.entries()) {
      if (!line.startsWith("def ")) continue;
      // Kept as it is in the head and tail; from the middle with its file line number (the
      // view starts at file line 100: view line i is file line 100 + i).
      expect(out).to.include(line);
      if (out.includes(`${100 + i}: ${line}`)) numbered++;
    }
    expect(numbered).to.be.greaterThan(40);
    expect(out).to.match(/\[terse: lines (\d+)-(\d+) omitted; sed -n \1,\2p app\/handlers\.py\]/);
  });

  it("a numbered file view keeps its own numbers", () => {
    const lines = source(400, seededRandom(5)).map((l, i) => `${String(i + 1).padStart(6)}\t${l}`);
    const out = compressOne("nl -ba app/views.py", lines.join("\n"), "standard");
    for (const line of lines) if (line.includes("\tdef ")) expect(out).to.include(line);
    expect(out).to.match(/\[terse: lines \d+-\d+ omitted; sed -n \d+,\d+p app\/views\.py\]/);
  });

  it("a test run keeps the failing tests' names and the error lines", () => {
    const passed = Array.from({ length: 400 }, (_, i) => `tests/test_models.py::test_case_${i} PASSED`);
    passed[150] = "tests/test_models.py::test_ordering_nulls_last FAILED";
    passed[300] = "E       AssertionError: assert 'NULLS LAST' in sql";
    const text = [
      "============================= test session starts ==============================",
      ...passed,
      "=========================== short test summary info ============================",
      "FAILED tests/test_models.py::test_ordering_nulls_last - AssertionError",
      "========================= 1 failed, 398 passed in 3.21s =========================",
    ].join("\n");
    const out = compressOne("python -m pytest tests/test_models.py -v", text, "aggressive");
    expect(out.length).to.be.below(text.length / 3);
    expect(out).to.include("tests/test_models.py::test_ordering_nulls_last FAILED");
    expect(out).to.include("AssertionError: assert 'NULLS LAST' in sql");
    expect(out).to.include("1 failed, 398 passed");
    expect(out).to.include("`python -m pytest tests/test_models.py -v` shows all");
  });

  it("a call's command is read as each agent writes it: a line, an argv (Codex CLI's shell), or `cmd`", () => {
    const run = Array.from({ length: 400 }, (_, i) => `tests/test_models.py::test_case_${i} PASSED`).join("\n");
    const forms: [Record<string, unknown>, string][] = [
      [{ command: "python -m pytest tests -k 'nulls last'" }, "python -m pytest tests -k 'nulls last'"],
      [
        { command: ["bash", "-lc", "python -m pytest tests -k 'nulls last'"] },
        "python -m pytest tests -k 'nulls last'",
      ],
      [{ command: ["/bin/zsh", "-c", "python -m pytest tests"] }, "python -m pytest tests"],
      [{ command: ["python", "-m", "pytest", "tests", "-k", "nulls last"] }, "python -m pytest tests -k 'nulls last'"],
      [{ command: ["pytest", "-k", "it's"] }, "pytest -k 'it'\\''s'"],
      [{ cmd: "python -m pytest tests", workdir: "/repo" }, "python -m pytest tests"],
      [{ commands: ["python -m pytest tests"] }, "python -m pytest tests"],
    ];
    for (const [input, line] of forms) {
      expect(compressOne(input, run), JSON.stringify(input)).to.include(`\`${line}\` shows all`);
    }
    // Not a command: the marker names none, and nothing breaks. An editor's verb is no shell command either.
    const notCommands = [
      { command: [] },
      { command: ["ls", 3] },
      { cmd: 7 },
      { path: "a.py" },
      { command: "view", path: "/r/a.log" },
      { commands: ["python -m pytest tests", "git status"] },
    ];
    for (const input of notCommands) {
      const out = compressOne(input, run);
      expect(out.length, JSON.stringify(input)).to.be.below(run.length / 2);
      expect(out).not.to.include("shows all");
    }
  });

  it("a file read without a shell (Read, read_file, an editor's view) names the file in its cut", () => {
    const view = source(700, seededRandom(11))
      .map((l, i) => `${String(i + 1).padStart(6)}→${l}`)
      .join("\n");
    const reads: Record<string, unknown>[] = [
      { file_path: "/repo/app/handlers.py" },
      { file_path: "/repo/app/handlers.py", offset: 1, limit: 2000 },
      { absolute_path: "/repo/app/handlers.py" },
      { command: "view", path: "/repo/app/handlers.py" },
      { command: "view", path: "/repo/app/handlers.py", view_range: [1, 700] },
    ];
    for (const input of reads) {
      const out = compressOne(input, view);
      expect(out.length, JSON.stringify(input)).to.be.below(view.length / 3);
      expect(out, JSON.stringify(input)).to.match(
        /\[terse: lines (\d+)-(\d+) omitted; sed -n \1,\2p \/repo\/app\/handlers\.py\]/,
      );
    }
    // A search, a write, an edit and a directory's view read no one file: no file is named.
    const others: Record<string, unknown>[] = [
      { pattern: "def handle", path: "/repo/app/handlers.py" },
      { file_path: "/repo/app/handlers.py", content: "x" },
      { file_path: "/repo/app/handlers.py", old_string: "a", new_string: "b" },
      { command: "view", path: "/repo/app" },
      { command: "create", path: "/repo/app/handlers.py", file_text: "x" },
    ];
    for (const input of others) expect(compressOne(input, view), JSON.stringify(input)).not.to.include("sed -n");
    // The lines of an unnumbered read are not guessed: a tool may put a notice before them.
    const plain = source(700, seededRandom(12)).join("\n");
    const out = compressOne({ file_path: "/repo/app/handlers.py" }, `[showing lines 101-800]\n${plain}`);
    expect(out.length).to.be.below(plain.length / 3);
    expect(out).not.to.match(/lines \d+-\d+ omitted/);
  });

  it("other agents' read tools are file reads by their names: a file they read is spared as a view is", () => {
    // 8,000 characters of unnumbered source: over `standard`'s 3,000 for a log, under its
    // 12,000 for a file view (a cut view makes the agent read the file again).
    const file = source(110, seededRandom(15)).join("\n");
    expect(file.length).to.be.within(6_000, 11_000);
    const reads: [string, Record<string, unknown>][] = [
      ["read_file", { path: "app/handlers.py", task_progress: "- [x] read the handlers" }], // Cline 3
      ["read_file", { path: "app/handlers.py", start_line: 1, end_line: 110 }], // Cline 3.77, Zed
      ["read", { filePath: "/repo/app/handlers.py", offset: 1, limit: 2000 }], // OpenCode
      ["read_file", { filepath: "app/handlers.py" }], // Continue
      ["read_file_range", { filepath: "app/handlers.py", startLine: 1, endLine: 110 }], // Continue
      ["mcp__filesystem__read_text_file", { path: "/repo/app/handlers.py" }], // the MCP filesystem server
      ["read_file", { files: [{ path: "app/handlers.py", line_ranges: null }] }], // Roo Code 3.3x
      ["read_files", { files: [{ path: "app/handlers.py" }] }], // Cline 4
      ["Read", { file_path: "/repo/app/handlers.py" }], // Claude Code
    ];
    for (const [tool, input] of reads)
      expect(compressOne(input, file, "standard", tool), `${tool} ${JSON.stringify(input)}`).to.equal(file);
    // The same arguments under a listing's, an outline's or a search's name, and a read of
    // several files, are no read of one file: the text is cut as any output is.
    const others: [string, Record<string, unknown>][] = [
      ["list_files", { path: "app/handlers.py", task_progress: "- [x] list" }],
      ["list_code_definition_names", { path: "app/handlers.py" }],
      ["search_files", { path: "app", regex: "def handle" }],
      ["read_file", { files: [{ path: "app/handlers.py" }, { path: "app/models.py" }] }],
      ["read_file", { task_progress: "- [ ] read" }],
      ["bash", { path: "app/handlers.py" }],
    ];
    for (const [tool, input] of others)
      expect(compressOne(input, file, "standard", tool).length, `${tool} ${JSON.stringify(input)}`).to.be.below(
        file.length / 2,
      );
  });

  it("every agent's numbering of a file's lines is read: the view's cut names the file's lines", () => {
    const file = source(1_000, seededRandom(16));
    const styles: [string, (n: number, line: string) => string][] = [
      ["Roo Code, Kilo Code (padded)", (n, l) => `${String(n).padStart(4)} | ${l}`],
      ["Cline 3.77 (unpadded)", (n, l) => `${n} | ${l}`],
      ["OpenCode", (n, l) => `${n}: ${l}`],
      ["OpenCode before 1.1.5x", (n, l) => `${String(n).padStart(5, "0")}| ${l}`],
      ["Codex CLI's read_file", (n, l) => `L${n}: ${l}`],
      ["Zed, cat -n", (n, l) => `${String(n).padStart(6)}\t${l}`],
      ["Claude Code", (n, l) => `${String(n).padStart(6)}→${l}`],
    ];
    for (const [agent, numbered] of styles) {
      // Lines 201-900, as a ranged read shows them.
      const view = file.slice(200, 900).map((l, i) => numbered(201 + i, l));
      const text = view.join("\n");
      expect(kindOf(text), agent).to.equal("file-view");
      const out = compressOne({ path: "app/handlers.py" }, text, "standard", "read_file");
      expect(out.length, agent).to.be.below(text.length / 3);
      const cut = /\[terse: lines (\d+)-(\d+) omitted; sed -n \1,\2p app\/handlers\.py\]/.exec(out);
      expect(cut, agent).to.not.equal(null);
      // The range is the file's: the line kept before the cut is the one before its first.
      const from = Number(cut?.[1]);
      expect(from, agent).to.be.within(202, 900);
      const kept = out.slice(0, cut?.index).split("\n");
      expect(kept.filter((l) => l !== "" && !l.startsWith("[terse: ")).at(-1), agent).to.equal(
        numbered(from - 1, file[from - 2] as string),
      );
      // The definitions of the middle stay, with their own numbers.
      const middle = view.slice(150, 550).filter((l) => l.includes("def handle_"));
      expect(middle.filter((l) => out.includes(l)).length, agent).to.be.above(middle.length / 2);
    }
  });

  it("Cline's heading and Roo Code's report stay as sent, and the output is shortened as itself", () => {
    const file = source(900, seededRandom(17));
    const heading = "[read_file for 'app/handlers.py'] Result:\n";
    const text =
      heading +
      file
        .slice(100, 800)
        .map((l, i) => `${101 + i} | ${l}`)
        .join("\n");
    const out = compressOne({ path: "app/handlers.py", task_progress: "- [x] read" }, text, "standard", "read_file");
    expect(out.startsWith(heading)).to.equal(true);
    expect(out.length).to.be.below(text.length / 3);
    expect(out).to.match(/\[terse: lines (\d+)-(\d+) omitted; sed -n \1,\2p app\/handlers\.py\]/);
    // A JSON answer after a command's report is shortened as JSON, and stays JSON.
    const items = Array.from({ length: 400 }, (_, i) => ({ number: i, title: `issue title ${i}`, state: "open" }));
    const json = JSON.stringify({ total: 400, items }, null, 2);
    const reports: [string, Record<string, unknown>, string][] = [
      [
        "[execute_command for 'gh api repos/o/r/issues'] Result:\nCommand executed successfully (exit code 0).\nOutput:\n",
        { command: "gh api repos/o/r/issues", requires_approval: false },
        "execute_command",
      ],
      [
        "Command executed in terminal  within working directory '/ws'. Exit code: 0\nOutput:\n",
        { command: "gh api repos/o/r/issues", cwd: null },
        "execute_command",
      ],
    ];
    for (const [report, input, tool] of reports) {
      const answer = compressOne(input, report + json, "standard", tool);
      expect(answer.startsWith(report), report).to.equal(true);
      expect(answer.length).to.be.below((report + json).length / 3);
      const parsed = JSON.parse(answer.slice(report.length)) as { total: number; items: unknown[] };
      expect(parsed.total).to.equal(400);
    }
  });

  it("Codex CLI's report before an output stays, and the output is shortened as itself", () => {
    const report =
      "Chunk ID: a848c9\nWall time: 0.0100 seconds\nProcess exited with code 0\nOriginal token count: 9000\nOutput:\n";
    // A view of lines 101-800: the cut's range is the file's, not shifted by the report's lines.
    const file = source(900, seededRandom(14));
    const text = report + file.slice(100, 800).join("\n");
    const out = compressOne({ cmd: "sed -n 101,800p src/app/handlers.py" }, text);
    expect(out.length).to.be.below(text.length / 3);
    expect(out.startsWith(report)).to.equal(true);
    const cut = /\[terse: lines (\d+)-(\d+) omitted; sed -n \1,\2p src\/app\/handlers\.py\]/.exec(out);
    expect(cut, out.slice(0, 2_000)).to.not.equal(null);
    const from = Number(cut?.[1]);
    const kept = out.slice(0, cut?.index).split("\n");
    expect(kept.filter((l) => l !== "" && !l.startsWith("[terse: ")).at(-1)).to.equal(file[from - 2]);
    // A JSON answer after the report is shortened as JSON, and stays JSON.
    const items = Array.from({ length: 400 }, (_, i) => ({ number: i, title: `issue title ${i}`, state: "open" }));
    const json = JSON.stringify({ total: 400, items }, null, 2);
    const answer = compressOne({ cmd: "gh api repos/o/r/issues" }, report + json);
    expect(answer.startsWith(report)).to.equal(true);
    expect(answer.length).to.be.below((report + json).length / 3);
    const parsed = JSON.parse(answer.slice(report.length)) as { total: number; items: unknown[] };
    expect(parsed.total).to.equal(400);
    expect(parsed.items.some((i) => typeof i === "string" && /^\[terse: \d+ more items omitted/.test(i))).to.equal(
      true,
    );
  });

  it("an output an agent wraps in JSON is shortened as its own kind, and stays JSON", () => {
    // Cline's SDK (its CLI 3.0, as captured through the fake provider): every result a JSON
    // list of {query, result, success}. A file it reads is a view: spared up to the level's
    // bound for views, past it cut as one, its definitions kept with their line numbers.
    const rnd = seededRandom(11);
    const read = (lines: string[]) =>
      JSON.stringify([
        { query: "/repo/app/handlers.py", result: lines.map((l, i) => `${i + 1} | ${l}`).join("\n"), success: true },
      ]);
    const readCall = { files: [{ path: "/repo/app/handlers.py" }] };
    const short = read(source(120, rnd));
    expect(short.length).to.be.above(3_000).and.below(12_000);
    expect(compressOne(readCall, short, "standard", "read_files")).to.equal(short);
    const lines = source(900, rnd);
    const long = read(lines);
    const view = JSON.parse(compressOne(readCall, long, "standard", "read_files")) as { result: string }[];
    const cut = view[0]?.result ?? "";
    expect(cut.length).to.be.below(long.length / 3);
    let named = 0;
    for (const [i, line] of lines.entries()) if (line.startsWith("def ") && cut.includes(`${i + 1} | ${line}`)) named++;
    expect(named).to.be.greaterThan(40);
    // A command's listing keeps every distinct path.
    const paths = Array.from({ length: 150 }, (_, i) => `pkg/${WORDS[i % 10]}/sub_${i % 37}/file_${i}.py`);
    const hits = paths.map((p, i) => `${p}:${10 + i}:    result = ${WORDS[i % 10]}.lookup(request, key_${i})`);
    const grep = JSON.stringify([{ query: "grep -rn lookup pkg", result: hits.join("\n"), success: true }]);
    const listed = JSON.parse(
      compressOne({ commands: ["grep -rn lookup pkg"] }, grep, "aggressive", "run_commands"),
    ) as { result: string }[];
    expect(listed[0]?.result.length).to.be.below(hits.join("\n").length);
    for (const p of paths) expect(listed[0]?.result).to.include(p);
    // Codex CLI's result of old, {output, metadata}: a log, its error line kept.
    const log = Array.from({ length: 800 }, (_, i) =>
      i === 600
        ? "FAILED tests/test_api.py::test_limits - KeyError: 'quota'"
        : `tests/test_api.py::test_case_${i} PASSED`,
    );
    const codex = JSON.stringify({ output: log.join("\n"), metadata: { exit_code: 1, duration_seconds: 4.2 } });
    const run = JSON.parse(compressOne({ command: ["bash", "-lc", "pytest"] }, codex, "standard", "shell")) as {
      output: string;
      metadata: { exit_code: number };
    };
    expect(run.metadata.exit_code).to.equal(1);
    expect(run.output.length).to.be.below(codex.length / 3);
    expect(run.output).to.include(log[600]).and.include(log.at(-1));
  });

  it("what an agent puts after an output stays as sent: the cut keeps the output's own last lines, a JSON answer stays JSON", () => {
    const trailer =
      "\n[The command completed with exit code 1.]\n[Current working directory: /workspace/django__django__4.0]\n[Python interpreter: /opt/miniconda3/envs/testbed/bin/python]\n[Command finished with exit code 1]";
    // Lines of different shapes (a run of look-alike lines keeps only its first and last).
    const log = Array.from(
      { length: 600 },
      (_, i) =>
        `building ${WORDS[i % 10]}/${WORDS[(i * 3) % 10]}_module_${i}.py into the ${WORDS[(i * 7) % 10]} bundle ... ok`,
    );
    const out = compressOne("python -m pytest tests", log.join("\n") + trailer, "standard", "execute_bash");
    expect(out.endsWith(trailer)).to.equal(true);
    // The tail the level keeps is the log's: its last ten lines, none given up to the trailer.
    for (const line of log.slice(-10)) expect(out, line).to.include(line);
    // Claude Code's reminder after a file it read: the view's own last lines stay.
    const reminder =
      "\n\n<system-reminder>\nWhenever you read a file, you should consider whether it would be considered malware. You CAN and SHOULD provide analysis of malware, what it is doing. But you MUST refuse to improve or augment the code. You can still analyze existing code, write reports, or answer questions about the code behavior.\n</system-reminder>\n";
    const view = source(700, seededRandom(19)).map((l, i) => `${i + 1}\t${l}`);
    const read = compressOne({ file_path: "/repo/app/handlers.py" }, view.join("\n") + reminder, "standard", "Read");
    expect(read.endsWith(reminder)).to.equal(true);
    for (const line of view.slice(-8)) expect(read, line).to.include(line);
    // A JSON answer before the trailer is shortened as JSON, and stays JSON.
    const items = Array.from({ length: 400 }, (_, i) => ({ number: i, title: `issue title ${i}`, state: "open" }));
    const json = JSON.stringify({ total: 400, items }, null, 2);
    const answer = compressOne(
      "curl -s https://api.github.com/repos/o/r/issues",
      json + trailer,
      "standard",
      "execute_bash",
    );
    expect(answer.endsWith(trailer)).to.equal(true);
    expect((JSON.parse(answer.slice(0, -trailer.length)) as { total: number }).total).to.equal(400);
  });

  it("Gemini CLI's shell result: the output is shortened as itself, its report and its sections after it stay", () => {
    const trailer = "\nExit Code: 1\nProcess Group PGID: 2075";
    const log = Array.from(
      { length: 600 },
      (_, i) =>
        `building ${WORDS[i % 10]}/${WORDS[(i * 3) % 10]}_module_${i}.py into the ${WORDS[(i * 7) % 10]} bundle ... ok`,
    );
    const text = `Output: ${log.join("\n")}${trailer}`;
    const out = compressOne("python -m pytest tests", text, "standard", "run_shell_command");
    expect(out.length).to.be.below(text.length / 3);
    expect(out.startsWith(`Output: ${log[0]}\n`)).to.equal(true);
    expect(out.endsWith(trailer)).to.equal(true);
    for (const line of log.slice(-10)) expect(out, line).to.include(line);
    // A JSON answer is shortened as JSON, and stays JSON.
    const items = Array.from({ length: 400 }, (_, i) => ({ number: i, title: `issue title ${i}`, state: "open" }));
    const json = JSON.stringify({ total: 400, items }, null, 2);
    const answer = compressOne("gh api repos/o/r/issues", `Output: ${json}${trailer}`, "standard", "run_shell_command");
    expect(answer.length).to.be.below(json.length / 3);
    const inner = answer.slice("Output: ".length, -trailer.length);
    expect((JSON.parse(inner) as { total: number }).total).to.equal(400);
  });

  it("Gemini CLI's read_file of a part of a file: its cut names the file's lines, from the notice that says which", () => {
    const file = source(3_000, seededRandom(13));
    const part = file.slice(2_000, 2_700);
    // As Gemini CLI 0.61 words a part (read_file with start_line / end_line, or a file over its 2,000 lines).
    const text = [
      "",
      "IMPORTANT: The file content has been truncated.",
      "Status: Showing lines 2001-2700 of 3000 total lines.",
      "Action: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 2701.",
      "",
      "--- FILE CONTENT (truncated) ---",
      ...part,
    ].join("\n");
    for (const input of [
      { file_path: "/repo/app/handlers.py", start_line: 2001, end_line: 2700 },
      { absolute_path: "/repo/app/handlers.py", offset: 2000, limit: 700 },
    ]) {
      const out = compressOne(input, text);
      expect(out.length, JSON.stringify(input)).to.be.below(text.length / 3);
      const cut = /\[terse: lines (\d+)-(\d+) omitted; sed -n \1,\2p \/repo\/app\/handlers\.py\]/.exec(out);
      expect(cut, JSON.stringify(input)).to.not.equal(null);
      // The range is the file's: the lines it names are the ones the view left out, not those beside them.
      const [from, to] = [Number(cut?.[1]), Number(cut?.[2])];
      expect(from).to.be.within(2002, 2700);
      const kept = out.slice(0, cut?.index).split("\n");
      const before = kept.filter((l) => l !== "" && !l.startsWith("[terse: ")).at(-1);
      expect(before, "the line kept before the cut").to.equal(file[from - 2]);
      expect(out).not.to.include(file[from - 1] as string);
      expect(out).not.to.include(file[to - 1] as string);
    }
  });

  it("Gemini's calls without ids: each response is read as the call of its name in the same place", () => {
    const view = source(700, seededRandom(18))
      .map((l, i) => `${i + 1}\t${l}`)
      .join("\n");
    const run = Array.from({ length: 400 }, (_, i) => `tests/test_models.py::test_case_${i} PASSED`).join("\n");
    const call = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });
    const response = (name: string, output: string) => ({ functionResponse: { name, response: { output } } });
    const turn = [
      {
        role: "model",
        parts: [call("read_file", { file_path: "app/handlers.py" }), call("shell", { command: "pytest -q" })],
      },
      { role: "user", parts: [response("read_file", view), response("shell", run)] },
    ];
    const later = [
      { role: "model", parts: [call("shell", { command: "pytest -q tests/test_views.py" })] },
      { role: "user", parts: [response("shell", run.replaceAll("models", "views"))] },
    ];
    type Part = { functionResponse?: { response: { output: string } } };
    const outputsOf = (contents: unknown[]): string[] => {
      const body = {
        model: "gemini-test",
        contents: [{ role: "user", parts: [{ text: "Fix the bug." }] }, ...contents],
      };
      const out = compressRequest("gemini", body, contextSettings("standard")).body as {
        contents: { parts: Part[] }[];
      };
      return out.contents.flatMap((c) =>
        c.parts.flatMap((p) => (p.functionResponse ? [p.functionResponse.response.output] : [])),
      );
    };
    const [read, test] = outputsOf(turn);
    expect(read).to.match(/\[terse: lines (\d+)-(\d+) omitted; sed -n \1,\2p app\/handlers\.py\]/);
    expect(test).to.include("`pytest -q` shows all");
    // The session's next request: the same results as before, and the new one its own call's.
    const next = outputsOf([...turn, ...later]);
    expect(next.slice(0, 2)).to.deep.equal([read, test]);
    expect(next[2]).to.include("`pytest -q tests/test_views.py` shows all");
  });

  it("Gemini: a response whose bulk is one string beside others keeps its shape, that string shortened in place", () => {
    const run = Array.from({ length: 3_000 }, (_, i) => `tests/test_models.py::test_case_${i} PASSED`).join("\n");
    const call = { functionCall: { name: "shell", args: { command: "pytest -q" } } };
    const compressed = (response: Record<string, unknown>) => {
      const body = {
        model: "gemini-test",
        contents: [
          { role: "user", parts: [{ text: "Fix the bug." }] },
          { role: "model", parts: [call] },
          { role: "user", parts: [{ functionResponse: { name: "shell", response } }] },
        ],
      };
      const out = compressRequest("gemini", body, contextSettings("standard")).body as typeof body;
      const part = out.contents[2]?.parts[0] as { functionResponse: { response: Record<string, unknown> } } | undefined;
      return part?.functionResponse.response ?? {};
    };
    const beside = compressed({ output: run, exitCode: 1, stderr: "FAILED: test_x" });
    expect(Object.keys(beside)).to.deep.equal(["output", "exitCode", "stderr"]);
    expect(beside).to.include({ exitCode: 1, stderr: "FAILED: test_x" });
    expect(String(beside.output).length).to.be.below(run.length / 2);
    expect(beside.output).to.include("`pytest -q` shows all");
    const mcp = compressed({ content: [{ type: "text", text: run }] }) as { content: { type: string; text: string }[] };
    expect(mcp.content).to.have.length(1);
    expect(mcp.content[0]?.type).to.equal("text");
    expect(mcp.content[0]?.text.length).to.be.below(run.length / 2);
  });

  it("a diff keeps its file names, hunk headers and changed lines", () => {
    const files = Array.from({ length: 12 }, (_, f) => {
      const context = Array.from({ length: 40 }, (_, i) => ` unchanged_line_${f}_${i} = compute(${i})`);
      return [
        `diff --git a/src/mod_${f}.py b/src/mod_${f}.py`,
        `index 1234567..89abcde 100644`,
        `--- a/src/mod_${f}.py`,
        `+++ b/src/mod_${f}.py`,
        `@@ -${10 * f + 1},41 +${10 * f + 1},41 @@ def handler_${f}():`,
        ...context.slice(0, 20),
        `-    old_call_${f}(x)`,
        `+    new_call_${f}(x, strict=True)`,
        ...context.slice(20),
      ].join("\n");
    });
    const text = files.join("\n");
    const out = compressOne("git diff", text, "standard");
    expect(out.length).to.be.below(text.length / 2);
    for (let f = 0; f < 12; f++) {
      expect(out).to.include(`+++ b/src/mod_${f}.py`);
      expect(out).to.include(`@@ -${10 * f + 1},41 +${10 * f + 1},41 @@ def handler_${f}():`);
      expect(out).to.include(`+    new_call_${f}(x, strict=True)`);
    }
  });
});

/** mini-swe-agent's observation of an output. */
const observation = (output: string, code = 0) => `<returncode>${code}</returncode>\n<output>\n${output}\n</output>`;
const action = (command: string) => `THOUGHT: Let me look.\n\n\`\`\`bash\n${command}\n\`\`\``;

/** A text-protocol conversation: the task, then (action, observation) pairs, in one provider's format. */
function textProtocol(provider: Provider, turns: { command: string; output: string }[], task = "Fix the bug.") {
  const pairs = turns.flatMap((t) => [
    { role: "assistant", text: action(t.command) },
    { role: "user", text: observation(t.output) },
  ]);
  const all = [{ role: "user", text: task }, ...pairs];
  if (provider === "openai") return { model: "gpt-4o", messages: all.map((m) => ({ role: m.role, content: m.text })) };
  if (provider === "anthropic")
    return {
      model: "claude-test",
      max_tokens: 100,
      messages: all.map((m) => ({ role: m.role, content: [{ type: "text", text: m.text }] })),
    };
  return {
    model: "gemini-test",
    contents: all.map((m) => ({ role: m.role === "assistant" ? "model" : "user", parts: [{ text: m.text }] })),
  };
}

/** The text of every message of a body, in order, whatever the format. */
function texts(provider: Provider, body: unknown): string[] {
  const b = body as Record<string, { content?: unknown; parts?: { text: string }[] }[]>;
  if (provider === "gemini") return (b.contents ?? []).map((c) => c.parts?.[0]?.text ?? "");
  return (b.messages ?? [])
    .filter((m) => (m as { role: string }).role !== "system")
    .map((m) => (typeof m.content === "string" ? m.content : ((m.content as { text: string }[])[0]?.text ?? "")));
}

const bigLog = (n: number) =>
  Array.from(
    { length: n },
    (_, i) => `collecting tests/unit/test_module_${i}.py ... ${i % 97 === 5 ? "ERROR" : "ok"}`,
  ).join("\n");

describe("text-protocol observations", () => {
  for (const provider of ["openai", "anthropic", "gemini"] as Provider[]) {
    it(`${provider}: an observation's output is compressed, its tags and the rest of the conversation are not`, () => {
      const body = textProtocol(provider, [
        { command: "ls", output: "README.md\nsetup.py" },
        { command: "python -m pytest tests/unit", output: bigLog(600) },
      ]);
      const before = texts(provider, body);
      const after = texts(provider, compressRequest(provider, body, contextSettings("standard")).body);
      expect(after.length).to.equal(before.length);
      expect(after.slice(0, 4)).to.deep.equal(before.slice(0, 4));
      const last = after[4] as string;
      expect(last.length).to.be.below((before[4] as string).length / 3);
      expect(last.startsWith("<returncode>0</returncode>\n<output>\n")).to.equal(true);
      expect(last.endsWith("\n</output>")).to.equal(true);
      expect(last).to.include("`python -m pytest tests/unit` shows all");
    });

    it(`${provider}: what a person typed stays as typed, even when it looks like output`, () => {
      const looksLikeOutput = observation(bigLog(600));
      // As the first message (no action before it).
      const first = textProtocol(provider, [], looksLikeOutput);
      expect(texts(provider, compressRequest(provider, first, contextSettings("aggressive")).body)).to.deep.equal([
        looksLikeOutput,
      ]);
      // After an assistant answer without a command.
      const answered = textProtocol(provider, [{ command: "ls", output: "a.py" }]);
      const list = texts(provider, answered);
      const withReply = textProtocol(provider, [{ command: "ls", output: "a.py" }]);
      const messages = (withReply as { messages?: unknown[]; contents?: unknown[] }).messages ?? withReply.contents;
      const reply = textProtocol(provider, [], "x");
      const replyMessages = (reply as { messages?: unknown[]; contents?: unknown[] }).messages ?? reply.contents;
      const asAssistant = JSON.parse(
        JSON.stringify(replyMessages?.[0]).replace('"user"', provider === "gemini" ? '"model"' : '"assistant"'),
      );
      const asPerson = JSON.parse(JSON.stringify(replyMessages?.[0]));
      const setText = (m: Record<string, unknown>, text: string) => {
        if (typeof m.content === "string") m.content = text;
        else if (Array.isArray(m.content)) (m.content[0] as { text: string }).text = text;
        else (m.parts as { text: string }[])[0] = { text };
      };
      setText(asAssistant, "Done: the bug was in the parser. Anything else?");
      setText(asPerson, looksLikeOutput);
      messages?.push(asAssistant, asPerson);
      const out = texts(provider, compressRequest(provider, withReply, contextSettings("aggressive")).body);
      expect(out).to.deep.equal([...list, "Done: the bug was in the parser. Anything else?", looksLikeOutput]);
      // With anything around the tags, even right after a command.
      const pasted = textProtocol(provider, [{ command: "make", output: bigLog(600) }]);
      const pastedText = `Here is what I got:\n${observation(bigLog(600))}`;
      const pm = (pasted as { messages?: unknown[]; contents?: unknown[] }).messages ?? pasted.contents;
      setText(pm?.at(-1) as Record<string, unknown>, pastedText);
      expect(texts(provider, compressRequest(provider, pasted, contextSettings("aggressive")).body).at(-1)).to.equal(
        pastedText,
      );
    });
  }

  for (const provider of ["openai", "anthropic", "gemini"] as Provider[]) {
    it(`${provider}: a template beside a person's text in the same message is theirs, and stays as typed`, () => {
      const pasted = observation(bigLog(600));
      const said = "Stop. Before you go on, this is what I saw on my machine:";
      const send = (user: string[]) =>
        blockTexts(
          compressRequest(
            provider,
            blockConversation(provider, [
              { role: "user", texts: ["Fix the worker."] },
              { role: "assistant", texts: [action("python worker.py")] },
              { role: "user", texts: user },
            ]),
            contextSettings("aggressive"),
          ).body,
        ).at(-1);
      expect(send([said, pasted])).to.deep.equal([said, pasted]);
      expect(send([pasted, said])).to.deep.equal([pasted, said]);
      // The template as the message's only text is the agent's observation: the test can fail.
      expect(String(send([pasted])?.[0]).length).to.be.below(pasted.length / 3);
    });
  }

  it("openai-responses: a template beside a person's text in the same message stays as typed", () => {
    const pasted = observation(bigLog(600));
    const said = "Stop. This is what I saw:";
    const send = (user: string[]) => {
      const body = {
        model: "gpt-test",
        input: [
          { type: "message", role: "user", content: "Fix the worker." },
          { type: "message", role: "assistant", content: [{ type: "output_text", text: action("python worker.py") }] },
          { type: "message", role: "user", content: user.map((text) => ({ type: "input_text", text })) },
        ],
      };
      const out = compressRequest("openai-responses", body, contextSettings("aggressive")).body as {
        input: { content: { text: string }[] }[];
      };
      return out.input[2]?.content.map((p) => p.text);
    };
    expect(send([said, pasted])).to.deep.equal([said, pasted]);
    expect(String(send([pasted])?.[0]).length).to.be.below(pasted.length / 3);
  });

  it("input compression, which shortens the user's prose, leaves an observation alone", () => {
    const prose = "Output that is basically just really quite verbose, and honestly it is very very long indeed.";
    const body = textProtocol("openai", [{ command: "cat notes.txt", output: prose }]);
    const out = compressRequest("openai", body, {
      ...contextSettings("standard"),
      context_compress: false,
      auto_compress_input: true,
    }).body;
    expect(texts("openai", out)[2]).to.equal(observation(prose));
    // The same words as the person's own message are compressed: the test can fail.
    const asked = textProtocol("openai", [], prose);
    const outAsked = compressRequest("openai", asked, {
      ...contextSettings("standard"),
      auto_compress_input: true,
    }).body;
    expect(texts("openai", outAsked)[0]).to.not.equal(prose);
  });

  it("each observation's compressed form depends only on the messages before it (property, seeded sessions)", () => {
    const rnd = seededRandom(11);
    for (const provider of ["openai", "anthropic", "gemini"] as Provider[]) {
      for (let round = 0; round < 5; round++) {
        const turns = Array.from({ length: 12 }, (_, i) => {
          const kind = Math.floor(rnd() * 4);
          const output =
            kind === 0
              ? bigLog(50 + Math.floor(rnd() * 500))
              : kind === 1
                ? source(100 + Math.floor(rnd() * 800), rnd).join("\n")
                : kind === 2
                  ? Array.from({ length: 300 }, (_, k) => `src/pkg_${k % 30}/mod_${k}.py:${k}:    call_${i}(x)`).join(
                      "\n",
                    )
                  : "short output";
          const command = ["python -m pytest", `cat src/file_${i}.py`, "grep -rn call_ src", "echo ok"][kind] as string;
          return { command, output };
        });
        let previous: string[] = [];
        for (let n = 1; n <= turns.length; n++) {
          const body = textProtocol(provider, turns.slice(0, n));
          const out = texts(provider, compressRequest(provider, body, contextSettings("aggressive")).body);
          expect(out.slice(0, previous.length), `${provider} round ${round} turn ${n}`).to.deep.equal(previous);
          previous = out;
        }
      }
    }
  });
});

/** A conversation of plain text messages in one provider's format. */
function conversation(provider: Provider, messages: { role: "user" | "assistant"; text: string }[]) {
  if (provider === "openai")
    return { model: "gpt-4o", messages: messages.map((m) => ({ role: m.role, content: m.text })) };
  if (provider === "anthropic")
    return {
      model: "claude-test",
      max_tokens: 100,
      messages: messages.map((m) => ({ role: m.role, content: [{ type: "text", text: m.text }] })),
    };
  return {
    model: "gemini-test",
    contents: messages.map((m) => ({ role: m.role === "assistant" ? "model" : "user", parts: [{ text: m.text }] })),
  };
}

const fenced = (command: string) => `Let me run the tests.\n\n\`\`\`bash\n${command}\n\`\`\``;

describe("text-protocol observations of other agents (SWE-agent, Aider, OpenHands, mini-swe-agent 2.x)", () => {
  const task = { role: "user" as const, text: "Fix the failing test." };
  for (const provider of ["openai", "anthropic", "gemini"] as Provider[]) {
    it(`${provider}: each agent's observation is compressed inside the agent's text, which stays as sent`, () => {
      for (const shape of SHAPES) {
        const text = shape.render(bigLog(600));
        const parts = splitObservation(text);
        if (!parts) throw new Error(`${shape.name} not recognised`);
        const action = shape.action ?? fenced(shape.command ?? "python -m pytest -x");
        const before = [task, { role: "assistant" as const, text: action }];
        const body = conversation(provider, [...before, { role: "user", text }]);
        const out = texts(provider, compressRequest(provider, body, contextSettings("standard")).body);
        expect(out.slice(0, 2), shape.name).to.deep.equal(before.map((m) => m.text));
        const last = out[2] as string;
        expect(last.length, shape.name).to.be.below(text.length / 3);
        expect(last.startsWith(parts.open), shape.name).to.equal(true);
        expect(last.endsWith(parts.close), shape.name).to.equal(true);
        expect(last, shape.name).to.include("test_module_5.py ... ERROR");
      }
    });

    it(`${provider}: SWE-agent's XML mode, its action in <command> tags, is answered the same way`, () => {
      const text = `${bigLog(600)}\n(Open file: n/a)\n(Current directory: /repo)\nbash-$`;
      const body = conversation(provider, [
        task,
        { role: "assistant", text: "Let me run the tests.\n<command>\npython -m pytest -x\n</command>" },
        { role: "user", text },
      ]);
      const last = texts(provider, compressRequest(provider, body, contextSettings("standard")).body)[2] as string;
      expect(last.length).to.be.below(text.length / 3);
      expect(last.endsWith("\n(Open file: n/a)\n(Current directory: /repo)\nbash-$")).to.equal(true);
    });

    it(`${provider}: a person's message in an agent's shape, with no action it answers, stays as typed`, () => {
      for (const shape of SHAPES) {
        const text = shape.render(bigLog(600));
        const asFirst = conversation(provider, [{ role: "user", text }]);
        const afterAnswer = conversation(provider, [
          task,
          { role: "assistant", text: "Done: the bug was in the parser. Anything else?" },
          { role: "user", text },
        ]);
        const first = texts(provider, compressRequest(provider, asFirst, contextSettings("aggressive")).body);
        const answered = texts(provider, compressRequest(provider, afterAnswer, contextSettings("aggressive")).body);
        if (shape.needsAction) {
          expect(first, shape.name).to.deep.equal([text]);
          expect(answered.at(-1), shape.name).to.equal(text);
        } else {
          // Aider's `/run` names its own command: its output is compressed wherever it is.
          expect((first[0] as string).length, shape.name).to.be.below(text.length / 3);
        }
      }
    });

    it(`${provider}: OpenHands' editor calls in text: a view names its file, another verb no command`, () => {
      const view = source(700, seededRandom(13))
        .map((l, i) => `${String(i + 1).padStart(6)}\t${l}`)
        .join("\n");
      const call = (verb: string) =>
        `Let me look.\n<function=str_replace_editor>\n<parameter=command>${verb}</parameter>\n<parameter=path>/workspace/app/views.py</parameter>\n</function>`;
      const result = `EXECUTION RESULT of [str_replace_editor]:\n${view}`;
      const compressed = (verb: string) => {
        const body = conversation(provider, [
          task,
          { role: "assistant", text: call(verb) },
          { role: "user", text: result },
        ]);
        return texts(provider, compressRequest(provider, body, contextSettings("standard")).body).at(-1) as string;
      };
      const viewed = compressed("view");
      expect(viewed.length).to.be.below(result.length / 3);
      expect(viewed).to.match(/\[terse: lines (\d+)-(\d+) omitted; sed -n \1,\2p \/workspace\/app\/views\.py\]/);
      const other = compressed("undo_edit");
      expect(other.length).to.be.below(result.length / 3);
      expect(other).not.to.include("undo_edit");
      expect(other).not.to.include("sed -n");
    });

    it(`${provider}: near-misses right after a command stay as typed`, () => {
      const log = bigLog(600);
      const nearMisses = [
        // The result of another tool than the one called.
        `EXECUTION RESULT of [str_replace_editor]:\n${log}`,
        // A person's words, not an agent's template.
        `Observation: the tests fail.\n${log}`,
        `Output from running it:\n${log}\n`,
        `Here is the output:\n${log}\n(Open file: n/a)\n(Current directory: /repo)\nbash-$ what now?`,
        // An agent's template naming a command that is not the one before it.
        `Output from make test\n${log}\n\n`,
        `The last command <command>make test</command> timed out and has been killed.\nThe output of the command was:\n <output>\n${log}\n</output>\nPlease try another command and make sure to avoid those requiring interactive input.`,
      ];
      for (const text of nearMisses) {
        const body = conversation(provider, [
          task,
          { role: "assistant", text: fenced("python -m pytest -x") },
          { role: "user", text },
        ]);
        expect(texts(provider, compressRequest(provider, body, contextSettings("aggressive")).body).at(-1)).to.equal(
          text,
        );
      }
    });
  }
});

/** A conversation whose messages are lists of text blocks (parts), in one provider's format. */
function blockConversation(provider: Provider, messages: { role: "user" | "assistant"; texts: string[] }[]) {
  if (provider === "gemini")
    return {
      model: "gemini-test",
      contents: messages.map((m) => ({
        role: m.role === "assistant" ? "model" : "user",
        parts: m.texts.map((text) => ({ text })),
      })),
    };
  return {
    model: "test",
    max_tokens: 100,
    messages: messages.map((m) => ({ role: m.role, content: m.texts.map((text) => ({ type: "text", text })) })),
  };
}

/** Every message's texts (blocks or parts), in order. */
function blockTexts(body: unknown): string[][] {
  const b = body as { messages?: { role: string; content: unknown }[]; contents?: { parts: { text: string }[] }[] };
  // OpenAI's instruction is a system message of its own.
  const messages = b.messages?.filter((m) => m.role !== "system").map((m) => m.content as { text: string }[]);
  return (messages ?? b.contents?.map((c) => c.parts) ?? []).map((ps) => ps.map((p) => p.text));
}

describe("Cline's XML tool protocol (and Roo Code's, Kilo Code's): the result in the text after its heading", () => {
  const task = "<task>\nFix the failing test.\n</task>";
  const xmlCall = (tool: string, params: Record<string, string>) =>
    `I'll look.\n\n<${tool}>\n${Object.entries(params)
      .map(([k, v]) => `<${k}>${v}</${k}>`)
      .join("\n")}\n</${tool}>`;
  const run = xmlCall("execute_command", { command: "python -m pytest -x", requires_approval: "false" });
  const heading = "[execute_command for 'python -m pytest -x'] Result:";
  const result = (provider: Provider, call: string, blocks: string[], settings = contextSettings("standard")) => {
    const body = blockConversation(provider, [
      { role: "user", texts: [task, ENVIRONMENT_DETAILS] },
      { role: "assistant", texts: [call] },
      { role: "user", texts: blocks },
    ]);
    return blockTexts(compressRequest(provider, body, settings).body).at(-1) as string[];
  };

  for (const provider of ["openai", "anthropic", "gemini"] as Provider[]) {
    it(`${provider}: the output is compressed; the heading and the environment details stay as sent`, () => {
      const output = `Command executed.\nOutput:\n${bigLog(600)}`;
      const [head, out, details] = result(provider, run, [heading, output, ENVIRONMENT_DETAILS]);
      expect(head).to.equal(heading);
      expect(details).to.equal(ENVIRONMENT_DETAILS);
      expect((out as string).length).to.be.below(output.length / 3);
      // Its report stays as sent, its errors are kept, and its marker names the command.
      expect(out?.startsWith("Command executed.\nOutput:\n")).to.equal(true);
      expect(out).to.include("test_module_5.py ... ERROR");
      expect(out).to.include("python -m pytest -x");
    });

    it(`${provider}: the feedback of a person who denied the command stays as typed, whatever its length`, () => {
      const typed = `The user denied this operation and provided the following feedback:\n<feedback>\nDon't run it, read my log:\n${bigLog(600)}\n</feedback>`;
      expect(result(provider, run, [heading, typed, ENVIRONMENT_DETAILS], contextSettings("aggressive"))).to.deep.equal(
        [heading, typed, ENVIRONMENT_DETAILS],
      );
    });

    it(`${provider}: a file read_file read is a file view (spared as one), a listing of the same size is cut`, () => {
      const file = source(120, seededRandom(7)).join("\n");
      expect(file.length).to.be.within(7_000, 11_000);
      const read = xmlCall("read_file", { path: "src/app.py" });
      expect(result(provider, read, ["[read_file for 'src/app.py'] Result:", file])[1]).to.equal(file);
      // Roo Code's read of one file, in its `<args>` form.
      const rooRead = "<read_file>\n<args>\n<file>\n<path>src/app.py</path>\n</file>\n</args>\n</read_file>";
      expect(result(provider, rooRead, ["[read_file for 'src/app.py'] Result:", file])[1]).to.equal(file);
      const list = xmlCall("list_files", { path: "src", recursive: "true" });
      const listed = result(provider, list, ["[list_files for 'src'] Result:", file])[1] as string;
      expect(listed.length).to.be.below(file.length);
    });

    it(`${provider}: a heading of another tool than the call, or with no call before it, is a person's text`, () => {
      const output = bigLog(600);
      const read = xmlCall("read_file", { path: "src/app.py" });
      expect(result(provider, read, [heading, output])).to.deep.equal([heading, output]);
      expect(result(provider, "Done. Anything else?", [heading, output])).to.deep.equal([heading, output]);
      // The heading must be the whole block: a person quoting it is not the agent.
      const quoted = `Why did this fail? ${heading}`;
      expect(result(provider, run, [quoted, output])).to.deep.equal([quoted, output]);
    });

    it(`${provider}: input compression leaves the output after a heading as sent, and compresses a person's prose`, () => {
      const prose = "Please make sure that the value of the setting is in the range that the docs give.";
      const settings = { ...contextSettings("standard"), auto_compress_input: true };
      expect(result(provider, run, [heading, prose, ENVIRONMENT_DETAILS], settings)[1]).to.equal(prose);
      expect(result(provider, "Done. Anything else?", [prose], settings)[0]).to.not.equal(prose);
    });
  }
});

describe("observation shapes (property)", () => {
  // Outputs made of what could confuse a shape: its own tags, prompts and line ends.
  const piece = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.constantFrom(
      "\n",
      "\n\n",
      " ",
      "</output>",
      "<output>\n",
      "</output_tail>",
      "</observation>",
      "\n(Open file: x.py)",
      "\n(Current directory: /r)",
      "\nbash-$",
      "<response clipped>",
      "\nAnd got this output:\n\n",
      "Output from ",
      "```",
    ),
  );
  const output = fc.array(piece, { maxLength: 12 }).map((ps) => ps.join(""));

  it("each shape splits any output from the agent's text, and the parts join back byte for byte", () => {
    for (const shape of SHAPES) {
      const reference = splitObservation(shape.render("x"));
      if (!reference) throw new Error(`${shape.name} not recognised`);
      fc.assert(
        fc.property(output, (out) => {
          const text = shape.render(out);
          const o = splitObservation(text);
          expect(o, `${shape.name}: ${JSON.stringify(text)}`).to.not.equal(undefined);
          if (!o) return;
          expect(o.open + o.output + o.close).to.equal(text);
          expect(o.output).to.include(out.trimEnd());
          expect(o.open).to.equal(reference.open);
          expect(o.close.trim()).to.equal(reference.close.trim());
        }),
        { numRuns: 300 },
      );
    }
  });

  it("a person's words before or after an agent's template make it no observation", () => {
    const words = fc.stringMatching(/^[a-z][a-z ]{0,30}$/);
    for (const shape of SHAPES) {
      fc.assert(
        fc.property(output, words, (out, said) => {
          // An output that is itself an observation by another agent's shape (it ends on SWE-agent 0.x's
          // prompt, whose shape is its ending) stays one with words before it: that is the shape's rule.
          fc.pre(splitObservation(out) === undefined);
          const text = shape.render(out);
          // SWE-agent 0.x's shape is its ending (the output may start any way).
          if (!shape.name.startsWith("SWE-agent 0.x prompt"))
            expect(splitObservation(`${said}\n${text}`)).to.equal(undefined);
          // SWE-agent 1.x's and OpenHands' are their beginning (everything after the heading is output).
          if (!HEADED_SHAPES.includes(shape.name)) expect(splitObservation(`${text}\n${said}`)).to.equal(undefined);
        }),
        { numRuns: 200 },
      );
    }
  });

  it("any text's split, where it has one, joins back to it", () => {
    const starts = fc.constantFrom(
      "",
      "<returncode>0</returncode>\n<output>\n",
      "OBSERVATION:\n",
      "Output from ls\n",
      "<observation>\n",
      "I ran this command:\n\nls\n\nAnd got this output:\n\n",
    );
    fc.assert(
      fc.property(starts, output, (start, rest) => {
        const text = start + rest;
        const o = splitObservation(text);
        if (o) expect(o.open + o.output + o.close).to.equal(text);
      }),
      { numRuns: 1000 },
    );
  });
});
