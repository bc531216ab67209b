import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import type OpenAI from "openai";
import { type Harness, PROVIDER_KEY, postAsCaller, startHarness, sdkClients } from "./harness.ts";

// The official SDKs as clients, the fake provider as upstream: what the caller sees and
// what reaches the upstream, for all three wire formats, streamed and not.

describe("data plane through the official SDKs", () => {
  let h: Harness;
  let rawKey: string;

  before(async () => {
    h = await startHarness();
    rawKey = (await h.addKey()).rawKey;
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  function assertNoTerseCredentials(headers: Record<string, unknown>, url: string) {
    const all = JSON.stringify(headers) + url;
    expect(all).not.to.include(rawKey);
    expect(headers).not.to.have.property("x-provider-key");
    expect(headers).not.to.have.property("x-goog-api-key");
  }

  describe("OpenAI chat completions", () => {
    const client = () => sdkClients(h.url, rawKey).openai();

    it("relays a completion and puts the provider key in Authorization", async () => {
      const { data, response } = await client()
        .chat.completions.create(
          { model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] },
          { headers: { "OpenAI-Organization": "org-1" } },
        )
        .withResponse();
      expect(data.choices[0]?.message.content).to.equal("Hello from the fake.");
      expect(data.usage?.prompt_tokens).to.equal(11);
      expect(response.headers.get("x-terse-request-id")).to.match(/^req_/);
      expect(response.headers.get("x-request-id")).to.equal("req_fake"); // upstream's own, passed through
      expect(response.headers.get("server-timing")).to.match(/auth;dur=.*compression;dur=.*upstream/);
      expect(response.headers.get("x-ratelimit-limit")).to.equal("1000");
      const got = h.fake.received[0];
      expect(got?.url).to.equal("/v1/chat/completions");
      expect(got?.headers.authorization).to.equal(`Bearer ${PROVIDER_KEY}`);
      expect(got?.headers["openai-organization"]).to.equal("org-1");
      assertNoTerseCredentials(got?.headers ?? {}, got?.url ?? "");
    });

    it("streams, asking upstream for usage but not showing the caller the extra chunk", async () => {
      const stream = await client().chat.completions.create({
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "Hi" }],
        stream: true,
      });
      let text = "";
      let usageChunks = 0;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? "";
        if (chunk.usage) usageChunks++;
      }
      expect(text).to.equal("Hello from the fake.");
      expect(usageChunks).to.equal(0);
      expect(h.fake.received[0]?.body.stream_options).to.deep.equal({ include_usage: true });
      const events = await waitFor(async () => {
        const all = await h.events();
        return all.find((e) => e.provider === "openai" && e.streamed);
      });
      expect(events).to.include({
        input_tokens: 11,
        output_tokens: 7,
        estimated: false,
        status: 200,
        model: "gpt-4o-mini",
      });
    });

    it("keeps the usage chunk when the caller asked for it", async () => {
      const stream = await client().chat.completions.create({
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "Hi" }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let usage: OpenAI.CompletionUsage | undefined | null;
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      expect(usage?.completion_tokens).to.equal(7);
    });
  });

  describe("Anthropic messages", () => {
    const client = () => sdkClients(h.url, rawKey).anthropic();

    it("relays a message with the key in x-api-key and anthropic-version passed through", async () => {
      const msg = await client().messages.create(
        { model: "claude-test", max_tokens: 100, messages: [{ role: "user", content: "Hi" }] },
        {
          headers: {
            "anthropic-beta": "prompt-caching-2024-07-31",
            "anthropic-version": "2023-06-01",
            "x-api-key": null,
          },
        },
      );
      expect(msg.content[0]).to.deep.include({ type: "text", text: "Hello from the fake." });
      const got = h.fake.received[0];
      expect(got?.url).to.equal("/v1/messages");
      expect(got?.headers["x-api-key"]).to.equal(PROVIDER_KEY);
      expect(got?.headers["anthropic-version"]).to.equal("2023-06-01");
      expect(got?.headers["anthropic-beta"]).to.equal("prompt-caching-2024-07-31");
      expect(got?.headers.authorization).to.equal(undefined);
    });

    it("streams and meters input from message_start and output from message_delta", async () => {
      h.fake.set({ usage: { input: 120, output: 45 } });
      const stream = client().messages.stream(
        { model: "claude-test", max_tokens: 100, messages: [{ role: "user", content: "Hi" }] },
        { headers: { "x-api-key": null } },
      );
      const final = await stream.finalMessage();
      expect(final.content[0]).to.deep.include({ text: "Hello from the fake." });
      const event = await waitFor(async () => (await h.events()).find((e) => e.provider === "anthropic" && e.streamed));
      expect(event).to.include({ input_tokens: 120, output_tokens: 45, estimated: false });
    });
  });

  describe("Gemini generateContent", () => {
    const client = () => sdkClients(h.url, rawKey).gemini();

    it("relays generateContent with the key in the upstream query", async () => {
      const res = await client().models.generateContent({ model: "gemini-2.5-flash", contents: "Hi" });
      expect(res.text).to.equal("Hello from the fake.");
      const got = h.fake.received[0];
      expect(got?.url).to.match(/^\/v1beta\/models\/gemini-2\.5-flash:generateContent\?/);
      expect(new URL(got?.url ?? "", "http://x").searchParams.get("key")).to.equal(PROVIDER_KEY);
      assertNoTerseCredentials(got?.headers ?? {}, "");
    });

    it("streams with alt=sse and meters usageMetadata", async () => {
      h.fake.set({ usage: { input: 30, output: 9 } });
      const stream = await client().models.generateContentStream({ model: "gemini-2.5-flash", contents: "Hi" });
      let text = "";
      for await (const chunk of stream) text += chunk.text ?? "";
      expect(text).to.equal("Hello from the fake.");
      expect(h.fake.received[0]?.url).to.match(/:streamGenerateContent\?.*alt=sse/);
      const event = await waitFor(async () => (await h.events()).find((e) => e.provider === "gemini" && e.streamed));
      expect(event).to.include({ input_tokens: 30, output_tokens: 9 });
    });

    it("answers a stream call that did not ask for SSE with Gemini's JSON array of chunks, metered once", async () => {
      h.fake.set({ usage: { input: 30, output: 9 } });
      const res = await postAsCaller(h.url, "/v1beta/models/gemini-2.5-flash:streamGenerateContent", rawKey, {
        contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      });
      expect(res.status).to.equal(200);
      expect(res.headers.get("content-type")).to.equal("application/json; charset=UTF-8");
      const chunks = JSON.parse(await res.text()) as { candidates?: { content?: { parts?: { text?: string }[] } }[] }[];
      expect(chunks).to.be.an("array").with.length.above(1);
      const text = chunks.flatMap((c) => c.candidates?.[0]?.content?.parts ?? []).map((p) => p.text ?? "");
      expect(text.join("")).to.equal("Hello from the fake.");
      expect(h.fake.received[0]?.url).to.match(/:streamGenerateContent\?alt=sse&key=/);
      const id = res.headers.get("x-terse-request-id");
      const event = await waitFor(async () => (await h.events()).find((e) => e.event_id === id));
      expect(event).to.include({ input_tokens: 30, output_tokens: 9, streamed: true, estimated: false });
    });

    /** terse's own Gemini endpoint, the model in the body. */
    const ownGenerate = (model: string) =>
      postAsCaller(h.url, "/v1/generateContent", rawKey, {
        model,
        contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      });

    it("serves the spec's /v1/generateContent with model and stream in the body, removed upstream", async () => {
      const res = await ownGenerate("gemini-2.5-pro");
      expect(res.status).to.equal(200);
      const got = h.fake.received[0];
      expect(got?.url).to.match(/^\/v1beta\/models\/gemini-2\.5-pro:generateContent\?key=/);
      expect(got?.body).not.to.have.property("model");
      expect(got?.body).not.to.have.property("stream");
    });

    it("takes a model named as a resource (models/...) by its id: sent, metered and priced so", async () => {
      const res = await ownGenerate("models/gemini-2.5-flash");
      expect(res.status).to.equal(200);
      expect(h.fake.received[0]?.path).to.equal("/v1beta/models/gemini-2.5-flash:generateContent");
      const id = res.headers.get("x-terse-request-id");
      const event = await waitFor(async () => (await h.events()).find((e) => e.event_id === id));
      expect(event.model).to.equal("gemini-2.5-flash");
    });
  });
});
