import { resultText, type ScriptedToolCall } from "@terse/fake-provider";
import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import { LAST_RECALL_NOTE } from "../src/domain/recall-answer.ts";
import { type Harness, PROVIDER_KEY, postAsCaller, sdkClients, startHarness } from "./harness.ts";

// Recall (issue 18), end to end through the official SDKs: a key with context compression
// on gets terse_recall among its tools, the same bytes in every request of a session;
// when the model calls it, terse answers the call itself and calls the upstream again,
// and the client sees one clean answer, JSON or streamed, in every wire format, with
// nothing of the call in what it received. The fake provider plays the model: its first
// answer calls terse_recall (after some text, or not), its second quotes the result.

const RECALL = "terse_recall";

/** A build log long enough for `standard` to cut (~63,000 characters), each line naming its number. */
const LOG = Array.from(
  { length: 1_000 },
  (_, i) => `[build ${String(i + 1).padStart(4, "0")}] compiled src/module_${i + 1}.c into build/module_${i + 1}.o`,
).join("\n");
const LOG_LINES = LOG.split("\n");

/** The client's own tool: what produced the log. */
const BASH = {
  name: "bash",
  description: "Runs a shell command",
  parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
};

/** Keep-alive period while terse waits on a recall round: short, so a test sees one soon. */
const KEEPALIVE_MS = 100;

type Body = Record<string, unknown>;
type Clients = ReturnType<typeof sdkClients>;

/** A session as the client sends it: the log as the result of its first tool call, then `turns - 1` more exchanges. */
interface Session {
  log: string;
  turns: number;
  stream: boolean;
}

/** What the client made of an answer: its text and the names of the tool calls it was asked to run. */
interface Answer {
  text: string;
  calls: string[];
}

/** One wire format through its official SDK, and how to read the requests terse sent upstream in it. */
interface Wire {
  label: string;
  send(clients: Clients, session: Session): Promise<Answer>;
  /** The texts of an upstream request's tool results, in order. */
  results(body: Body): string[];
  /** An upstream request's tool declarations as JSON text, by name, in order. */
  tools(body: Body): Map<string, string>;
}

const isRecord = (v: unknown): v is Body => typeof v === "object" && v !== null && !Array.isArray(v);
const records = (v: unknown): Body[] => (Array.isArray(v) ? v.filter(isRecord) : []);
const QUESTION = "The build failed. What does the log say?";
const FOLLOW_UP = "And then?";

const chat: Wire = {
  label: "OpenAI chat completions",
  async send(clients, { log, turns, stream }) {
    const call = {
      id: "call_log",
      type: "function" as const,
      function: { name: "bash", arguments: '{"command":"cat build.log"}' },
    };
    const later = Array.from({ length: turns - 1 }, () => [
      { role: "assistant" as const, content: "Reading it." },
      { role: "user" as const, content: FOLLOW_UP },
    ]).flat();
    const params = {
      model: "gpt-4o-mini",
      messages: [
        { role: "user" as const, content: QUESTION },
        { role: "assistant" as const, content: null, tool_calls: [call] },
        { role: "tool" as const, tool_call_id: "call_log", content: log },
        ...later,
      ],
      tools: [{ type: "function" as const, function: BASH }],
    };
    const client = clients.openai();
    const done = stream
      ? await client.chat.completions.stream(params).finalChatCompletion()
      : await client.chat.completions.create(params);
    const message = done.choices[0]?.message;
    const calls = (message?.tool_calls ?? []).map((c) => (c.type === "function" ? c.function.name : c.type));
    return { text: message?.content ?? "", calls };
  },
  results: (body) =>
    records(body.messages).flatMap((m) => (m.role === "tool" ? [resultText("chat.completions", m)] : [])),
  tools: (body) =>
    new Map(records(body.tools).map((t) => [String(isRecord(t.function) ? t.function.name : ""), JSON.stringify(t)])),
};

