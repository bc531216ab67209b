import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { expect } from "chai";
import OpenAI from "openai";
import { countTokensOf, type FakeProvider, MODELS, type ScriptedToolCall, startFakeProvider } from "../src/index.ts";

// The fake answers as the providers do: each official SDK, pointed straight at it, parses
// every shape the agent tests rely on (a tool call and the answer after its result, the
// Responses API, token counts, the model lists, JSON mode).

const READ: ScriptedToolCall = { name: "read", arguments: { path: "notes.txt" }, answer: "It says hello." };
const readTool = { name: "read", description: "Reads a file", parameters: { type: "object", properties: {} } };

describe("fake provider: wire formats, read by the official SDKs", () => {
  let fake: FakeProvider;

  before(async () => {
    fake = await startFakeProvider();
  });
  beforeEach(() => fake.reset());
  after(() => fake.close());

  describe("OpenAI Responses API", () => {
    const client = () => new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-fake-key", maxRetries: 0 });
    const tools = [{ type: "function" as const, strict: false, ...readTool }];

    it("answers JSON with text and usage", async () => {
      const res = await client().responses.create({ model: "gpt-5.1", input: "Hi" });
      expect(res.output_text).to.equal("Hello from the fake.");
      expect(res.usage).to.include({ input_tokens: 11, output_tokens: 7, total_tokens: 18 });
      expect(fake.received[0]).to.include({ provider: "openai", endpoint: "responses", path: "/v1/responses" });
    });

    it("streams a scripted function call, then the answer once its function_call_output comes back", async () => {
      fake.set({ toolCall: READ });
      const first = await client()
        .responses.stream({ model: "gpt-5.1", input: "Read notes.txt", tools })
        .finalResponse();
      const call = first.output[0];
      expect(call).to.include({ type: "function_call", name: "read", arguments: JSON.stringify(READ.arguments) });
      expect(first.usage?.total_tokens).to.equal(18);
      if (call?.type !== "function_call") throw new Error("no function call");

      const input = [
        { role: "user" as const, content: "Read notes.txt" },
        call,
        { type: "function_call_output" as const, call_id: call.call_id, output: "hello" },
      ];
      const second = await client().responses.stream({ model: "gpt-5.1", input, tools }).finalResponse();
      expect(second.output_text).to.equal(READ.answer);
    });

    it("answers a json_schema request with JSON that follows the schema", async () => {
      const schema = {
        type: "object",
        properties: { verdict: { type: "string", enum: ["yes", "no"] }, n: { type: "integer" } },
      };
      const res = await client().responses.create({
        model: "gpt-5.1",
        input: "Decide",
        text: { format: { type: "json_schema", name: "verdict", schema } },
      });
      expect(JSON.parse(res.output_text)).to.deep.equal({ verdict: "yes", n: 0 });
    });
  });

  describe("OpenAI chat completions", () => {
    it("streams a scripted tool call in pieces the SDK reassembles", async () => {
      fake.set({ toolCall: READ });
      const client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-fake-key", maxRetries: 0 });
      const stream = client.chat.completions.stream({
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "Read notes.txt" }],
        tools: [{ type: "function", function: readTool }],
        stream_options: { include_usage: true },
      });
      const done = await stream.finalChatCompletion();
      expect(done.choices[0]?.finish_reason).to.equal("tool_calls");
      expect(done.choices[0]?.message.tool_calls?.[0]).to.deep.include({
        id: "call_fake_01",
        function: { name: "read", arguments: JSON.stringify(READ.arguments) },
      });
      expect(done.usage?.total_tokens).to.equal(18);
    });
  });

  describe("Anthropic", () => {
    const client = () => new Anthropic({ baseURL: fake.url, apiKey: "sk-ant-fake", maxRetries: 0 });
    const tools = [
      { name: "read", description: "Reads a file", input_schema: { type: "object" as const, properties: {} } },
    ];

    it("streams a scripted tool_use, then the answer once its tool_result comes back", async () => {
      fake.set({ toolCall: READ });
      const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Read notes.txt" }];
      const first = await client()
        .messages.stream({ model: "claude-sonnet-4-5", max_tokens: 100, messages, tools })
        .finalMessage();
      expect(first.stop_reason).to.equal("tool_use");
      expect(first.content[0]).to.deep.include({
        type: "tool_use",
        id: "toolu_fake_01",
        name: "read",
        input: READ.arguments,
      });

      messages.push({ role: "assistant", content: first.content });
      messages.push({
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_fake_01", content: "hello" }],
      });
      const second = await client().messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages, tools });
      expect(second.content[0]).to.deep.equal({ type: "text", text: READ.answer });
      expect(second.usage).to.include({ input_tokens: 11, output_tokens: 7 });
    });

    it("counts tokens of the body it received, deterministically", async () => {
      const params = { model: "claude-sonnet-4-5", messages: [{ role: "user" as const, content: "Count me" }] };
      const counted = await client().messages.countTokens(params);
      expect(fake.received[0]).to.include({ endpoint: "count_tokens", path: "/v1/messages/count_tokens" });
      expect(counted.input_tokens).to.equal(countTokensOf(fake.received[0]!.body));
      expect((await client().messages.countTokens(params)).input_tokens).to.equal(counted.input_tokens);
    });

    it("lists models in Anthropic's shape when the request carries anthropic-version", async () => {
      const page = await client().models.list();
      expect(page.data.map((m) => m.id)).to.deep.equal([...MODELS.anthropic]);
      expect(fake.received[0]).to.include({ provider: "anthropic", endpoint: "models" });
    });
  });

  it("lists models in OpenAI's shape otherwise", async () => {
    const client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-fake-key", maxRetries: 0 });
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).to.deep.equal([...MODELS.openai]);
    expect(fake.received[0]).to.include({ provider: "openai", endpoint: "models" });
  });

  describe("Gemini", () => {
    const client = () => new GoogleGenAI({ apiKey: "AIza-fake", httpOptions: { baseUrl: fake.url } });

    it("streams a scripted functionCall, then the answer once its functionResponse comes back", async () => {
      fake.set({ toolCall: READ });
      const config = { tools: [{ functionDeclarations: [{ name: "read", description: "Reads a file" }] }] };
      const user = { role: "user", parts: [{ text: "Read notes.txt" }] };
      const chunks = [];
      for await (const c of await client().models.generateContentStream({
        model: "gemini-2.5-flash",
        contents: [user],
        config,
      })) {
        chunks.push(c);
      }
      expect(chunks[0]?.functionCalls).to.deep.equal([{ name: "read", args: READ.arguments }]);
      const contents = [
        user,
        { role: "model", parts: [{ functionCall: { name: "read", args: READ.arguments } }] },
        { role: "user", parts: [{ functionResponse: { name: "read", response: { output: "hello" } } }] },
      ];
      const second = await client().models.generateContent({ model: "gemini-2.5-flash", contents, config });
      expect(second.text).to.equal(READ.answer);
      expect(fake.received.map((r) => r.endpoint)).to.deep.equal(["streamGenerateContent", "generateContent"]);
      expect(fake.received[0]!.query).to.include({ alt: "sse" });
    });

    it("answers a JSON-mode request (the CLI's model router) with JSON that follows its schema", async () => {
      const responseJsonSchema = {
        type: "object",
        properties: { reasoning: { type: "string" }, model_choice: { type: "string", enum: ["flash", "pro"] } },
        required: ["reasoning", "model_choice"],
      };
      const res = await client().models.generateContent({
        model: "gemini-2.5-flash-lite",
        contents: "Route this",
        config: { responseMimeType: "application/json", responseJsonSchema },
      });
      expect(JSON.parse(res.text ?? "")).to.deep.equal({ reasoning: "fake", model_choice: "flash" });
    });

    it("counts tokens and lists models", async () => {
      const counted = await client().models.countTokens({ model: "gemini-2.5-flash", contents: "Count me" });
      expect(counted.totalTokens).to.equal(countTokensOf(fake.received[0]!.body));
      const names: string[] = [];
      for await (const model of await client().models.list()) names.push(model.name ?? "");
      expect(names).to.deep.equal(MODELS.gemini.map((m) => `models/${m}`));
    });
  });

  it("records a request to a path no provider serves and answers it 404", async () => {
    const res = await fetch(`${fake.url}/v1/unknown?x=1`, { method: "POST", body: "{}" });
    expect(res.status).to.equal(404);
    expect(fake.unrouted).to.deep.equal([{ method: "POST", url: "/v1/unknown?x=1" }]);
    expect(fake.received).to.deep.equal([]);
  });
});
