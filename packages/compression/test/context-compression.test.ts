import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { type CompressionSettings, CONTEXT_LEVELS, compressRequest } from "../src/index.ts";

const CORPUS = join(import.meta.dirname, "..", "..", "..", "..", "shared", "corpus");

const settings = (level: CompressionSettings["context_compress_level"]): CompressionSettings => ({
  intensity: "full",
  auto_compress_input: false,
  smart_detect_enabled: false,
  context_compress: true,
  context_compress_level: level,
});

/** A log of `lines` numbered lines, ~60 characters each. */
const log = (lines: number, tag = "build") =>
  Array.from(
    { length: lines },
    (_, i) => `${tag} step ${String(i).padStart(5, "0")}: compiling module_${i}.ts ... ok`,
  ).join("\n");

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
  it("cuts a long tool result to head and tail at line boundaries, saying how much went", () => {
    const big = log(600); // ~36,000 characters
    const out = compressRequest("anthropic", anthropicSession([big]), settings("standard"));
    const text = resultText(out.body, 0);
    expect(text.length).to.be.lessThan(6_000);
    expect(text).to.match(/\[terse: \d+ lines \(\d+ characters\) omitted from the middle of this output\]/);
    const [head, tail] = text.split(/\n\[terse: [^\]]+\]\n/);
    expect(big.startsWith(head ?? "x")).to.equal(true);
    expect(big.endsWith(tail ?? "x")).to.equal(true);
    expect(head?.endsWith("ok")).to.equal(true); // a whole line
    expect(out.input_tokens_after).to.be.lessThan(out.input_tokens_before / 3);
  });

  it("leaves every result under 16,000 characters untouched at conservative", () => {
    const body = anthropicSession([log(250), log(250, "test")]); // ~15,000 characters each
    const out = compressRequest("anthropic", body, settings("conservative"));
    expect(resultText(out.body, 0)).to.equal(resultText(body, 0));
    expect(resultText(out.body, 1)).to.equal(resultText(body, 1));
  });

  it("replaces a later identical read by a reference to the earlier one, never the other way", () => {
    const file = log(60, "line"); // ~3,600 characters
    const body = anthropicSession([file, "short", file]);
    const out = compressRequest("anthropic", body, settings("standard"));
    expect(resultText(out.body, 0)).to.equal(file);
    expect(resultText(out.body, 2)).to.equal(
      "[terse: identical to the earlier tool result toolu_0 (3599 characters); not repeated]".replace(
        "3599",
        String(file.length),
      ),
    );
  });

  it("does the same in OpenAI and Gemini formats, keeping ids and roles", () => {
    const big = log(600);
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
      settings("aggressive"),
    ).body as { messages: { role: string; tool_call_id?: string; content: string }[] };
    expect(openai.messages[1]?.tool_call_id).to.equal("call_1");
    expect(openai.messages[1]?.content.length).to.be.lessThan(3_000);
    const gemini = compressRequest(
      "gemini",
      { contents: [{ role: "user", parts: [{ functionResponse: { name: "sh", response: { stdout: big } } }] }] },
      settings("aggressive"),
    ).body as { contents: { parts: { functionResponse: { name: string; response: { output: string } } }[] }[] };
    const fr = gemini.contents[0]?.parts[0]?.functionResponse;
    expect(fr?.name).to.equal("sh");
    expect(fr?.response.output.length).to.be.lessThan(3_000);
  });

  it("differs between levels only by named thresholds", () => {
    expect(Object.keys(CONTEXT_LEVELS)).to.deep.equal(["conservative", "standard", "aggressive"]);
    const t = (l: keyof typeof CONTEXT_LEVELS) => CONTEXT_LEVELS[l].truncateAbove;
    expect(t("conservative")).to.be.greaterThan(t("standard"));
    expect(t("standard")).to.be.greaterThan(t("aggressive"));
  });

  describe("on the real agent sessions of the corpus (Anthropic format)", () => {
    const sessions = ["claude-code-hive-mind", "openhands-example"].flatMap((dir) =>
      readdirSync(join(CORPUS, dir))
        .filter((f) => f.endsWith(".messages.json"))
        .map((f) => ({
          name: `${dir}/${f}`,
          messages: JSON.parse(readFileSync(join(CORPUS, dir, f), "utf8")) as Msg[],
        })),
    );

    it("finds the sessions", () => {
      expect(sessions.length).to.be.at.least(15);
    });

    for (const level of ["conservative", "standard", "aggressive"] as const) {
      it(`keeps every pair of consecutive requests sharing its prefix, and every tool pairing, at ${level}`, () => {
        let requests = 0;
        let shortened = 0;
        for (const { name, messages } of sessions) {
          // Request t is the history up to and including user turn t, as the agent sent it.
          const ends = messages.flatMap((m, i) => (m.role === "user" ? [i + 1] : []));
          let previous: Msg[] | undefined;
          for (const end of ends) {
            const input = { model: "m", max_tokens: 10, messages: messages.slice(0, end) };
            const out = compressRequest("anthropic", input, settings(level)).body as { messages: Msg[] };
            expect(out.messages.length, name).to.equal(end);
            if (previous) expect(out.messages.slice(0, previous.length), `${name} at ${end}`).to.deep.equal(previous);
            previous = out.messages;
            requests++;
          }
          const final = previous ?? [];
          const ids = (ms: Msg[], type: string, key: string) =>
            ms
              .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
              .filter((b) => b.type === type)
              .map((b) => b[key]);
          expect(ids(final, "tool_result", "tool_use_id"), name).to.deep.equal(
            ids(messages.slice(0, final.length), "tool_result", "tool_use_id"),
          );
          expect(ids(final, "tool_use", "id"), name).to.deep.equal(
            ids(messages.slice(0, final.length), "tool_use", "id"),
          );
          if (JSON.stringify(final) !== JSON.stringify(messages.slice(0, final.length))) shortened++;
        }
        expect(requests).to.be.greaterThan(200);
        if (level !== "conservative") expect(shortened).to.be.greaterThan(3);
      });
    }
  });
});