const responses: Wire = {
  label: "OpenAI Responses",
  async send(clients, { log, turns, stream }) {
    const later = Array.from({ length: turns - 1 }, () => [
      { role: "assistant" as const, content: "Reading it." },
      { role: "user" as const, content: FOLLOW_UP },
    ]).flat();
    const params = {
      model: "gpt-5.1-codex",
      input: [
        { role: "user" as const, content: QUESTION },
        { type: "function_call" as const, call_id: "call_log", name: "bash", arguments: '{"command":"cat build.log"}' },
        { type: "function_call_output" as const, call_id: "call_log", output: log },
        ...later,
      ],
      tools: [{ type: "function" as const, strict: false, ...BASH }],
    };
    const client = clients.openai();
    const res = stream ? await client.responses.stream(params).finalResponse() : await client.responses.create(params);
    const calls = res.output.flatMap((o) => (o.type === "function_call" ? [o.name] : []));
    return { text: res.output_text, calls };
  },
  results: (body) =>
    records(body.input).flatMap((i) => (i.type === "function_call_output" ? [resultText("responses", i)] : [])),
  tools: (body) => new Map(records(body.tools).map((t) => [String(t.name), JSON.stringify(t)])),
};

const messages: Wire = {
  label: "Anthropic messages",
  async send(clients, { log, turns, stream }) {
    const later = Array.from({ length: turns - 1 }, () => [
      { role: "assistant" as const, content: "Reading it." },
      { role: "user" as const, content: FOLLOW_UP },
    ]).flat();
    const params = {
      model: "claude-haiku-4-5",
      max_tokens: 1_000,
      messages: [
        { role: "user" as const, content: QUESTION },
        {
          role: "assistant" as const,
          content: [{ type: "tool_use" as const, id: "toolu_log", name: "bash", input: { command: "cat build.log" } }],
        },
        { role: "user" as const, content: [{ type: "tool_result" as const, tool_use_id: "toolu_log", content: log }] },
        ...later,
      ],
      tools: [
        {
          name: BASH.name,
          description: BASH.description,
          input_schema: { ...BASH.parameters, type: "object" as const },
        },
      ],
    };
    const client = clients.anthropic();
    const msg = stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
    return {
      text: msg.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join(""),
      calls: msg.content.flatMap((b) => (b.type === "tool_use" ? [b.name] : [])),
    };
  },
  results: (body) =>
    records(body.messages)
      .flatMap((m) => records(m.content))
      .flatMap((b) => (b.type === "tool_result" ? [resultText("messages", b)] : [])),
  tools: (body) => new Map(records(body.tools).map((t) => [String(t.name), JSON.stringify(t)])),
};

/** A session's Gemini contents and tools, as the SDK takes them and the REST API alike. */
function geminiSession(log: string, turns: number) {
  const later = Array.from({ length: turns - 1 }, () => [
    { role: "model", parts: [{ text: "Reading it." }] },
    { role: "user", parts: [{ text: FOLLOW_UP }] },
  ]).flat();
  return {
    contents: [
      { role: "user", parts: [{ text: QUESTION }] },
      { role: "model", parts: [{ functionCall: { name: "bash", args: { command: "cat build.log" } } }] },
      { role: "user", parts: [{ functionResponse: { name: "bash", response: { output: log } } }] },
      ...later,
    ],
    tools: [
      {
        functionDeclarations: [
          { name: BASH.name, description: BASH.description, parametersJsonSchema: BASH.parameters },
        ],
      },
    ],
  };
}

const gemini: Wire = {
  label: "Gemini generateContent",
  async send(clients, { log, turns, stream }) {
    const { contents, tools } = geminiSession(log, turns);
    const params = { model: "gemini-2.5-flash", contents, config: { tools } };
    const client = clients.gemini();
    const chunks = [];
    if (stream) for await (const chunk of await client.models.generateContentStream(params)) chunks.push(chunk);
    else chunks.push(await client.models.generateContent(params));
    const parts = chunks.flatMap((c) => c.candidates?.[0]?.content?.parts ?? []);
    return {
      text: parts.map((p) => p.text ?? "").join(""),
      calls: parts.flatMap((p) => (p.functionCall ? [p.functionCall.name ?? ""] : [])),
    };
  },
  results: (body) =>
    records(body.contents)
      .flatMap((c) => records(c.parts))
      .flatMap((p) => (isRecord(p.functionResponse) ? [resultText("generateContent", p)] : [])),
  tools: (body) =>
    new Map(
      records(body.tools)
        .flatMap((t) => records(t.functionDeclarations))
        .map((d) => [String(d.name), JSON.stringify(d)]),
    ),
};

