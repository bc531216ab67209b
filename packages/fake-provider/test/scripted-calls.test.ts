import Anthropic from "@anthropic-ai/sdk";
import { type Content, GoogleGenAI, type Part } from "@google/genai";
import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import OpenAI from "openai";
import { type FakeProvider, type ScriptedToolCall, startFakeProvider } from "../src/index.ts";

// What a test of a tool loop (terse's recall) scripts: text before the call, a second
// call beside it, a call made again and again, the answer quoting the result it got;
// and faults or delays for one request of a loop only. Each official SDK, pointed
// straight at the fake, reads every answer, JSON and streamed.

/** One answer as a client reads it. */
interface Turn {
  text: string;
  calls: { id: string; name: string; args: unknown }[];
}

/** A conversation in one wire format, its history kept as the format writes it. */
interface Conversation {
  /** Sends the history, reads the answer and appends it to the history. */
  turn(stream: boolean): Promise<Turn>;
  /** Appends the result of a call. */
  result(call: Turn["calls"][number], text: string): void;
}

const LOOKUP = { name: "lookup", description: "Looks a thing up" };
const RUN = { name: "run", description: "Runs a command" };

function chatConversation(fake: FakeProvider): Conversation {
  const client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-fake-key", maxRetries: 0 });
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Look it up" }];
  const tools = [LOOKUP, RUN].map((f) => ({ type: "function" as const, function: f }));
  const results: OpenAI.ChatCompletionMessageParam[] = [];
  return {
    async turn(stream) {
      messages.push(...results.splice(0));
      const params = { model: "gpt-4o-mini", messages, tools };
      const done = stream
        ? await client.chat.completions.stream(params).finalChatCompletion()
        : await client.chat.completions.create(params);
      const message = done.choices[0]!.message;
      messages.push(message as OpenAI.ChatCompletionMessageParam);
      const calls = (message.tool_calls ?? []).flatMap((c) =>
        c.type === "function" ? [{ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) }] : [],
      );
      return { text: message.content ?? "", calls };
    },
    result(call, text) {
      results.push({ role: "tool", tool_call_id: call.id, content: text });
    },
  };
}

function responsesConversation(fake: FakeProvider): Conversation {
  const client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-fake-key", maxRetries: 0 });
  const input: OpenAI.Responses.ResponseInputItem[] = [{ role: "user", content: "Look it up" }];
  const tools = [LOOKUP, RUN].map((f) => ({ type: "function" as const, strict: false, parameters: {}, ...f }));
  return {
    async turn(stream) {
      const params = { model: "gpt-5.1", input, tools };
      const res = stream
        ? await client.responses.stream(params).finalResponse()
        : await client.responses.create(params);
      input.push(...(res.output as OpenAI.Responses.ResponseInputItem[]));
      const calls = res.output.flatMap((o) =>
        o.type === "function_call" ? [{ id: o.call_id, name: o.name, args: JSON.parse(o.arguments) }] : [],
      );
      return { text: res.output_text, calls };
    },
    result(call, text) {
      input.push({ type: "function_call_output", call_id: call.id, output: text });
    },
  };
}

function anthropicConversation(fake: FakeProvider): Conversation {
  const client = new Anthropic({ baseURL: fake.url, apiKey: "sk-ant-fake", maxRetries: 0 });
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Look it up" }];
  const tools = [LOOKUP, RUN].map((f) => ({ ...f, input_schema: { type: "object" as const, properties: {} } }));
  const results: Anthropic.ToolResultBlockParam[] = [];
  return {
    async turn(stream) {
      if (results.length > 0) messages.push({ role: "user", content: results.splice(0) });
      const params = { model: "claude-haiku-4-5", max_tokens: 100, messages, tools };
      const msg = stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
      messages.push({ role: "assistant", content: msg.content });
      const text = msg.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
      const calls = msg.content.flatMap((b) =>
        b.type === "tool_use" ? [{ id: b.id, name: b.name, args: b.input }] : [],
      );
      return { text, calls };
    },
    result(call, text) {
      results.push({ type: "tool_result", tool_use_id: call.id, content: text });
    },
  };
}

