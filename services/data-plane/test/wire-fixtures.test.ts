import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "@terse/testkit";
import { ADAPTERS, SseSplitter } from "@terse/wire-formats";
import { expect } from "chai";
import { UsageTap } from "../src/domain/usage-tap.ts";

// The usage tap against streams recorded from the real APIs (../shared/corpus/wire-fixtures,
// from the providers' own SDK test suites), not only against our fake provider. Each
// stream is fed in pieces that cut events, lines and UTF-8 text apart, as a network does.

const FIXTURES = join(REPO_ROOT, "..", "shared", "corpus", "wire-fixtures");

/** The tap's reading of an SSE stream delivered in `size`-character pieces. */
function tapStream(provider: "openai" | "anthropic" | "openai-responses", sse: string, size: number) {
  const tap = new UsageTap(ADAPTERS[provider]);
  const splitter = new SseSplitter((_raw, data) => tap.observe(data));
  for (let i = 0; i < sse.length; i += size) splitter.push(sse.slice(i, i + size));
  splitter.flush();
  return tap;
}

const PIECE_SIZES = [1, 7, 64, 100_000];

describe("usage capture on recorded provider streams", () => {
  // Read off each file: message_start's input (+ cache parts), the last message_delta's
  // output; the newer shape repeats a cumulative input in message_delta, which wins.
  const anthropic: Record<string, { input: number; output: number }> = {
    "tests_fixtures_fable-fallback_stream-a-refusal.sse": { input: 28, output: 106 },
    "tests_fixtures_fable-fallback_stream-a-toolrefusal.sse": { input: 28, output: 106 },
    "tests_fixtures_fable-fallback_stream-b-fallback.sse": { input: 31, output: 547 },
    "tests_lib_fixtures_basic_response.txt": { input: 11, output: 6 },
    "tests_lib_fixtures_incomplete_partial_json_response.txt": { input: 450, output: 124 },
    "tests_lib_fixtures_tool_use_response.txt": { input: 377, output: 65 },
  };

  it("Anthropic: every recorded stream, whatever the piece size", () => {
    const files = readdirSync(join(FIXTURES, "anthropic"));
    expect(files.sort()).to.deep.equal(Object.keys(anthropic).sort());
    for (const file of files) {
      const sse = readFileSync(join(FIXTURES, "anthropic", file), "utf8");
      for (const size of PIECE_SIZES) {
        // The recordings report their cache parts as 0: read as 0, not as missing.
        expect(tapStream("anthropic", sse, size).usage, `${file} in pieces of ${size}`).to.deep.equal({
          ...anthropic[file],
          cacheRead: 0,
          cacheWrite: 0,
        });
      }
    }
  });

  it("OpenAI: the include_usage chunk of every recorded chat-completion stream", () => {
    const snap = readFileSync(join(FIXTURES, "openai", "ChatCompletionStream.test.ts.snap"), "utf8");
    // Jest stores each stream as "...": the SSE text between the quotes.
    const streams = [...snap.matchAll(/^exports\[`[^`]+`\] = `\n"([\s\S]*?)"\n`;$/gm)].map((m) => m[1] ?? "");
    const withUsage = streams.filter((s) => s.includes('"usage":{'));
    expect(withUsage.length).to.be.at.least(3);
    for (const sse of withUsage) {
      // The oracle reads the raw text; the tap parses the events.
      const last = [...sse.matchAll(/"usage":\{"prompt_tokens":(\d+),"completion_tokens":(\d+)/g)].at(-1);
      for (const size of PIECE_SIZES) {
        expect(tapStream("openai", sse, size).usage).to.deep.equal({
          input: Number(last?.[1]),
          output: Number(last?.[2]),
          cacheRead: 0,
          cacheWrite: 0,
        });
      }
    }
  });

  it("OpenAI Responses: response.completed's usage and its input_tokens_details.cached_tokens", () => {
    const snap = readFileSync(join(FIXTURES, "openai", "ResponseStream.test.ts.snap"), "utf8");
    const streams = [...snap.matchAll(/^exports\[`[^`]+`\] = `\n"([\s\S]*?)"\n`;$/gm)]
      .map((m) => (m[1] ?? "").replace(/\\"/g, '"'))
      .filter((s) => s.includes('"response.completed"'));
    expect(streams.length).to.be.at.least(1);
    for (const sse of streams) {
      // The oracle reads the raw text: the last usage (response.completed's).
      const usage = [
        ...sse.matchAll(
          /"usage":\{"input_tokens":(\d+),"input_tokens_details":\{"cached_tokens":(\d+)\},"output_tokens":(\d+)/g,
        ),
      ].at(-1);
      expect(usage, "the recording's usage").to.not.equal(undefined);
      for (const size of PIECE_SIZES) {
        expect(tapStream("openai-responses", sse, size).usage).to.deep.equal({
          input: Number(usage?.[1]),
          output: Number(usage?.[3]),
          cacheRead: Number(usage?.[2]),
          cacheWrite: 0,
        });
      }
    }
  });

  it("Gemini: the last usageMetadata of each recorded streamGenerateContent, thoughts counted as output", () => {
    const expected: Record<string, { input: number; output: number }[]> = {
      "AFC_Streaming_Tests_generateContentStream_afc_disabled_Google_AI_AFC_disabled.json": [{ input: 17, output: 6 }],
      "Chats_Tests_chats_function_calling_Google_AI_with_function_calling_stream.json": [
        { input: 21, output: 6 },
        { input: 38, output: 6 },
      ],
      "Chats_Tests_sendMessage_Google_AI_with_text_stream.json": [{ input: 6, output: 377 }],
      "Chats_Tests_sendMessage_Vertex_AI_with_text_stream.json": [{ input: 6, output: 481 }],
      "Client_Tests_generateContentStream_ML_Dev_should_stream_generate_content_with_system_instruction.json": [
        { input: 20, output: 513 },
      ],
    };
    const files = readdirSync(join(FIXTURES, "gemini"));
    expect(files.sort()).to.deep.equal(Object.keys(expected).sort());
    for (const file of files) {
      const recording = JSON.parse(readFileSync(join(FIXTURES, "gemini", file), "utf8")) as {
        interactions: { response: { bodySegments: unknown[] } }[];
      };
      const got = recording.interactions.map((interaction) => {
        const tap = new UsageTap(ADAPTERS.gemini);
        // Each segment is one parsed SSE chunk: sent as the data line the API wrote.
        const sse = interaction.response.bodySegments.map((chunk) => `data: ${JSON.stringify(chunk)}\r\n\r\n`).join("");
        const splitter = new SseSplitter((_raw, data) => tap.observe(data));
        splitter.push(sse);
        splitter.flush();
        return tap.usage;
      });
      const noCache = expected[file]?.map((u) => ({ ...u, cacheRead: 0, cacheWrite: 0 }));
      expect(got, file).to.deep.equal(noCache);
    }
  });
});