/** A Gemini function response holding one string is that string; any other, its JSON. */
const WIRES = [chat, responses, messages, gemini];

/** One response as the client's fetch received it, byte for byte (the SDK reads its own copy). */
interface Exchange {
  status: number;
  requestId: string | null;
  body: string;
  /** Whether the body ended as a whole response does (false: the connection was cut first). */
  complete: boolean;
  /** Settles once the body ended, whole or cut. */
  ended: Promise<void>;
}

/** A fetch for the SDKs that keeps a copy of every response it hands them. */
function tappedFetch(exchanges: Exchange[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const exchange: Exchange = {
      status: res.status,
      requestId: res.headers.get("x-terse-request-id"),
      body: "",
      complete: false,
      ended: Promise.resolve(),
    };
    exchanges.push(exchange);
    if (!res.body) {
      exchange.complete = true;
      return res;
    }
    const [mine, theirs] = res.body.tee();
    exchange.ended = (async () => {
      const reader = mine.getReader();
      const decoder = new TextDecoder();
      try {
        for (let next = await reader.read(); !next.done; next = await reader.read()) {
          exchange.body += decoder.decode(next.value, { stream: true });
        }
        exchange.complete = true;
      } catch {
        // Cut: `complete` stays false.
      }
    })();
    return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/** Where a cut of the log can be read back: its handle and a few of the lines it names. */
interface Cut {
  handle: string;
  from: number;
  to: number;
}

/** The log's lines from-to, as recall returns them. */
const linesOf = (cut: Cut) => LOG_LINES.slice(cut.from - 1, cut.to).join("\n");

/** What the fake's second answer says: the recalled text quoted, so the client sees its effect. */
const ANSWER = "Found it: {result}";

/** The generation requests the fake received since its last reset (model lists and token counts left out). */
const generationsOf = (h: Harness) =>
  h.fake.received.filter(
    (r) => r.endpoint !== "models" && r.endpoint !== "count_tokens" && r.endpoint !== "countTokens",
  );

/**
 * A session whose first tool result (the log) gets cut, sent with `key` through `wire`:
 * the handle its marker names and the first five lines of the first whole-line cut.
 * Leaves the fake reset for the request under test.
 */
async function cutSessionOf(h: Harness, wire: Wire, key: string): Promise<Cut> {
  h.fake.reset();
  await wire.send(sdkClients(h.url, key), { log: LOG, turns: 1, stream: false });
  const sent = wire.results(generationsOf(h)[0]?.body ?? {})[0] ?? "";
  expect(sent.length, "the log reached the upstream cut").to.be.below(LOG.length / 2);
  const named = [...sent.matchAll(/recall ([0-9a-f]{12})(?: lines (\d+)-(\d+))?/g)].find((m) => m[2] !== undefined);
  if (!named) throw new Error(`no cut marker naming a handle and lines in: ${sent.slice(0, 3_000)}`);
  const from = Number(named[2]);
  h.fake.reset();
  return { handle: named[1] as string, from, to: Math.min(from + 4, Number(named[3])) };
}

/** terse_recall called on `cut`'s lines; the answer after its result quotes what terse returned. */
const recallOf = (cut: Cut, extra: Partial<ScriptedToolCall> = {}): ScriptedToolCall => ({
  name: RECALL,
  arguments: { handle: cut.handle, lines: `${cut.from}-${cut.to}` },
  answer: ANSWER,
  ...extra,
});

/** The settings of a key with context compression on. */
const COMPRESSING = {
  context_compress: true,
  context_compress_level: "standard" as const,
  smart_detect_enabled: false,
};

/** The usage event of a request, once; any second one would be written before a later request's. */
async function expectOneUsageEventOf(h: Harness, requestId: string | null, key: string) {
  expect(requestId, "x-terse-request-id").to.be.a("string");
  const event = await waitFor(async () => (await h.events()).find((e) => e.event_id === requestId), {
    what: `the usage event of ${requestId}`,
  });
  const later = await sdkClients(h.url, key)
    .openai()
    .chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] })
    .withResponse();
  const laterId = later.response.headers.get("x-terse-request-id");
  await waitFor(async () => (await h.events()).some((e) => e.event_id === laterId), {
    what: "a later request's event",
  });
  expect((await h.events()).filter((e) => e.event_id === requestId)).to.have.length(1);
  return event;
}

