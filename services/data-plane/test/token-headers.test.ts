import { countInputTokens } from "@terse/compression";
import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import { type Harness, PROVIDER_KEY, sdkClients, startHarness } from "./harness.ts";

// X-Terse-Input-Tokens-Before / -After / -Saved on every answer to a request compression
// saw, JSON, stream and upstream error alike, so an agent's own logs show what terse did:
// after is the tokenizer's count of what reached the upstream, before = after + saved,
// and saved is what the usage event adds to the provider's input count.

/** A tool result context compression shortens: 300 lines of a repetitive log. */
const LOG = Array.from(
  { length: 300 },
  (_, i) => `2026-11-24T04:00:${String(i % 60).padStart(2, "0")} INFO worker ${i % 7} processed batch ${i} ok`,
).join("\n");

const MESSAGES = [
  { role: "user" as const, content: "Run the tests" },
  {
    role: "assistant" as const,
    content: null,
    tool_calls: [
      { id: "call_1", type: "function" as const, function: { name: "bash", arguments: '{"cmd":"npm test"}' } },
    ],
  },
  { role: "tool" as const, tool_call_id: "call_1", content: LOG },
  { role: "user" as const, content: "What failed?" },
];

describe("data plane: input token headers", () => {
  let h: Harness;
  let rawKey: string;

  before(async () => {
    h = await startHarness();
    rawKey = (
      await h.addKey({
        intensity: "full",
        smart_detect_enabled: false,
        context_compress: true,
        auto_compress_input: true,
      })
    ).rawKey;
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  const client = () => sdkClients(h.url, rawKey).openai();
  const counts = (headers: Headers) => ({
    before: Number(headers.get("x-terse-input-tokens-before")),
    after: Number(headers.get("x-terse-input-tokens-after")),
    saved: Number(headers.get("x-terse-input-tokens-saved")),
  });

  it("JSON: after counts what the upstream received, before = after + saved, and the usage event agrees", async () => {
    const { response } = await client()
      .chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES })
      .withResponse();
    const c = counts(response.headers);
    const sent = h.fake.received[0]?.body ?? {};
    expect(c.after).to.equal(countInputTokens("openai", sent));
    expect(c.before).to.equal(countInputTokens("openai", { messages: MESSAGES }));
    expect(c.saved).to.equal(c.before - c.after);
    // Most of the log is gone: the headers say so before the body is read.
    expect(c.saved).to.be.greaterThan(c.after);
    const id = response.headers.get("x-terse-request-id");
    const event = await waitFor(async () => (await h.events()).find((e) => e.event_id === id));
    expect(event.input_tokens_before_compression - event.input_tokens).to.equal(c.saved);
  });

  it("stream and upstream error answers carry them too", async () => {
    const stream = await client()
      .chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES, stream: true })
      .withResponse();
    for await (const _ of stream.data);
    const streamed = counts(stream.response.headers);
    expect(streamed.saved).to.be.greaterThan(0);
    expect(streamed.before).to.equal(streamed.after + streamed.saved);

    h.fake.set({ status: 429 });
    const failed = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${rawKey}`,
        "x-provider-key": PROVIDER_KEY,
        "content-type": "application/json",
      },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: MESSAGES }),
    });
    expect(failed.status).to.equal(429);
    expect(counts(failed.headers)).to.deep.equal(streamed);
  });

  it("every wire format: Anthropic, Responses and Gemini answers carry the counts of what their upstream received", async () => {
    const cases = [
      {
        format: "anthropic" as const,
        path: "/v1/messages",
        body: {
          model: "claude-test",
          max_tokens: 100,
          messages: [
            { role: "user", content: "Run the tests" },
            {
              role: "assistant",
              content: [{ type: "tool_use", id: "tu_1", name: "bash", input: { cmd: "npm test" } }],
            },
            { role: "user", content: [{ type: "tool_result", tool_use_id: "tu_1", content: LOG }] },
          ],
        },
      },
      {
        format: "openai-responses" as const,
        path: "/v1/responses",
        body: {
          model: "gpt-5-codex",
          input: [
            { role: "user", content: "Run the tests" },
            { type: "function_call", call_id: "fc_1", name: "bash", arguments: '{"cmd":"npm test"}' },
            { type: "function_call_output", call_id: "fc_1", output: LOG },
          ],
        },
      },
      {
        format: "gemini" as const,
        path: "/v1beta/models/gemini-2.5-flash:generateContent",
        body: { contents: [{ role: "user", parts: [{ text: "Summarise the plot of Hamlet in a few lines" }] }] },
      },
    ];
    for (const c of cases) {
      h.fake.reset();
      const res = await fetch(`${h.url}${c.path}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${rawKey}`,
          "x-provider-key": PROVIDER_KEY,
          "content-type": "application/json",
        },
        body: JSON.stringify(c.body),
      });
      expect(res.status, c.format).to.equal(200);
      const got = counts(res.headers);
      expect(got.after, c.format).to.equal(countInputTokens(c.format, h.fake.received[0]?.body ?? {}));
      expect(got.before, c.format).to.equal(got.after + got.saved);
      // The long tool result is shortened in the two agent formats.
      if (c.format !== "gemini") expect(got.saved, c.format).to.be.greaterThan(got.after);
    }
  });

  it("a short request shows the instruction terse added as negative savings; a model list has no counts", async () => {
    const { response } = await client()
      .chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] })
      .withResponse();
    const c = counts(response.headers);
    // terse adds its instruction: more tokens went up than came in.
    expect(c.saved).to.be.below(0);
    expect(c.after).to.equal(countInputTokens("openai", h.fake.received[0]?.body ?? {}));
    expect(c.before).to.equal(c.after + c.saved);
    const models = await fetch(`${h.url}/v1/models`, {
      headers: { authorization: `Bearer ${rawKey}`, "x-provider-key": PROVIDER_KEY },
    });
    expect(models.status).to.equal(200);
    expect(models.headers.get("x-terse-input-tokens-saved")).to.equal(null);
  });

  it("a tool result that prints a special token's spelling (<|endoftext|>) is counted as text, not refused", async () => {
    // The newest turn is counted for the usage event and every part for the headers:
    // gpt-tokenizer's default throws on a special token, which answered such a request 500.
    const printed = 'tokenizer.decode([199999]) == "<|endoftext|>"';
    const messages = [...MESSAGES.slice(0, 2), { ...MESSAGES[2], content: printed }, MESSAGES[3]];
    const { response } = await client()
      .chat.completions.create({ model: "gpt-4o-mini", messages: messages as typeof MESSAGES })
      .withResponse();
    expect(response.status).to.equal(200);
    const c = counts(response.headers);
    expect(c.after).to.equal(countInputTokens("openai", h.fake.received[0]?.body ?? {}));
    expect(c.before).to.equal(c.after + c.saved);
    const id = response.headers.get("x-terse-request-id");
    const event = await waitFor(async () => (await h.events()).find((e) => e.event_id === id));
    // The request as sent, less what terse added (the instruction on a short request).
    expect(event.input_tokens_before_compression).to.equal(Math.max(0, event.input_tokens + c.saved));
  });
});
