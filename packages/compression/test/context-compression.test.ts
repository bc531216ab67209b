import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { CONTEXT_LEVELS, compressRequest, countInputTokens, forgetRemembered, type Provider } from "../src/index.ts";
import { contextSettings } from "./settings.ts";

/** A log of `lines` numbered lines, ~60 characters each, all of one shape. */
const log = (lines: number, tag = "build") =>
  Array.from(
    { length: lines },
    (_, i) => `${tag} step ${String(i).padStart(5, "0")}: compiling module_${i}.ts ... ok`,
  ).join("\n");

/** A log of varied lines (no two of one shape), `lines` long. */
const variedLog = (lines: number) =>
  Array.from(
    { length: lines },
    (_, i) => `${"abcdefghij"[i % 10]?.repeat(1 + (i % 7))} event ${"xyz"[i % 3]} handled`,
  ).join("\n");

/** A file view as Claude Code's Read tool prints it: `     1→text`. */
const fileView = (from: number, to: number, edit?: number) =>
  Array.from({ length: to - from + 1 }, (_, k) => {
    const n = from + k;
    return `${String(n).padStart(6)}→  const value_${n} = compute(${n === edit ? "changed" : "input"}, ${n});`;
  }).join("\n");

type Msg = { role: string; content: unknown };
const anthropicSession = (results: string[]): { model: string; max_tokens: number; messages: Msg[] } => ({
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

const resultText = (body: unknown, i: number): string =>
  ((body as { messages: { content: { content: string }[] }[] }).messages[2 * i + 1]?.content[0]?.content ??
    "") as string;

describe("context compression", () => {
  it("keeps the head, the tail and the error lines of a long log, saying what went", () => {
    const lines = variedLog(2_000).split("\n");
    lines[1_000] = "src/app.ts:42:7 - error TS2322: Type 'string' is not assignable to type 'number'.";
    const big = lines.join("\n");
    const out = compressRequest("anthropic", anthropicSession([big]), contextSettings("standard"));
    const text = resultText(out.body, 0);
    expect(text.length).to.be.lessThan(7_000);
    expect(text).to.include(lines[1_000]);
    expect(text.startsWith(lines.slice(0, 10).join("\n"))).to.equal(true);
    expect(text.endsWith(lines.slice(-10).join("\n"))).to.equal(true);
    expect(text).to.match(/\[terse: \d+ lines omitted\]/);
    const session = anthropicSession([big]);
    const before = countInputTokens("anthropic", session);
    expect(out.input_tokens_before).to.equal(before);
    expect(out.input_tokens_after).to.equal(countInputTokens("anthropic", out.body));
    expect(out.input_tokens_after).to.be.lessThan(before / 3);
  });

  it("keeps the first and last of a long run of look-alike lines", () => {
    const out = compressRequest("anthropic", anthropicSession([log(600)]), contextSettings("standard"));
    const text = resultText(out.body, 0);
    const [first, marker, index, last, ...rest] = text.split("\n");
    expect([first, marker, last, rest]).to.deep.equal([
      log(1),
      // The command that printed it (`run 0` here) is how to see the lines again.
      "[terse: 598 similar lines omitted; `run 0` shows all]",
      "build step 00599: compiling module_599.ts ... ok",
      [],
    ]);
    // The run's middle named modules the two kept lines do not: listed, from the first that went.
    expect(index).to.match(/^\[terse: the omitted part mentions: module_1\.ts module_2\.ts module_3\.ts /);
    // Within its budget (the level's base and a fifth of what went) and the note around it.
    expect((index as string).length)
      .to.be.below(text.length)
      .and.below(
        CONTEXT_LEVELS.standard.keepNames + log(600).length / 5 + "[terse: the omitted part mentions: ]".length,
      );
  });

  it("shortens a JSON result by its structure: still valid JSON, every key kept", () => {
    const dump = JSON.stringify(
      { total: 500, items: Array.from({ length: 500 }, (_, i) => ({ id: i, name: `item-${i}`, tags: ["a", "b"] })) },
      null,
      2,
    );
    const text = resultText(
      compressRequest("anthropic", anthropicSession([dump]), contextSettings("standard")).body,
      0,
    );
    const parsed = JSON.parse(text) as { total: number; items: unknown[] };
    expect(parsed.total).to.equal(500);
    const kept = CONTEXT_LEVELS.standard.jsonArrayItems;
    // The kept items, the marker, then the index of the names that went (`item-8` on).
    expect(parsed.items).to.have.length(kept + 2);
    expect(parsed.items[kept]).to.equal(`[terse: ${500 - kept} more items omitted]`);
    expect(parsed.items[kept + 1]).to.match(/^\[terse: the omitted part mentions: item-8 item-9 /);
  });

  it("keeps an array's last few items where they are shorter than the marker that would say they went", () => {
    const kept = CONTEXT_LEVELS.standard.jsonArrayItems;
    const dump = (tail: unknown[]) =>
      JSON.stringify(
        {
          // Long enough that the result is shortened: its `items` are cut whatever `ids` holds.
          items: Array.from({ length: 50 }, (_, i) => ({ id: i, body: `text ${i} `.repeat(60) })),
          ids: [...Array.from({ length: kept }, (_, i) => i), ...tail],
        },
        null,
        2,
      );
    const idsOf = (tail: unknown[]) =>
      (
        JSON.parse(
          resultText(compressRequest("anthropic", anthropicSession([dump(tail)]), contextSettings("standard")).body, 0),
        ) as { ids: unknown[] }
      ).ids;
    expect(idsOf([41])).to.deep.equal([...Array.from({ length: kept }, (_, i) => i), 41]);
    expect(idsOf([41, 42, 43])).to.have.length(kept + 3);
    const long = "a".repeat(40);
    expect(idsOf([long]).at(-1)).to.equal("[terse: 1 more items omitted]");
  });

  it("keeps a JSON result's values as the tool wrote them: ids past 2^53, `__proto__`, integer keys in their order", () => {
    // Snowflake ids: as doubles, neighbours collapse into one wrong number.
    const ids = Array.from({ length: 60 }, (_, i) => `11729438273492834${String(i).padStart(2, "0")}`);
    const items = ids.map((id) => `    {"id": ${id}, "title": "issue ${id} about the parser"}`);
    const dump = `{\n  "__proto__": {"admin": true},\n  "10": "ten",\n  "2": "two",\n  "items": [\n${items.join(",\n")}\n  ]\n}`;
    const text = resultText(
      compressRequest("anthropic", anthropicSession([dump]), contextSettings("standard")).body,
      0,
    );
    expect(text.length).to.be.below(dump.length);
    const shown = [...text.matchAll(/"id": (\d+)/g)].map((m) => m[1]);
    expect(shown.length).to.be.above(0);
    for (const id of shown) expect(ids).to.include(id);
    expect(text.indexOf('"__proto__": {"admin": true}')).to.be.above(0);
    expect(text.indexOf('"10": "ten"')).to.be.below(text.indexOf('"2": "two"'));
    // A `__proto__` key alone round-trips: the result is still shortened as JSON, the key kept.
    const small = Array.from(
      { length: 60 },
      (_, i) => `{"id": ${1000 + i}, "title": "issue ${1000 + i} about the parser"}`,
    );
    const safe = `{"__proto__": {"admin": true}, "items": [${small.join(", ")}]}`;
    const out = resultText(compressRequest("anthropic", anthropicSession([safe]), contextSettings("standard")).body, 0);
    const json = JSON.parse(out) as { items: unknown[] };
    expect(Object.keys(json)).to.deep.equal(["__proto__", "items"]);
    expect(json.items[CONTEXT_LEVELS.standard.jsonArrayItems]).to.match(/^\[terse: \d+ more items omitted\]$/);
  });

  it("cuts a JSON result nested too deep to walk as text, and never throws", () => {
    const deep = `${"[".repeat(2_000)}${"]".repeat(2_000)}`;
    const openai = {
      model: "gpt-test",
      messages: [
        { role: "user", content: "parse it" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "c1", type: "function", function: { name: "bash", arguments: '{"command":"cat n.json"}' } },
          ],
        },
        { role: "tool", tool_call_id: "c1", content: deep },
      ],
    };
    expect(() => compressRequest("openai", openai, contextSettings("standard"))).not.to.throw();
    // One level a line: cut as the lines of a text, its head and tail as written.
    const lines = `${"[\n".repeat(2_000)}1\n${"]\n".repeat(2_000)}`;
    const text = resultText(
      compressRequest("anthropic", anthropicSession([lines]), contextSettings("standard")).body,
      0,
    );
    expect(text.length).to.be.below(lines.length / 10);
    expect(text).to.match(/\[terse: \d+ similar lines omitted/);
  });

  it("replaces a later identical result by a reference to the earlier one, never the other way", () => {
    const file = fileView(1, 60);
    const body = anthropicSession([file, "short", file]);
    const out = compressRequest("anthropic", body, contextSettings("standard"));
    expect(resultText(out.body, 0)).to.equal(file);
    expect(resultText(out.body, 2)).to.equal(
      `[terse: same output as tool result toolu_0 above (${file.length} characters)]`,
    );
  });

  it("finds a repeated output by the output alone, past the report a tool puts before it", () => {
    // Codex CLI reports each run with a new chunk id: two runs of one command are never the same text.
    const report = (id: string) => `Chunk ID: ${id}\nWall time: 0.0100 seconds\nProcess exited with code 0\nOutput:\n`;
    const file = fileView(1, 60);
    const [first, again] = [report("a848c9") + file, report("0f31aa") + file];
    const settings = contextSettings("standard");
    const out = compressRequest("anthropic", anthropicSession([first, "short", again]), settings);
    expect(resultText(out.body, 0)).to.equal(first);
    expect(resultText(out.body, 2)).to.equal(
      `${report("0f31aa")}[terse: same output as tool result toolu_0 above (${file.length} characters)]`,
    );
    // The same where what the conversation shows is rebuilt from an earlier request's results
    // (one that went on differently after the first), not carried over from the last.
    forgetRemembered();
    compressRequest("anthropic", anthropicSession([first, "other"]), settings);
    const rebuilt = compressRequest("anthropic", anthropicSession([first, "short", again]), settings);
    expect(resultText(rebuilt.body, 2)).to.equal(resultText(out.body, 2));
  });

  it("finds a repeated output by the output alone, before what the tool puts after it (Gemini CLI's process group)", () => {
    const file = fileView(1, 60);
    const run = (pgid: number) => `Output: ${file}\nProcess Group PGID: ${pgid}`;
    const out = compressRequest(
      "anthropic",
      anthropicSession([run(2075), "short", run(2301)]),
      contextSettings("standard"),
    );
    expect(resultText(out.body, 0)).to.equal(run(2075));
    expect(resultText(out.body, 2)).to.equal(
      `Output: [terse: same output as tool result toolu_0 above (${file.length} characters)]\nProcess Group PGID: 2301`,
    );
  });

  it("leaves what a person typed in a tool's result as typed: a denial's reason, answers, feedback after the output so far", () => {
    // The person pastes lines an earlier result showed, and writes more than any level's threshold.
    const earlier = log(60);
    const typed = `${earlier.split("\n").slice(10, 30).join("\n")}\n${"Please keep the old cache, it is still read by the export job. ".repeat(30)}`;
    const claudeDenial = `The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\n${typed}`;
    const answers = `User has answered your questions: "Which cache should stay?"="${typed}". You can now continue with the user's answers in mind.`;
    const clineDenial = `[execute_command for 'rm -rf cache'] Result:\nThe user denied this operation and provided the following feedback:\n<feedback>\n${typed}\n</feedback>`;
    for (const level of ["standard", "aggressive"] as const) {
      const results = [earlier, claudeDenial, answers, clineDenial, claudeDenial];
      const out = compressRequest("anthropic", anthropicSession(results), contextSettings(level));
      // Neither cut, nor made a reference to the earlier lines, nor the second denial to the first.
      for (const i of [1, 2, 3, 4]) expect(resultText(out.body, i), `${level} ${i}`).to.equal(results[i]);
    }
    // A command the person answered while it ran: its output so far is output, their feedback is not.
    const running = `[execute_command for 'npm test'] Result:\nCommand executed.\nOutput:\n${variedLog(400)}`;
    const feedback = `\n\nThe user provided the following feedback:\n<feedback>\n${typed}\n</feedback>`;
    const out = compressRequest(
      "anthropic",
      anthropicSession([earlier, running + feedback]),
      contextSettings("standard"),
    );
    const text = resultText(out.body, 1);
    expect(text).to.match(/\[terse: \d+ lines/);
    expect(text.length).to.be.lessThan((running + feedback).length / 2);
    expect(text.endsWith(feedback)).to.equal(true);
  });

  it("keeps a tool's report as sent where the output goes on to repeat lines an earlier result shows", () => {
    // The report's lines are the earlier report's too (all but the chunk id): a run of known
    // lines that starts in the report would fold it into the reference.
    const report = (id: string) =>
      `Chunk ID: ${id}\nWall time: 0.0100 seconds\nProcess exited with code 0\nOriginal token count: 900\nOutput:\n`;
    const second = `${report("0f31aa")}${fileView(1, 60)}\n${fileView(200, 260)}`;
    const out = compressRequest(
      "anthropic",
      anthropicSession([report("a848c9") + fileView(1, 60), second]),
      contextSettings("standard"),
    );
    const text = resultText(out.body, 1);
    expect(text.startsWith(`${report("0f31aa")}[terse: 60 lines as in tool result toolu_0 above]\n`), text).to.equal(
      true,
    );
  });

  it("keeps only what changed when a file is viewed again after an edit", () => {
    const first = fileView(1, 80);
    const again = fileView(1, 80, 40);
    const out = compressRequest("anthropic", anthropicSession([first, again]), contextSettings("standard"));
    const text = resultText(out.body, 1);
    expect(resultText(out.body, 0)).to.equal(first);
    expect(text.split("\n")).to.deep.equal([
      "[terse: 39 lines as in tool result toolu_0 above]",
      again.split("\n")[39],
      "[terse: 40 lines as in tool result toolu_0 above]",
    ]);
  });

  it("never points at lines the earlier result no longer shows", () => {
    const lines = variedLog(2_000);
    const out = compressRequest(
      "anthropic",
      anthropicSession([lines, `${lines}\nnew last line here`]),
      contextSettings("standard"),
    );
    const earlier = resultText(out.body, 0);
    const later = resultText(out.body, 1);
    for (const line of later.split("\n")) {
      if (!line.startsWith("[terse:")) continue;
      expect(line).to.match(/omitted|as in tool result toolu_0/);
    }
    // The later copy points at runs the earlier (shortened) copy still shows, and is no
    // longer than it give or take its own index of names.
    expect(later).to.include("lines as in tool result toolu_0 above]");
    expect(later.length).to.be.lessThan(earlier.length * 1.1);
  });

  it("leaves every result under 16,000 characters untouched at conservative, repeats included", () => {
    const body = anthropicSession([variedLog(400), variedLog(400)]); // ~11,000 characters each
    const out = compressRequest("anthropic", body, contextSettings("conservative"));
    expect(resultText(out.body, 0)).to.equal(resultText(body, 0));
    expect(resultText(out.body, 1)).to.equal(resultText(body, 1));
  });

  it("does the same in OpenAI and Gemini formats, keeping ids, names and roles", () => {
    const big = variedLog(600);
    const openai = compressRequest(
      "openai",
      {
        model: "m",
        messages: [
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_1", type: "function", function: { name: "sh", arguments: "{}" } }],
          },
          { role: "tool", tool_call_id: "call_1", content: big },
        ],
      },
      contextSettings("aggressive"),
    ).body as { messages: { role: string; tool_call_id?: string; content: string }[] };
    expect(openai.messages[1]?.tool_call_id).to.equal("call_1");
    expect(openai.messages[1]?.content.length).to.be.lessThan(3_500);
    const gemini = compressRequest(
      "gemini",
      {
        contents: [
          { role: "model", parts: [{ functionCall: { name: "sh", args: {} } }] },
          { role: "user", parts: [{ functionResponse: { name: "sh", response: { stdout: big } } }] },
        ],
      },
      contextSettings("aggressive"),
    ).body as { contents: { parts: { functionResponse: { name: string; response: { stdout: string } } }[] }[] };
    const fr = gemini.contents[1]?.parts[0]?.functionResponse;
    expect(fr?.name).to.equal("sh");
    expect(fr?.response.stdout.length).to.be.lessThan(3_500);
  });

  it("never cuts an image's base64, in any format's tool result", () => {
    // Random bytes, as an image's are: real base64 with `+`, `/` and `=`.
    const image = () => randomBytes(30_000).toString("base64");
    const mcp = (data: string) =>
      JSON.stringify({
        content: [
          { type: "text", text: variedLog(600) },
          { type: "image", data, mimeType: "image/png" },
        ],
      });
    const call = (id: string) => ({ id, type: "function", function: { name: "screenshot", arguments: "{}" } });
    const [a, b, c, d, e, f, g, h, k] = [
      image(),
      image(),
      image(),
      image(),
      image(),
      image(),
      image(),
      image(),
      image(),
    ];
    const requests: [Provider, Record<string, unknown>, string[]][] = [
      [
        "openai",
        {
          model: "m",
          messages: [
            { role: "assistant", content: null, tool_calls: [call("c1"), call("c2")] },
            { role: "tool", tool_call_id: "c1", content: mcp(a) },
            { role: "tool", tool_call_id: "c2", content: `${variedLog(300)}\n${b}\n${variedLog(300)}` },
          ],
        },
        [a, b],
      ],
      [
        "anthropic",
        {
          model: "m",
          max_tokens: 100,
          messages: [
            {
              role: "assistant",
              content: ["t1", "t2"].map((id) => ({ type: "tool_use", id, name: "screenshot", input: {} })),
            },
            {
              role: "user",
              content: [
                { type: "tool_result", tool_use_id: "t1", content: mcp(c) },
                { type: "tool_result", tool_use_id: "t2", content: [{ type: "text", text: mcp(d) }] },
              ],
            },
          ],
        },
        [c, d],
      ],
      [
        "openai-responses",
        {
          model: "m",
          input: [
            { type: "function_call", call_id: "r1", name: "screenshot", arguments: "{}" },
            { type: "function_call_output", call_id: "r1", output: mcp(e) },
          ],
        },
        [e],
      ],
      [
        "gemini",
        {
          contents: [
            {
              role: "model",
              parts: Array.from({ length: 4 }, () => ({ functionCall: { name: "screenshot", args: {} } })),
            },
            {
              role: "user",
              parts: [
                { image: { mimeType: "image/png", data: f } },
                { content: [{ type: "image", data: g, mimeType: "image/png" }] },
                JSON.parse(mcp(h)),
                { output: mcp(k) },
              ].map((response) => ({ functionResponse: { name: "screenshot", response } })),
            },
          ],
        },
        [f, g, h, k],
      ],
    ];
    for (const [provider, body, images] of requests) {
      const sent = JSON.stringify(compressRequest(provider, body, contextSettings("aggressive")).body);
      for (const [i, data] of images.entries()) expect(sent.includes(data), `${provider} image ${i}`).to.equal(true);
    }
  });

  it("differs between levels only by named thresholds, each stricter than the last", () => {
    expect(Object.keys(CONTEXT_LEVELS)).to.deep.equal(["conservative", "standard", "aggressive"]);
    expect(CONTEXT_LEVELS.conservative.touchAbove).to.equal(16_000);
    for (const key of Object.keys(CONTEXT_LEVELS.standard) as (keyof typeof CONTEXT_LEVELS.standard)[]) {
      expect(CONTEXT_LEVELS.conservative[key], key).to.be.at.least(CONTEXT_LEVELS.standard[key]);
      expect(CONTEXT_LEVELS.standard[key], key).to.be.at.least(CONTEXT_LEVELS.aggressive[key]);
    }
  });

  it("leaves the input untouched", () => {
    const body = anthropicSession([variedLog(2_000), variedLog(2_000)]);
    const copy = structuredClone(body);
    compressRequest("anthropic", body, contextSettings("aggressive"));
    expect(body).to.deep.equal(copy);
  });

  it("lists the names the cut lines carried, once each, beside the first cut", () => {
    const lines = variedLog(3_000).split("\n");
    lines[1_200] = "loaded plugin from src/plugins/cache_warmer.ts (sha 3f9a2c1d7e)";
    lines[1_800] = "  at FooService.handleRequest (lib/server/router.js:210:14)";
    const text = lines.join("\n");
    const out = resultText(compressRequest("anthropic", anthropicSession([text]), contextSettings("standard")).body, 0);
    const index = out.split("\n").find((l) => l.startsWith("[terse: the omitted part mentions: "));
    expect(index, "the index line").to.be.a("string");
    for (const name of [
      "src/plugins/cache_warmer.ts",
      "3f9a2c1d7e",
      "FooService.handleRequest",
      "lib/server/router.js",
    ]) {
      expect(index).to.include(name);
    }
    // Beside the first cut, and each name once.
    const at = out.split("\n").indexOf(index as string);
    expect(out.split("\n")[at - 1]).to.match(/^\[terse: \d+ lines omitted(?:; `run 0` shows all)?\]$/);
    const names = (index as string)
      .replace(/^\[terse: the omitted part mentions: /, "")
      .replace(/\]$/, "")
      .split(" ");
    expect(new Set(names).size).to.equal(names.length);
    // Within the budget: the level's base plus a tenth of what went.
    expect((index as string).length).to.be.at.most(CONTEXT_LEVELS.standard.keepNames + 0.1 * text.length + 60);
  });

  it("lists the names of a JSON array's omitted items, and keeps the JSON valid", () => {
    const items = Array.from({ length: 40 }, (_, i) => ({ id: i, path: `pkg/module_${i}/index.ts`, ok: true }));
    const out = resultText(
      compressRequest(
        "anthropic",
        anthropicSession([JSON.stringify(items, null, 2).repeat(1)]),
        contextSettings("aggressive"),
      ).body,
      0,
    );
    const parsed = JSON.parse(out) as unknown[];
    const index = parsed.find((v) => typeof v === "string" && v.startsWith("[terse: the omitted part mentions: "));
    expect(index).to.include("pkg/module_4/index.ts"); // the first that went
    expect(index).not.to.include("pkg/module_0/index.ts"); // kept, so not listed
  });
});