describe("data plane: recall (terse_recall)", () => {
  let h: Harness;
  let compressing: string;
  let otherAccount: string;
  let plain: string;

  before(async () => {
    h = await startHarness({ RECALL_KEEPALIVE_MS: String(KEEPALIVE_MS) });
    compressing = (await h.addKey(COMPRESSING)).rawKey;
    otherAccount = (await h.addKey(COMPRESSING)).rawKey;
    plain = (await h.addKey({ context_compress: false })).rawKey;
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  const generations = () => generationsOf(h);
  const cutSession = (wire: Wire, key = compressing) => cutSessionOf(h, wire, key);

  /** The SDKs with `key`, every response they get copied into `exchanges`. */
  const tapped = (key: string, exchanges: Exchange[], headers: Record<string, string> = {}) =>
    sdkClients(h.url, key, { fetch: tappedFetch(exchanges), headers });

  /** Nothing of a terse_recall call in what the client received: not its name, not the fake's call ids. */
  function expectNoRecallIn(exchanges: readonly Exchange[]): void {
    expect(exchanges).not.to.be.empty;
    for (const { body } of exchanges) {
      expect(body).not.to.include(RECALL);
      expect(body).not.to.match(/(call|toolu|fc)_fake_\d\d/);
    }
  }

  const expectOneUsageEvent = (requestId: string | null, key: string) => expectOneUsageEventOf(h, requestId, key);

  describe("the tool", () => {
    for (const wire of WIRES) {
      it(`${wire.label}: terse_recall is declared last, the same bytes in every request of a 3-turn session`, async () => {
        for (let turns = 1; turns <= 3; turns++) {
          await wire.send(sdkClients(h.url, compressing), { log: LOG, turns, stream: false });
        }
        const declared = generations().map((r) => wire.tools(r.body));
        expect(declared).to.have.length(3);
        for (const tools of declared) expect([...tools.keys()]).to.deep.equal(["bash", RECALL]);
        const recall = declared.map((tools) => tools.get(RECALL));
        expect(recall[1]).to.equal(recall[0]);
        expect(recall[2]).to.equal(recall[0]);
        expect(declared.map((tools) => tools.get("bash"))).to.deep.equal(Array(3).fill(declared[0]?.get("bash")));
      });

      it(`${wire.label}: no tool added for a key with compression off, nor with X-Terse-Recall: off (cuts then plain)`, async () => {
        await wire.send(sdkClients(h.url, plain), { log: LOG, turns: 1, stream: false });
        expect([...wire.tools(generations()[0]?.body ?? {}).keys()]).to.deep.equal(["bash"]);
        h.fake.reset();
        await wire.send(sdkClients(h.url, compressing, { headers: { "X-Terse-Recall": "off" } }), {
          log: LOG,
          turns: 1,
          stream: false,
        });
        const sent = generations()[0]?.body ?? {};
        expect([...wire.tools(sent).keys()]).to.deep.equal(["bash"]);
        const result = wire.results(sent)[0] ?? "";
        expect(result)
          .to.include("[terse: ")
          .and.not.to.match(/recall [0-9a-f]{12}/);
        expect(JSON.stringify(sent)).not.to.include(RECALL);
      });
    }
  });

  describe("a recall call, answered by terse", () => {
    for (const wire of WIRES) {
      for (const stream of [false, true]) {
        for (const textBefore of [undefined, "Let me read the cut part. "]) {
          const how = `${stream ? "streamed" : "JSON"}${textBefore ? ", text before the call" : ""}`;
          it(`${wire.label}, ${how}: one clean answer with the recalled text`, async () => {
            const cut = await cutSession(wire);
            h.fake.set({ toolCall: recallOf(cut, textBefore ? { textBefore } : {}) });
            const exchanges: Exchange[] = [];
            const answer = await wire.send(tapped(compressing, exchanges), { log: LOG, turns: 2, stream });

            const sent = generations();
            expect(sent, "upstream calls").to.have.length(2);
            const recalled = wire.results(sent[1]?.body ?? {}).at(-1) ?? "";
            expect(recalled, "the tool result terse sent").to.include(linesOf(cut));
            expect(recalled, "only the lines asked for").not.to.include(LOG_LINES[cut.to]);
            expect(answer).to.deep.equal({ text: `${textBefore ?? ""}Found it: ${recalled}`, calls: [] });
            await Promise.all(exchanges.map((e) => e.ended));
            expect(exchanges.map((e) => e.complete)).to.deep.equal([true]);
            expectNoRecallIn(exchanges);
            const event = await expectOneUsageEvent(exchanges[0]?.requestId ?? null, compressing);
            expect(event).to.include({ status: 200, streamed: stream, input_tokens: 22, output_tokens: 14 });
            expect(event).to.include({ recall_rounds: 1 });
          });
        }
      }

      it(`${wire.label}: a recall by a name the cut's index lists returns the lines that hold it, numbered`, async () => {
        h.fake.reset();
        await wire.send(sdkClients(h.url, compressing), { log: LOG, turns: 1, stream: false });
        const cutText = wire.results(generations()[0]?.body ?? {})[0] ?? "";
        const cut = await cutSession(wire);
        const name = `src/module_${cut.from}.c`;
        expect(cutText, "the index lists the name").to.match(new RegExp(`the omitted part mentions: [^\\]]*${name}`));
        h.fake.set({ toolCall: { name: RECALL, arguments: { handle: cut.handle, match: name }, answer: ANSWER } });
        await wire.send(sdkClients(h.url, compressing), { log: LOG, turns: 2, stream: false });
        const recalled = wire.results(generations()[1]?.body ?? {}).at(-1) ?? "";
        expect(recalled).to.equal(`${cut.from}: ${LOG_LINES[cut.from - 1]}`);
      });

      it(`${wire.label}: a call of the client's own tool beside terse_recall reaches the client, terse's does not`, async () => {
        const cut = await cutSession(wire);
        for (const stream of [false, true]) {
          h.fake.reset();
          h.fake.set({ toolCall: recallOf(cut, { alongside: { name: "bash", arguments: { command: "make" } } }) });
          const exchanges: Exchange[] = [];
          const answer = await wire.send(tapped(compressing, exchanges), { log: LOG, turns: 2, stream });
          expect(generations(), "upstream calls").to.have.length(2);
          const recalled = wire.results(generations()[1]?.body ?? {}).at(-1) ?? "";
          expect(recalled).to.include(linesOf(cut));
          expect(answer).to.deep.equal({ text: `Found it: ${recalled}`, calls: ["bash"] });
          await Promise.all(exchanges.map((e) => e.ended));
          expectNoRecallIn(exchanges);
        }
      });

      it(`${wire.label}: a handle of another account is answered as unknown, never an error`, async () => {
        const cut = await cutSession(wire, compressing);
        h.fake.set({ toolCall: recallOf(cut) });
        const exchanges: Exchange[] = [];
        const answer = await wire.send(tapped(otherAccount, exchanges), {
          log: "make: nothing to be done",
          turns: 2,
          stream: false,
        });
        expect(generations(), "upstream calls").to.have.length(2);
        const result = wire.results(generations()[1]?.body ?? {}).at(-1) ?? "";
        expect(result)
          .to.include(cut.handle)
          .and.match(/unknown/i);
        for (const line of LOG_LINES.slice(cut.from - 1, cut.to)) expect(result).not.to.include(line);
        expect(exchanges[0]?.status).to.equal(200);
        expect(answer).to.deep.equal({ text: `Found it: ${result}`, calls: [] });
      });
    }
  });

  it("Gemini, a stream call that did not ask for SSE: one JSON array with the continuation, nothing of the recall", async () => {
    const cut = await cutSession(gemini);
    h.fake.set({ toolCall: recallOf(cut, { textBefore: "Let me read the cut part. " }) });
    const path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";
    const res = await postAsCaller(h.url, path, compressing, geminiSession(LOG, 2));
    expect(res.headers.get("content-type")).to.equal("application/json; charset=UTF-8");
    const body = await res.text();
    expect(body).not.to.include(RECALL);
    const chunks = JSON.parse(body) as Body[];
    const parts = chunks.flatMap((c) => records(c.candidates)).flatMap((c) => records((c.content as Body)?.parts));
    expect(parts.filter((p) => p.functionCall !== undefined)).to.deep.equal([]);
    const recalled = gemini.results(generations()[1]?.body ?? {}).at(-1) ?? "";
    expect(recalled).to.include(linesOf(cut));
    expect(parts.map((p) => p.text ?? "").join("")).to.equal(`Let me read the cut part. Found it: ${recalled}`);
    const event = await expectOneUsageEvent(res.headers.get("x-terse-request-id"), compressing);
    expect(event).to.include({ status: 200, streamed: true, recall_rounds: 1 });
  });

  describe("limits and failures", () => {
    it("a client's own tool named terse_recall stays the client's: its call reaches the client, terse answers none", async () => {
      h.fake.set({ toolCall: recallOf({ handle: "0123456789ab", from: 1, to: 2 }) });
      const own = {
        name: RECALL,
        description: "The client's own tool",
        parameters: { type: "object", properties: {} },
      };
      const done = await sdkClients(h.url, compressing)
        .openai()
        .chat.completions.create({
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: QUESTION }],
          tools: [{ type: "function", function: own }],
        });
      const calls = (done.choices[0]?.message.tool_calls ?? []).map((c) =>
        c.type === "function" ? c.function.name : "",
      );
      expect(calls).to.deep.equal([RECALL]);
      expect(generations(), "one upstream call: no recall round").to.have.length(1);
      const declared = [...chat.tools(generations()[0]?.body ?? {}).values()];
      expect(declared, "the client's declaration alone").to.deep.equal([
        JSON.stringify({ type: "function", function: own }),
      ]);
    });

    it("JSON: a caller who hangs up while a recall round runs is metered once, as 499 (it saw no answer)", async () => {
      const { rawKey, record } = await h.addKey(COMPRESSING);
      // The handle is unknown: terse answers so and calls the upstream again, which never answers.
      h.fake.set({ toolCall: recallOf({ handle: "0123456789ab", from: 1, to: 2 }), nth: { 2: { hang: true } } });
      const hangUp = new AbortController();
      const asking = fetch(`${h.url}/v1/chat/completions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${rawKey}`,
          "x-provider-key": PROVIDER_KEY,
          "content-type": "application/json",
        },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: QUESTION }] }),
        signal: hangUp.signal,
      }).then(
        () => "answered",
        () => "hung up",
      );
      await waitFor(() => generations().length === 2, { what: "the recall round sent upstream" });
      hangUp.abort();
      expect(await asking).to.equal("hung up");
      const ofKey = async () => (await h.events()).filter((e) => e.key_id === record.key_id);
      const [event] = await waitFor(async () => ((await ofKey()).length > 0 ? ofKey() : undefined), {
        what: "the request's usage event",
      });
      expect(event).to.include({ status: 499, recall_rounds: 1 });
      // Any second event would be written before a later request's.
      h.fake.reset();
      await sdkClients(h.url, rawKey).openai().chat.completions.create({ model: "gpt-4o-mini", messages: [] });
      await waitFor(async () => (await ofKey()).length === 2, { what: "a later request's event" });
      expect((await ofKey()).map((e) => e.status)).to.have.members([499, 200]);
    });

    for (const wire of WIRES) {
      it(`${wire.label}: a model that keeps calling gets 3 recall rounds, then the client a clean answer`, async () => {
        const cut = await cutSession(wire);
        for (const stream of [false, true]) {
          h.fake.reset();
          h.fake.set({ toolCall: recallOf(cut, { repeat: true, textBefore: "Checking. " }) });
          const exchanges: Exchange[] = [];
          const answer = await wire.send(tapped(compressing, exchanges), { log: LOG, turns: 2, stream });
          const sent = generations();
          expect(sent, "upstream calls: 1 + 3 rounds").to.have.length(4);
          // Each round carries one more recall result than the one before.
          expect(sent.map((r) => wire.results(r.body).length)).to.deep.equal([1, 2, 3, 4]);
          // Only the last round's result tells the model that no more recalls will be answered.
          const newest = sent.slice(1).map((r) => (wire.results(r.body).at(-1) ?? "").endsWith(LAST_RECALL_NOTE));
          expect(newest, "the note, round by round").to.deep.equal([false, false, true]);
          expect(answer).to.deep.equal({ text: "Checking. ".repeat(4), calls: [] });
          await Promise.all(exchanges.map((e) => e.ended));
          expect(exchanges.map((e) => e.complete)).to.deep.equal([true]);
          expectNoRecallIn(exchanges);
          const event = await expectOneUsageEvent(exchanges[0]?.requestId ?? null, compressing);
          expect(event).to.include({ input_tokens: 44, output_tokens: 28, recall_rounds: 3 });
        }
      });

      it(`${wire.label}, JSON: an upstream error in the recall round reaches the client as the usual error envelope`, async () => {
        const cut = await cutSession(wire);
        h.fake.set({
          toolCall: recallOf(cut, { textBefore: "Let me read the cut part. " }),
          nth: { 2: { status: 500 } },
        });
        const exchanges: Exchange[] = [];
        const failed = await wire.send(tapped(compressing, exchanges), { log: LOG, turns: 2, stream: false }).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(failed, "the SDK's error").to.be.instanceOf(Error);
        expect(generations()).to.have.length(2);
        const [exchange] = exchanges;
        expect(exchange?.status).to.equal(500);
        expect(JSON.parse(exchange?.body ?? "{}")).to.have.property("error");
        expect(exchange?.body).not.to.include(PROVIDER_KEY);
        expectNoRecallIn(exchanges);
        expect(exchange?.body).not.to.include("Let me read");
        const event = await expectOneUsageEvent(exchange?.requestId ?? null, compressing);
        expect(event).to.include({ status: 500 });
      });

      for (const fault of ["a 500", "a reset mid-stream"] as const) {
        it(`${wire.label}, streamed: ${fault} in the recall round ends the client's stream cut, metered once`, async () => {
          const cut = await cutSession(wire);
          const nth = fault === "a 500" ? { status: 500 } : { cut: { afterEvents: 2, how: "reset" as const } };
          h.fake.set({ toolCall: recallOf(cut, { textBefore: "Let me read the cut part. " }), nth: { 2: nth } });
          const exchanges: Exchange[] = [];
          await wire.send(tapped(compressing, exchanges), { log: LOG, turns: 2, stream: true }).catch(() => undefined);
          expect(generations()).to.have.length(2);
          const [exchange] = exchanges;
          await exchange?.ended;
          expect(exchange?.status, "the stream had begun").to.equal(200);
          expect(exchange?.complete, "the stream ends cut, as on other upstream faults").to.equal(false);
          // What the client already had stays: the text the model wrote before the call.
          expect(exchange?.body).to.include("Let ").and.include("cut ");
          expectNoRecallIn(exchanges);
          const event = await expectOneUsageEvent(exchange?.requestId ?? null, compressing);
          expect(event, "metered with the status the caller saw").to.include({ status: 200 });
        });
      }

      it(`${wire.label}, streamed: a keep-alive reaches the client while terse waits on the recall round`, async () => {
        const cut = await cutSession(wire);
        let release: () => void = () => undefined;
        const held = new Promise<void>((r) => {
          release = r;
        });
        h.fake.set({
          toolCall: recallOf(cut, { textBefore: "Let me read the cut part. " }),
          nth: { 2: { holdUntil: held } },
        });
        const exchanges: Exchange[] = [];
        const answering = wire.send(tapped(compressing, exchanges), { log: LOG, turns: 2, stream: true });
        answering.catch(() => undefined); // awaited below, once released
        try {
          await waitFor(() => h.fake.stats.generations === 2, { what: "the recall round at the upstream" });
          const exchange = await waitFor(() => exchanges[0], { what: "the client's response" });
          const waitingFrom = exchange.body.length;
          // Anthropic's ping; a blank line for Gemini (gemini/recall.ts says why); an SSE comment elsewhere.
          const keepAlive = wire === messages ? /^event: ping\n/m : wire === gemini ? /^\n\n/ : /^:[^\n]*\n/m;
          await waitFor(() => keepAlive.test(exchange.body.slice(waitingFrom)), {
            what: `a keep-alive after ${JSON.stringify(exchange.body.slice(-200))}`,
          });
        } finally {
          release();
        }
        const answer = await answering;
        const recalled = wire.results(generations()[1]?.body ?? {}).at(-1) ?? "";
        expect(answer).to.deep.equal({ text: `Let me read the cut part. Found it: ${recalled}`, calls: [] });
        expectNoRecallIn(exchanges);
      });
    }
  });
});

