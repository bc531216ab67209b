import Anthropic from "@anthropic-ai/sdk";
import { waitFor } from "@terse/testkit";
import type { UsageEvent } from "@terse/usage-events";
import { expect } from "chai";
import { type Harness, PROVIDER_KEY, startHarness, sdkClients } from "./harness.ts";

// Prompt-cache counts, end to end through the data plane: the fake provider reports
// cache reads (and Anthropic's writes) in each wire format's own fields, the official
// SDK calls through terse, and the usage event carries them apart, JSON and stream.

const USAGE = { input: 5000, output: 40, cacheRead: 4096, cacheWrite: 0 };
const ANTHROPIC_USAGE = { input: 5000, output: 40, cacheRead: 3000, cacheWrite: 1500 };

describe("prompt-cache usage through the data plane", () => {
  let h: Harness;
  let rawKey: string;

  before(async () => {
    h = await startHarness();
    rawKey = (await h.addKey()).rawKey;
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  /** The event of the one request `call` makes, once the publisher has queued it. */
  async function eventOf(provider: string, streamed: boolean, call: () => Promise<unknown>): Promise<UsageEvent> {
    const seen = new Set((await h.events()).map((e) => e.event_id));
    await call();
    return waitFor(async () =>
      (await h.events()).find((e) => !seen.has(e.event_id) && e.provider === provider && e.streamed === streamed),
    );
  }

  const openai = () => sdkClients(h.url, rawKey).openai();
  const anthropic = () =>
    new Anthropic({
      baseURL: h.url,
      apiKey: "unused",
      defaultHeaders: { Authorization: `Bearer ${rawKey}`, "X-Provider-Key": PROVIDER_KEY, "x-api-key": null },
      maxRetries: 0,
    });
  const gemini = () => sdkClients(h.url, rawKey).gemini();

  const cacheFields = (e: UsageEvent) => ({
    input_tokens: e.input_tokens,
    output_tokens: e.output_tokens,
    cache_read_tokens: e.cache_read_tokens,
    cache_write_tokens: e.cache_write_tokens,
    estimated: e.estimated,
  });
  const expected = (u: typeof USAGE) => ({
    input_tokens: u.input,
    output_tokens: u.output,
    cache_read_tokens: u.cacheRead,
    cache_write_tokens: u.cacheWrite,
    estimated: false,
  });

  for (const streamed of [false, true]) {
    const how = streamed ? "stream" : "JSON";

    it(`OpenAI chat completions (${how}): prompt_tokens_details.cached_tokens`, async () => {
      h.fake.set({ usage: USAGE });
      const request = { model: "gpt-4o-mini", messages: [{ role: "user" as const, content: "Hi" }] };
      const event = await eventOf("openai", streamed, async () => {
        if (!streamed) return openai().chat.completions.create(request);
        for await (const _ of await openai().chat.completions.create({ ...request, stream: true }));
      });
      expect(cacheFields(event)).to.deep.equal(expected(USAGE));
      expect(h.fake.received[0]?.url).to.equal("/v1/chat/completions");
    });

    it(`OpenAI Responses (${how}): input_tokens_details.cached_tokens`, async () => {
      h.fake.set({ usage: USAGE });
      const event = await eventOf("openai", streamed, async () => {
        if (!streamed) return openai().responses.create({ model: "gpt-5-codex", input: "Hi" });
        for await (const _ of await openai().responses.create({ model: "gpt-5-codex", input: "Hi", stream: true }));
      });
      expect(cacheFields(event)).to.deep.equal(expected(USAGE));
      expect(h.fake.received[0]?.url).to.equal("/v1/responses");
    });

    it(`Anthropic messages (${how}): cache_read_input_tokens and cache_creation_input_tokens`, async () => {
      h.fake.set({ usage: ANTHROPIC_USAGE });
      const request = { model: "claude-test", max_tokens: 100, messages: [{ role: "user" as const, content: "Hi" }] };
      const event = await eventOf("anthropic", streamed, async () => {
        if (!streamed) return anthropic().messages.create(request);
        return anthropic().messages.stream(request).finalMessage();
      });
      // input_tokens keeps meaning every billed input token: the uncached rest plus both cache parts.
      expect(cacheFields(event)).to.deep.equal(expected(ANTHROPIC_USAGE));
    });

    it(`Gemini generateContent (${how}): cachedContentTokenCount`, async () => {
      h.fake.set({ usage: USAGE });
      const event = await eventOf("gemini", streamed, async () => {
        const request = { model: "gemini-2.5-flash", contents: "Hi" };
        if (!streamed) return gemini().models.generateContent(request);
        for await (const _ of await gemini().models.generateContentStream(request));
      });
      expect(cacheFields(event)).to.deep.equal(expected(USAGE));
    });
  }

  for (const status of [429, 500]) {
    it(`an upstream refusal (${status}) is metered as what the provider bills for it: nothing`, async () => {
      h.fake.set({ status });
      // A long tool result that compression cuts: even so the request saved nothing, refused as it would be without terse.
      const log = Array.from({ length: 2_000 }, (_, i) => `12:00:${i % 60} INFO worker ${i} heartbeat ok`).join("\n");
      const compressing = (await h.addKey({ context_compress: true, context_compress_level: "standard" })).rawKey;
      const event = await eventOf("openai", false, () =>
        sdkClients(h.url, compressing)
          .openai()
          .chat.completions.create({
            model: "gpt-4o-mini",
            messages: [
              { role: "user", content: "Why does the worker stall?" },
              {
                role: "assistant",
                tool_calls: [
                  { id: "c1", type: "function", function: { name: "sh", arguments: '{"cmd":"cat w.log"}' } },
                ],
              },
              { role: "tool", tool_call_id: "c1", content: log },
            ],
          })
          .catch(() => undefined),
      );
      expect(event).to.include({ status, input_tokens: 0, output_tokens: 0, estimated: false });
      expect(event).to.include({ input_tokens_before_compression: 0 });
      expect(event).to.include({ cache_read_tokens: 0, cache_write_tokens: 0 });
    });
  }
});
