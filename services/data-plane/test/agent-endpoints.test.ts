import { countTokensOf } from "@terse/fake-provider";
import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import { type Harness, logLines, PROVIDER_KEY, sdkClients, startHarness } from "./harness.ts";

// The endpoints coding agents call besides generation, through the official SDKs: the
// Responses API (Codex CLI's only wire), Anthropic's count_tokens (Claude Code decides
// when to compact by it), Gemini's countTokens, and the model lists clients fetch at
// start. Each is authenticated and rate-limited; only model calls are metered.

const LONG_LOG = Array.from(
  { length: 1_500 },
  (_, i) => `2026-11-24T04:00:${String(i % 60).padStart(2, "0")}Z INFO worker ${i} heartbeat ok`,
).join("\n");

describe("data plane: the endpoints agents call", () => {
  let h: Harness;
  let rawKey: string;
  let compressingKey: string;

  before(async () => {
    h = await startHarness();
    rawKey = (await h.addKey()).rawKey;
    compressingKey = (await h.addKey({ context_compress: true, context_compress_level: "standard" })).rawKey;
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  const openai = (key = rawKey) => sdkClients(h.url, key).openai();
  const anthropic = () => sdkClients(h.url, rawKey).anthropic();
  const gemini = () => sdkClients(h.url, rawKey).gemini();

  async function eventOf(requestId: string | null) {
    return waitFor(async () => (await h.events()).find((e) => e.event_id === requestId), {
      what: `the usage event of ${requestId}`,
    });
  }

  function expectOnlyProviderKey(headers: Record<string, unknown>, url: string) {
    expect(JSON.stringify(headers) + url).not.to.include(rawKey);
    expect(headers).not.to.have.property("x-provider-key");
  }

  describe("POST /v1/responses", () => {
    it("relays a response, the instruction appended to the caller's instructions, and meters it", async () => {
      const { data, response } = await openai()
        .responses.create({ model: "gpt-5.1-codex", instructions: "You are Codex.", input: "Say hi." })
        .withResponse();
      expect(data.output_text).to.equal("Hello from the fake.");
      const got = h.fake.received[0];
      expect(got?.path).to.equal("/v1/responses");
      expect(got?.headers.authorization).to.equal(`Bearer ${PROVIDER_KEY}`);
      expectOnlyProviderKey(got?.headers ?? {}, got?.url ?? "");
      expect(String(got?.body.instructions)).to.match(/^You are Codex\.\n\n\S/);
      const event = await eventOf(response.headers.get("x-terse-request-id"));
      expect(event).to.include({ provider: "openai", model: "gpt-5.1-codex", input_tokens: 11, output_tokens: 7 });
      expect(event).to.include({ streamed: false, estimated: false });
    });

    it("streams response.created ... response.completed, metered from response.completed", async () => {
      h.fake.set({ usage: { input: 30, output: 9 } });
      const { data: stream, response } = await openai()
        .responses.create({ model: "gpt-5.1-codex", input: "Say hi.", stream: true })
        .withResponse();
      const types: string[] = [];
      let text = "";
      for await (const e of stream) {
        types.push(e.type);
        if (e.type === "response.output_text.delta") text += e.delta;
      }
      expect(types[0]).to.equal("response.created");
      expect(types.at(-1)).to.equal("response.completed");
      expect(text).to.equal("Hello from the fake.");
      const event = await eventOf(response.headers.get("x-terse-request-id"));
      expect(event).to.include({ input_tokens: 30, output_tokens: 9, streamed: true, estimated: false });
    });

    it("passes previous_response_id through and compresses the function_call_output it sends", async () => {
      await openai(compressingKey).responses.create({
        model: "gpt-5.1-codex",
        previous_response_id: "resp_earlier",
        input: [
          {
            type: "function_call",
            call_id: "call_1",
            name: "shell",
            arguments: JSON.stringify({ command: "cat app.log" }),
          },
          { type: "function_call_output", call_id: "call_1", output: LONG_LOG },
        ],
      });
      const body = h.fake.received[0]?.body as { previous_response_id: string; input: { output?: string }[] };
      expect(body.previous_response_id).to.equal("resp_earlier");
      const output = String(body.input[1]?.output);
      expect(output.length).to.be.lessThan(LONG_LOG.length / 2);
      expect(output).to.include("worker 0 heartbeat").and.include("worker 1499 heartbeat");
    });
  });

  describe("token counts", () => {
    it("Anthropic count_tokens: forwarded with the body terse would send, so the count is of it; not metered", async () => {
      const params = {
        model: "claude-sonnet-4-5",
        system: "You are Claude Code.",
        messages: [{ role: "user" as const, content: "How many tokens is this?" }],
      };
      const { data, response } = await anthropic().messages.countTokens(params).withResponse();
      const got = h.fake.received[0];
      expect(got?.path).to.equal("/v1/messages/count_tokens");
      expect(got?.headers["x-api-key"]).to.equal(PROVIDER_KEY);
      expectOnlyProviderKey(got?.headers ?? {}, got?.url ?? "");
      // The response instruction is part of what terse sends, so it is counted.
      expect(JSON.stringify(got?.body.system)).to.include("You are Claude Code.");
      expect(JSON.stringify(got?.body)).not.to.equal(JSON.stringify(params));
      expect(data.input_tokens).to.equal(countTokensOf(got?.body ?? {}));
      expect(response.headers.get("x-ratelimit-remaining")).to.match(/^\d+$/);
      // A count is no model call: the request leaves no usage event.
      const id = response.headers.get("x-terse-request-id");
      const later = await anthropic()
        .messages.create({ ...params, max_tokens: 10 })
        .withResponse();
      await eventOf(later.response.headers.get("x-terse-request-id"));
      expect((await h.events()).some((e) => e.event_id === id)).to.equal(false);
    });

    it("Gemini countTokens on the native path, the key in the upstream query", async () => {
      const res = await gemini().models.countTokens({ model: "gemini-2.5-flash", contents: "Count me." });
      const got = h.fake.received[0];
      expect(got?.path).to.match(/^\/v1beta\/models\/gemini-2\.5-flash:countTokens$/);
      expect(got?.query.key).to.equal(PROVIDER_KEY);
      expect(res.totalTokens).to.equal(countTokensOf(got?.body ?? {}));
    });
  });

  describe("token counts of a key with context compression: what the model call will send", () => {
    type Sent = Record<string, unknown>;
    const sentAt = (i: number) => (h.fake.received[i]?.body ?? {}) as Sent;
    const pick = (body: Sent, fields: string[]) => JSON.stringify(fields.map((f) => body[f]));

    it("Anthropic count_tokens counts the call's system, messages and tools, terse_recall among them", async () => {
      const params = {
        model: "claude-sonnet-4-5",
        system: "You are Claude Code.",
        tools: [{ name: "Bash", description: "Runs a command.", input_schema: { type: "object" as const } }],
        messages: [
          { role: "user" as const, content: "Why does the worker stall?" },
          {
            role: "assistant" as const,
            content: [{ type: "tool_use" as const, id: "toolu_1", name: "Bash", input: { command: "cat app.log" } }],
          },
          {
            role: "user" as const,
            content: [{ type: "tool_result" as const, tool_use_id: "toolu_1", content: LONG_LOG }],
          },
        ],
      };
      const client = sdkClients(h.url, compressingKey).anthropic();
      const counted = await client.messages.countTokens(params);
      await client.messages.create({ ...params, max_tokens: 10 });
      const [count, call] = [sentAt(0), sentAt(1)];
      const fields = ["system", "messages", "tools"];
      expect(pick(count, fields)).to.equal(pick(call, fields));
      expect(JSON.stringify(count.tools)).to.include('"terse_recall"');
      expect(JSON.stringify(count.messages).length).to.be.lessThan(LONG_LOG.length / 2);
      expect(counted.input_tokens).to.equal(countTokensOf(count));
    });

    it("Gemini countTokens of bare contents (as @google/genai sends them) counts the call's request, wrapped", async () => {
      const client = sdkClients(h.url, compressingKey).gemini();
      const contents = [{ role: "user", parts: [{ text: "Count me, then answer me." }] }];
      await client.models.countTokens({ model: "gemini-2.5-flash", contents });
      await client.models.generateContent({ model: "gemini-2.5-flash", contents });
      const wrapped = sentAt(0).generateContentRequest as Sent;
      expect(Object.keys(sentAt(0))).to.deep.equal(["generateContentRequest"]);
      expect(wrapped.model).to.equal("models/gemini-2.5-flash");
      const fields = ["contents", "systemInstruction", "tools"];
      expect(pick(wrapped, fields)).to.equal(pick(sentAt(1), fields));
      expect(JSON.stringify(wrapped.systemInstruction)).to.include("[terse]");
      expect(JSON.stringify(wrapped.tools)).to.include('"terse_recall"');
    });
  });

  describe("Gemini requests that take no system instruction and no tools", () => {
    type Sent = { contents: { role: string; parts: { text?: string }[] }[] } & Record<string, unknown>;
    const sent = () => h.fake.received[0]?.body as Sent;

    it("one naming a cached content: terse's instruction opens the first user turn, no tool, and Gemini answers", async () => {
      const res = await sdkClients(h.url, compressingKey)
        .gemini()
        .models.generateContent({
          model: "gemini-2.5-flash",
          contents: "Summarise the cached file.",
          config: { cachedContent: "cachedContents/abc123" },
        });
      expect(res.text).to.equal("Hello from the fake.");
      const body = sent();
      expect(body.cachedContent).to.equal("cachedContents/abc123");
      expect(body).not.to.have.property("systemInstruction");
      expect(body).not.to.have.property("tools");
      expect(body.contents[0]?.parts.map((p) => p.text)).to.satisfy(
        (texts: string[]) => texts[0]?.startsWith("[terse] ") && texts.at(-1) === "Summarise the cached file.",
      );
    });

    it("one to a Gemma model: the same, the first turn the same in every request of the session", async () => {
      const client = sdkClients(h.url, compressingKey).gemini();
      const first = { role: "user", parts: [{ text: "What is 2+2?" }] };
      await client.models.generateContent({ model: "gemma-3-27b-it", contents: [first] });
      const opening = JSON.stringify(sent().contents[0]);
      h.fake.reset();
      const later = [first, { role: "model", parts: [{ text: "4" }] }, { role: "user", parts: [{ text: "And 3+3?" }] }];
      const res = await client.models.generateContent({ model: "gemma-3-27b-it", contents: later });
      expect(res.text).to.equal("Hello from the fake.");
      expect(sent()).not.to.have.property("systemInstruction");
      expect(sent()).not.to.have.property("tools");
      expect(JSON.stringify(sent().contents[0])).to.equal(opening).and.include("[terse] ");
      expect(sent().contents).to.have.length(3);
    });

    it("a caller's own system instruction to a Gemma model is left where it was sent: Gemini refuses it as it would", async () => {
      const err = await sdkClients(h.url, rawKey)
        .gemini()
        .models.generateContent({
          model: "gemma-3-27b-it",
          contents: "Hi",
          config: { systemInstruction: "Be brief." },
        })
        .catch((e: unknown) => e);
      expect(String(err)).to.include("Developer instruction is not enabled for models/gemma-3-27b-it");
      expect(JSON.stringify(sent().systemInstruction)).to.include("Be brief.");
    });

    it("the version the caller named goes upstream, but v1, which lacks the fields terse adds", async () => {
      const call = (version: string) =>
        fetch(`${h.url}/${version}/models/gemini-2.5-flash:generateContent`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${rawKey}`,
            "x-provider-key": PROVIDER_KEY,
            "content-type": "application/json",
          },
          body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
        });
      for (const [version, upstream] of [
        ["v1alpha", "v1alpha"],
        ["v1beta", "v1beta"],
        ["v1", "v1beta"],
      ]) {
        h.fake.reset();
        expect((await call(version ?? "")).status).to.equal(200);
        expect(h.fake.received[0]?.path).to.equal(`/${upstream}/models/gemini-2.5-flash:generateContent`);
      }
    });
  });

  describe("model lists", () => {
    it("GET /v1/models goes to OpenAI with Authorization: Bearer", async () => {
      const ids: string[] = [];
      for await (const m of openai().models.list()) ids.push(m.id);
      expect(ids).to.include("gpt-5.1-codex");
      expect(h.fake.received[0]?.headers.authorization).to.equal(`Bearer ${PROVIDER_KEY}`);
      // Not a model call: no usage event. (Events leave in order: once a later call's is
      // there, the list's would be too.)
      const listed = await fetch(`${h.url}/v1/models`, {
        headers: { authorization: `Bearer ${rawKey}`, "x-provider-key": PROVIDER_KEY },
      });
      const id = listed.headers.get("x-terse-request-id");
      const later = await openai()
        .chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] })
        .withResponse();
      await eventOf(later.response.headers.get("x-terse-request-id"));
      expect((await h.events()).some((e) => e.event_id === id)).to.equal(false);
    });

    it("GET /v1/models with anthropic-version goes to Anthropic, the caller's version and betas passed on", async () => {
      const ids: string[] = [];
      const page = await anthropic().models.list(
        {},
        { headers: { "anthropic-beta": "fake-beta-2026-01-01", "anthropic-version": "2024-02-29" } },
      );
      for (const m of page.data) ids.push(m.id);
      expect(ids).to.include("claude-sonnet-4-5");
      const got = h.fake.received[0];
      expect(got?.provider).to.equal("anthropic");
      expect(got?.headers["x-api-key"]).to.equal(PROVIDER_KEY);
      expect(got?.headers["anthropic-version"]).to.equal("2024-02-29");
      expect(got?.headers["anthropic-beta"]).to.equal("fake-beta-2026-01-01");
      expectOnlyProviderKey(got?.headers ?? {}, got?.url ?? "");
    });

    it("Gemini's model list, from the SDK (v1 with its key header) and from /v1beta/models", async () => {
      const pager = await gemini().models.list();
      expect(pager.page.map((m) => m.name)).to.include("models/gemini-2.5-pro");
      const res = await fetch(`${h.url}/v1beta/models?pageSize=5`, {
        headers: { authorization: `Bearer ${rawKey}`, "x-provider-key": PROVIDER_KEY },
      });
      expect(res.status).to.equal(200);
      for (const got of h.fake.received) {
        expect(got.provider).to.equal("gemini");
        expect(got.query.key).to.equal(PROVIDER_KEY);
      }
      expect(h.fake.received[1]?.query.pageSize).to.equal("5");
    });

    it("is authenticated and rate-limited like any call", async () => {
      const bare = await fetch(`${h.url}/v1/models`);
      expect(bare.status).to.equal(401);
      const { rawKey: limited } = await h.addKey({ rate_limit_rpm: 1 });
      const call = () =>
        fetch(`${h.url}/v1/models`, {
          headers: { authorization: `Bearer ${limited}`, "x-provider-key": PROVIDER_KEY },
        });
      expect((await call()).status).to.equal(200);
      expect((await call()).status).to.equal(429);
      expect((await fetch(`${h.url}/v1/models`, { method: "POST" })).status).to.equal(405);
    });
  });

  it("passes anthropic-beta flags and unknown query parameters through unchanged", async () => {
    await anthropic().messages.create(
      { model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] },
      { headers: { "anthropic-beta": "context-management-2025-06-27,oauth-2025-04-20" }, query: { beta: "true" } },
    );
    const got = h.fake.received[0];
    expect(got?.headers["anthropic-beta"]).to.equal("context-management-2025-06-27,oauth-2025-04-20");
    expect(got?.query.beta).to.equal("true");
  });

  it("logs one line for every answer, refusals and unknown paths included, never a key", async () => {
    const before = logLines.length;
    const paths = ["/v1/nope", "/v1/chat/completions", "/v1/responses"];
    for (const path of paths) {
      await fetch(`${h.url}${path}`, { method: "POST", headers: { authorization: "Bearer svc_live_nonsense" } });
    }
    const lines = logLines.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const path of paths) {
      const line = lines.find((l) => l.path === path);
      expect(line, path).to.include({ method: "POST" });
      expect(line?.status).to.be.oneOf([401, 404]);
      expect(line?.req_id).to.match(/^req_/);
      expect(line?.ms).to.be.a("number");
    }
    expect(logLines.slice(before).join("\n")).not.to.include("svc_live_nonsense");
  });
});
