import { expect } from "chai";
import { ADAPTERS, type ReportedUsage, type WireFormat } from "../src/index.ts";

// Each adapter's usage reader, with prompt caching in play: the cache parts come out
// apart and `input` keeps counting every billed input token. Bodies are shaped as each
// provider documents them (the recorded fixtures of ../shared/corpus/wire-fixtures hold
// only zero cache counts; services/data-plane/test/wire-fixtures.test.ts reads those).

/** What the adapter reads from a stream: each event's data in order, as the usage tap feeds them. */
function readStream(format: WireFormat, events: Record<string, unknown>[]): ReportedUsage | undefined {
  let seen: ReportedUsage | undefined;
  for (const data of events) seen = ADAPTERS[format].usage(data, seen) ?? seen;
  return seen;
}

describe("usage with prompt caching, per wire format", () => {
  it("OpenAI chat: prompt_tokens_details.cached_tokens are reads within prompt_tokens (JSON and the include_usage chunk)", () => {
    const usage = {
      prompt_tokens: 2006,
      completion_tokens: 300,
      total_tokens: 2306,
      prompt_tokens_details: { cached_tokens: 1920, audio_tokens: 0 },
    };
    const want = { input: 2006, output: 300, cacheRead: 1920, cacheWrite: 0 };
    expect(ADAPTERS.openai.usage({ object: "chat.completion", choices: [], usage }, undefined)).to.deep.equal(want);
    const stream = [
      { object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "Hi" } }], usage: null },
      { object: "chat.completion.chunk", choices: [], usage },
    ];
    expect(readStream("openai", stream)).to.deep.equal(want);
    // Older servers and compatible ones send no details: no cache, not a failure.
    expect(ADAPTERS.openai.usage({ usage: { prompt_tokens: 5, completion_tokens: 1 } }, undefined)).to.deep.equal({
      input: 5,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
    });
  });

  it("OpenAI Responses: input_tokens_details.cached_tokens (JSON and response.completed)", () => {
    const usage = {
      input_tokens: 5000,
      input_tokens_details: { cached_tokens: 4096 },
      output_tokens: 120,
      output_tokens_details: { reasoning_tokens: 64 },
      total_tokens: 5120,
    };
    const want = { input: 5000, output: 120, cacheRead: 4096, cacheWrite: 0 };
    expect(ADAPTERS["openai-responses"].usage({ object: "response", usage }, undefined)).to.deep.equal(want);
    const stream = [
      { type: "response.created", response: { usage: null } },
      { type: "response.output_text.delta", delta: "Hi" },
      { type: "response.completed", response: { object: "response", usage } },
    ];
    expect(readStream("openai-responses", stream)).to.deep.equal(want);
  });

  it("Anthropic: cache reads and writes add to input_tokens (JSON, message_start, and a message_delta that repeats or omits them)", () => {
    const usage = {
      input_tokens: 50,
      cache_creation_input_tokens: 1200,
      cache_read_input_tokens: 30000,
      output_tokens: 80,
    };
    const want = { input: 31250, output: 80, cacheRead: 30000, cacheWrite: 1200 };
    expect(ADAPTERS.anthropic.usage({ type: "message", content: [], usage }, undefined)).to.deep.equal(want);

    const start = { type: "message_start", message: { usage: { ...usage, output_tokens: 1 } } };
    // The older shape: message_delta carries output_tokens only; the input parts stay message_start's.
    const olderDelta = { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 80 } };
    expect(readStream("anthropic", [start, olderDelta])).to.deep.equal(want);
    // The newer shape repeats the cumulative input parts, which win (a fallback can change them).
    const newerDelta = {
      type: "message_delta",
      delta: { stop_reason: "end_turn" },
      usage: { input_tokens: 60, cache_creation_input_tokens: 0, cache_read_input_tokens: 31200, output_tokens: 90 },
    };
    expect(readStream("anthropic", [start, newerDelta])).to.deep.equal({
      input: 31260,
      output: 90,
      cacheRead: 31200,
      cacheWrite: 0,
    });
    // A delta that repeats input_tokens but not the cache parts keeps message_start's cache parts.
    const partialDelta = { type: "message_delta", usage: { input_tokens: 50, output_tokens: 80 } };
    expect(readStream("anthropic", [start, partialDelta])).to.deep.equal(want);
  });

  it("Gemini: cachedContentTokenCount is within promptTokenCount (JSON and the last stream chunk)", () => {
    const last = {
      promptTokenCount: 9000,
      cachedContentTokenCount: 8192,
      candidatesTokenCount: 40,
      thoughtsTokenCount: 10,
      totalTokenCount: 9050,
    };
    const want = { input: 9000, output: 50, cacheRead: 8192, cacheWrite: 0 };
    expect(ADAPTERS.gemini.usage({ candidates: [], usageMetadata: last }, undefined)).to.deep.equal(want);
    const stream = [
      {
        candidates: [{ content: { parts: [{ text: "a" }] } }],
        usageMetadata: { promptTokenCount: 9000, totalTokenCount: 9000 },
      },
      { candidates: [{ content: { parts: [{ text: "b" }] }, finishReason: "STOP" }], usageMetadata: last },
    ];
    expect(readStream("gemini", stream)).to.deep.equal(want);
  });

  it("a count the stream will raise is partial: Anthropic's message_start, a Gemini chunk before the one that finishes", () => {
    const start = { type: "message_start", message: { usage: { input_tokens: 11, output_tokens: 1 } } };
    expect(readStream("anthropic", [start])).to.deep.equal({
      input: 11,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      partial: true,
    });
    const chunk = (finishReason?: string) => ({
      candidates: [{ content: { parts: [{ text: "a" }] }, ...(finishReason ? { finishReason } : {}) }],
      usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 3 },
    });
    expect(readStream("gemini", [chunk()])).to.have.property("partial", true);
    expect(readStream("gemini", [chunk(), chunk("MAX_TOKENS")])).not.to.have.property("partial");
    // A prompt refused before any candidate: its count is the whole answer's.
    expect(
      ADAPTERS.gemini.usage(
        { promptFeedback: { blockReason: "SAFETY" }, usageMetadata: { promptTokenCount: 9 } },
        undefined,
      ),
    ).not.to.have.property("partial");
  });
});