describe("data plane: recall, the kept originals' lifetime", () => {
  const TTL_SECONDS = 2;
  let h: Harness;
  let key: string;

  before(async () => {
    h = await startHarness({ RECALL_TTL_SECONDS: String(TTL_SECONDS) });
    key = (await h.addKey(COMPRESSING)).rawKey;
  });
  after(() => h.close());

  /** A recall of `cut` in a session that does not resend the log (resending it keeps it alive): the tool result terse sent. */
  async function recallResult(cut: Cut): Promise<string> {
    h.fake.reset();
    h.fake.set({ toolCall: recallOf(cut) });
    await chat.send(sdkClients(h.url, key), { log: "make: nothing to be done", turns: 2, stream: false });
    expect(generationsOf(h), "upstream calls").to.have.length(2);
    return chat.results(generationsOf(h)[1]?.body ?? {}).at(-1) ?? "";
  }

  it("answers a handle while its original is kept, and as unknown once it expired unused", async () => {
    const cut = await cutSessionOf(h, chat, key);
    expect(await recallResult(cut)).to.include(linesOf(cut));
    // Polled less often than the lifetime: each recall that finds the original renews it.
    const gone = await waitFor(
      async () => {
        const result = await recallResult(cut);
        return /unknown/i.test(result) ? result : undefined;
      },
      { intervalMs: TTL_SECONDS * 1_000 + 500, timeoutMs: TTL_SECONDS * 5_000, what: "the original to expire" },
    );
    expect(gone)
      .to.include(cut.handle)
      .and.not.to.include(LOG_LINES[cut.from - 1]);
  });
});

