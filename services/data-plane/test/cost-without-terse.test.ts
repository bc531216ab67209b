import { waitFor } from "@terse/testkit";
import { ADAPTERS, type Operation } from "@terse/wire-formats";
import { expect } from "chai";
import { newestTurnTokens } from "../src/domain/without-terse.ts";
import { type Harness, sdkClients, startHarness } from "./harness.ts";

// The usage event's split of the request before compression (docs/savings.md), end to
// end: an agent's third request through terse with the official SDKs, the fake provider
// reporting a request whose cached prefix compression broke (nothing read). The event says
// what the provider would have cached uncompressed: the request minus its newest turn,
// counted on the request as the agent sent it.

/** A command's output that context compression shortens: 300 lines of a log. */
const log = (turn: number) =>
  Array.from(
    { length: 300 },
    (_, i) => `2026-11-24T07:${String(i % 60).padStart(2, "0")}:00 INFO job ${turn} worker ${i % 7} batch ${i} ok`,
  ).join("\n");

const TURNS = [0, 1, 2];
const SYSTEM = "You are a careful coding agent.";

const anthropicRequest = {
  model: "claude-test",
  max_tokens: 256,
  system: SYSTEM,
  messages: [
    { role: "user" as const, content: "Why does the nightly job fail?" },
    ...TURNS.flatMap((i) => [
      {
        role: "assistant" as const,
        content: [
          { type: "tool_use" as const, id: `toolu_${i}`, name: "bash", input: { command: `cat job-${i}.log` } },
        ],
      },
      {
        role: "user" as const,
        content: [{ type: "tool_result" as const, tool_use_id: `toolu_${i}`, content: log(i) }],
      },
    ]),
  ],
};

const openaiRequest = {
  model: "gpt-4.1",
  messages: [
    { role: "system" as const, content: SYSTEM },
    { role: "user" as const, content: "Why does the nightly job fail?" },
    ...TURNS.flatMap((i) => [
      {
        role: "assistant" as const,
        content: null,
        tool_calls: [
          {
            id: `call_${i}`,
            type: "function" as const,
            function: { name: "bash", arguments: JSON.stringify({ command: `cat job-${i}.log` }) },
          },
        ],
      },
      { role: "tool" as const, tool_call_id: `call_${i}`, content: log(i) },
    ]),
  ],
};

const GENERATE = (path: string): Operation => ({ kind: "generate", method: "POST", path });

describe("data plane: the usage event's cost without terse", () => {
  let h: Harness;
  let rawKey: string;

  before(async () => {
    h = await startHarness();
    rawKey = (
      await h.addKey({ context_compress: true, context_compress_level: "standard", smart_detect_enabled: false })
    ).rawKey;
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  const eventOf = (id: string | null) => waitFor(async () => (await h.events()).find((e) => e.event_id === id));

  it("Anthropic (cache marked): the previous request's part read, the newest turn written", async () => {
    // Compression broke the prefix: the provider read nothing and wrote all it was sent.
    h.fake.set({ usage: { input: 9_000, output: 40, cacheRead: 0, cacheWrite: 9_000 } });
    const { response } = await sdkClients(h.url, rawKey).anthropic().messages.create(anthropicRequest).withResponse();
    const saved = Number(response.headers.get("x-terse-input-tokens-saved"));
    expect(saved, "compression cut the logs").to.be.greaterThan(1_000);
    const event = await eventOf(response.headers.get("x-terse-request-id"));
    const newest = newestTurnTokens(ADAPTERS.anthropic, GENERATE("/v1/messages"), anthropicRequest) as number;
    expect(newest).to.be.greaterThan(0);
    expect(event).to.include({
      input_tokens: 9_000,
      cache_read_tokens: 0,
      cache_write_tokens: 9_000,
      input_tokens_before_compression: 9_000 + saved,
      cache_read_tokens_before_compression: 9_000 + saved - newest,
      cache_write_tokens_before_compression: newest,
    });
  });

  it("OpenAI chat (cache automatic): the previous request's part read, nothing written", async () => {
    h.fake.set({ usage: { input: 9_000, output: 40, cacheRead: 0 } });
    const { response } = await sdkClients(h.url, rawKey).openai().chat.completions.create(openaiRequest).withResponse();
    const saved = Number(response.headers.get("x-terse-input-tokens-saved"));
    expect(saved, "compression cut the logs").to.be.greaterThan(1_000);
    const event = await eventOf(response.headers.get("x-terse-request-id"));
    const newest = newestTurnTokens(ADAPTERS.openai, GENERATE("/v1/chat/completions"), openaiRequest) as number;
    expect(event).to.include({
      input_tokens_before_compression: 9_000 + saved,
      cache_read_tokens_before_compression: 9_000 + saved - newest,
      cache_write_tokens_before_compression: 0,
    });
  });

  it("a request with a recall round: the request without terse is its first upstream call", async () => {
    const openai = sdkClients(h.url, rawKey).openai();
    await openai.chat.completions.create(openaiRequest);
    const sent = JSON.stringify(h.fake.received.at(-1)?.body ?? {});
    const cut = sent.match(/recall ([0-9a-f]{12}) lines (\d+)-(\d+)/);
    expect(cut, "a cut naming its recall handle").to.not.equal(null);
    h.fake.reset();
    h.fake.set({
      usage: { input: 9_000, output: 40, cacheRead: 0 },
      toolCall: {
        name: "terse_recall",
        arguments: { handle: cut?.[1], lines: `${cut?.[2]}-${cut?.[2]}` },
        answer: "ok",
      },
    });
    const { response } = await openai.chat.completions.create(openaiRequest).withResponse();
    expect(h.fake.received, "two upstream calls").to.have.length(2);
    const saved = Number(response.headers.get("x-terse-input-tokens-saved"));
    const event = await eventOf(response.headers.get("x-terse-request-id"));
    expect(event).to.include({
      recall_rounds: 1,
      input_tokens: 18_000,
      input_tokens_before_compression: 9_000 + saved,
    });
  });

  it("a session's first request: only what the provider really read counts as read", async () => {
    h.fake.set({ usage: { input: 3_000, output: 40, cacheRead: 1_024 } });
    const first = { model: "gpt-4.1", messages: [{ role: "user" as const, content: `Summarise:\n${log(9)}` }] };
    const { response } = await sdkClients(h.url, rawKey).openai().chat.completions.create(first).withResponse();
    const event = await eventOf(response.headers.get("x-terse-request-id"));
    expect(event).to.include({ cache_read_tokens_before_compression: 1_024, cache_write_tokens_before_compression: 0 });
  });
});