function geminiConversation(fake: FakeProvider): Conversation {
  const client = new GoogleGenAI({ apiKey: "AIza-fake", httpOptions: { baseUrl: fake.url } });
  const contents: Content[] = [{ role: "user", parts: [{ text: "Look it up" }] }];
  const config = { tools: [{ functionDeclarations: [LOOKUP, RUN] }] };
  const results: Part[] = [];
  return {
    async turn(stream) {
      if (results.length > 0) contents.push({ role: "user", parts: results.splice(0) });
      const params = { model: "gemini-2.5-flash", contents, config };
      const chunks = [];
      if (stream) for await (const chunk of await client.models.generateContentStream(params)) chunks.push(chunk);
      else chunks.push(await client.models.generateContent(params));
      const parts = chunks.flatMap((c) => c.candidates?.[0]?.content?.parts ?? []);
      contents.push({ role: "model", parts });
      const text = parts.map((p) => p.text ?? "").join("");
      const calls = parts.flatMap((p) =>
        p.functionCall
          ? [{ id: p.functionCall.id ?? "", name: p.functionCall.name ?? "", args: p.functionCall.args }]
          : [],
      );
      return { text, calls };
    },
    result(call, text) {
      results.push({ functionResponse: { name: call.name, response: { output: text } } });
    },
  };
}

const FORMATS = {
  "OpenAI chat completions": chatConversation,
  "OpenAI Responses": responsesConversation,
  "Anthropic messages": anthropicConversation,
  Gemini: geminiConversation,
};

/** Call ids as each format writes them: Gemini's calls have none. */
const idsOf = (format: string, ids: string[]) => (format === "Gemini" ? ids.map(() => "") : ids);