describe("data plane: recall, a JSON answer too large to read whole", () => {
  // A JSON answer is read whole to find a recall call in it, up to RECALL_MAX_ANSWER_BYTES;
  // a larger one goes to the client as it comes, holding no more of it in memory.
  const LIMIT = 64 * 1024;
  /** An answer of ~250 KB: four times the build log. */
  const TEXT = Array.from({ length: 4 }, () => LOG).join("\n");
  let h: Harness;
  let key: string;

  before(async () => {
    h = await startHarness({ RECALL_MAX_ANSWER_BYTES: String(LIMIT) });
    key = (await h.addKey(COMPRESSING)).rawKey;
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  const ask = (exchanges: Exchange[], signal?: AbortSignal) =>
    tappedFetch(exchanges)(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "x-provider-key": PROVIDER_KEY, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: QUESTION }] }),
      signal,
    });

  it("relays what the upstream sent while the rest is still to come (read whole, the client would wait for the end)", async () => {
    // The fake writes half the answer, then goes silent with the connection open.
    h.fake.set({ text: TEXT, cut: { afterEvents: 0, how: "stall" } });
    const exchanges: Exchange[] = [];
    const client = new AbortController();
    ask(exchanges, client.signal).catch(() => undefined); // aborted below
    try {
      const exchange = await waitFor(() => exchanges[0], { what: "the answer's head at the client" });
      expect(exchange.status).to.equal(200);
      const opening = JSON.stringify(TEXT.slice(0, 4_000)).slice(1, -1);
      await waitFor(() => exchange.body.length > LIMIT && exchange.body.includes(opening), {
        what: "the first half of the answer at the client",
      });
      expect(exchange.body.startsWith("{"), "the answer's own bytes").to.equal(true);
      expect(exchange.complete).to.equal(false);
      client.abort();
      h.fake.reset(); // the later request of the check below gets a short answer
      await expectOneUsageEventOf(h, exchange.requestId, key);
    } finally {
      client.abort();
    }
  });

  it("a whole answer past the limit reaches the SDK as the upstream sent it, metered once", async () => {
    h.fake.set({ text: TEXT });
    const exchanges: Exchange[] = [];
    const answer = await sdkClients(h.url, key, { fetch: tappedFetch(exchanges) })
      .openai()
      .chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: QUESTION }] });
    expect(answer.choices[0]?.message.content).to.equal(TEXT);
    const [exchange] = exchanges;
    await exchange?.ended;
    expect(exchange?.complete).to.equal(true);
    expect(exchange?.body.length).to.be.greaterThan(LIMIT);
    await expectOneUsageEventOf(h, exchange?.requestId ?? null, key);
  });
});