describe("fake provider: scripted tool loops", () => {
  let fake: FakeProvider;

  before(async () => {
    fake = await startFakeProvider();
  });
  beforeEach(() => fake.reset());
  after(() => fake.close());

  for (const [format, conversation] of Object.entries(FORMATS)) {
    for (const stream of [false, true]) {
      describe(`${format}, ${stream ? "streamed" : "JSON"}`, () => {
        const anthropic = format === "Anthropic messages";
        const firstId = anthropic ? "toolu_fake_01" : "call_fake_01";

        it("writes text before the call, a second call beside it, and quotes the result in the answer", async () => {
          const script: ScriptedToolCall = {
            ...{ name: "lookup", arguments: { key: "k1" }, answer: "It says: {result}" },
            textBefore: "Let me look that up. ",
            alongside: { name: "run", arguments: { cmd: "ls" } },
          };
          fake.set({ toolCall: script });
          const chat = conversation(fake);

          const first = await chat.turn(stream);
          expect(first.text).to.equal("Let me look that up. ");
          const alongsideId = anthropic ? "toolu_fake_alongside" : "call_fake_alongside";
          expect(first.calls).to.deep.equal([
            { id: idsOf(format, [firstId])[0], name: "lookup", args: { key: "k1" } },
            { id: idsOf(format, [alongsideId])[0], name: "run", args: { cmd: "ls" } },
          ]);

          chat.result(first.calls[0]!, "line 7: ok");
          const second = await chat.turn(stream);
          expect(second.text).to.equal("It says: line 7: ok");
          expect(second.calls.map((c) => c.name)).to.deep.equal(["run"]);

          chat.result(second.calls[0]!, "a.txt");
          const third = await chat.turn(stream);
          expect(third).to.deep.equal({ text: "It says: line 7: ok", calls: [] });
        });

        it("repeats the call with a new id each time when told to", async () => {
          fake.set({ toolCall: { name: "lookup", arguments: { key: "k1" }, answer: "never", repeat: true } });
          const chat = conversation(fake);
          const ids: string[] = [];
          for (let round = 0; round < 3; round++) {
            const turn = await chat.turn(stream);
            expect(turn.text).to.equal("");
            expect(turn.calls.map((c) => c.name)).to.deep.equal(["lookup"]);
            ids.push(turn.calls[0]!.id);
            chat.result(turn.calls[0]!, `result ${round}`);
          }
          const prefix = anthropic ? "toolu_fake_" : "call_fake_";
          expect(ids).to.deep.equal(idsOf(format, [`${prefix}01`, `${prefix}02`, `${prefix}03`]));
        });
      });
    }
  }

  it("streams the text before the call's first event, as the providers order them", async () => {
    fake.set({ toolCall: { name: "lookup", arguments: { key: "k1" }, answer: "", textBefore: "Looking now. " } });
    const tools = [{ name: "lookup", parameters: {} }];
    const requests = [
      [
        "/v1/chat/completions",
        { model: "m", stream: true, messages: [], tools: [{ type: "function", function: tools[0] }] },
      ],
      ["/v1/responses", { model: "m", stream: true, input: "hi", tools: [{ type: "function", ...tools[0] }] }],
      ["/v1/messages", { model: "m", stream: true, messages: [], tools }],
      ["/v1beta/models/m:streamGenerateContent?alt=sse", { contents: [], tools: [{ functionDeclarations: tools }] }],
    ] as const;
    for (const [path, body] of requests) {
      const raw = await (await fetch(`${fake.url}${path}`, { method: "POST", body: JSON.stringify(body) })).text();
      const text = raw.indexOf('now. "');
      const call = raw.indexOf('"lookup"');
      expect(text, `${path}: the text`).to.be.greaterThan(0);
      expect(call, `${path}: the call after the text`).to.be.greaterThan(text);
    }
  });

  it("gives no two Responses output items the same id, whichever answer they are in", async () => {
    fake.set({ toolCall: { name: "lookup", arguments: {}, answer: "done", textBefore: "Looking. ", repeat: true } });
    const client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-fake-key", maxRetries: 0 });
    const tools = [{ type: "function" as const, strict: false, parameters: {}, ...LOOKUP }];
    const first = await client.responses.create({ model: "gpt-5.1", input: "Look it up", tools });
    const second = await client.responses.stream({ model: "gpt-5.1", input: "Look it up", tools }).finalResponse();
    const ids = [...first.output, ...second.output].map((o) => o.id);
    expect(ids).to.have.length(4);
    expect(new Set(ids).size).to.equal(4);
  });

  describe("one request of a loop", () => {
    const chat = () => new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-fake-key", maxRetries: 0 });
    const ask = (signal?: AbortSignal) =>
      chat().chat.completions.create(
        { model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] },
        signal ? { signal } : {},
      );

    it("fails only the n-th generation request (model lists are not counted)", async () => {
      fake.set({ nth: { 2: { status: 500 } } });
      await chat().models.list();
      expect((await ask()).choices[0]?.message.content).to.equal("Hello from the fake.");
      const failed = await ask().catch((err: unknown) => err);
      expect(failed).to.be.instanceOf(OpenAI.InternalServerError);
      expect((await ask()).choices[0]?.message.content).to.equal("Hello from the fake.");
      expect(fake.stats.generations).to.equal(3);
    });

    it("cuts only the n-th answer mid-stream", async () => {
      fake.set({ nth: { 2: { cut: { afterEvents: 2, how: "reset" } } } });
      const streamed = async () => {
        const stream = await chat().chat.completions.create({
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: "Hi" }],
          stream: true,
        });
        let text = "";
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
        return text;
      };
      expect(await streamed()).to.equal("Hello from the fake.");
      expect(await streamed().catch(() => "cut")).to.equal("cut");
      expect(fake.stats.cuts).to.equal(1);
      expect(await streamed()).to.equal("Hello from the fake.");
    });

    it("holds the n-th answer back before its first byte while the others answer at once", async () => {
      fake.set({ nth: { 1: { firstByteDelayMs: 60_000 } } });
      const abort = new AbortController();
      let settled = false;
      const held = ask(abort.signal).finally(() => {
        settled = true;
      });
      await waitFor(() => fake.stats.generations === 1, { what: "the first request at the fake" });
      expect((await ask()).choices[0]?.message.content).to.equal("Hello from the fake.");
      expect(settled, "the held answer").to.equal(false);
      abort.abort();
      await held.catch(() => undefined);
      await fake.aborted;
      expect(fake.stats.closedByPeer).to.equal(1);
    });

    it("holds the n-th answer until the test releases it", async () => {
      let release: () => void = () => undefined;
      fake.set({ nth: { 2: { holdUntil: new Promise<void>((r) => (release = r)) } } });
      await ask();
      let settled = false;
      const held = ask().finally(() => {
        settled = true;
      });
      await waitFor(() => fake.stats.generations === 2, { what: "the second request at the fake" });
      expect((await ask()).choices[0]?.message.content).to.equal("Hello from the fake.");
      expect(settled, "the held answer").to.equal(false);
      release();
      expect((await held).choices[0]?.message.content).to.equal("Hello from the fake.");
    });
  });
});
