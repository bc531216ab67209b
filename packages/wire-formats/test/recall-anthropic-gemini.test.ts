import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { type GenerateContentResponse, GoogleGenAI } from "@google/genai";
import { expect } from "chai";
import { ADAPTERS, addUsage, RECALL_TOOL_NAME, type RecallCall, type ReportedUsage } from "../src/index.ts";
import { eventsOf, FIXTURES, frozen, NONE, recallOf, served } from "./recall-kit.ts";

// Recall in Anthropic messages and Gemini generateContent: the tool terse adds, the
// calls it answers, the next round's request, and one client stream made of several
// upstream rounds. Streams are shaped like the recorded ones in
// ../shared/corpus/wire-fixtures (read here at run time) and the fake provider's; the
// relayed bytes are parsed by the official SDKs, served from a local HTTP server.

type Json = Record<string, unknown>;
type Format = "anthropic" | "gemini";

interface Relayed {
  /** What the client receives. */
  sent: string;
  /** Each round's end(). */
  ends: { calls: RecallCall[]; answer: Json }[];
  /** Each round's usage, read by the adapter off the upstream events. */
  usages: ReportedUsage[];
}

/**
 * The data plane's loop over scripted upstream rounds: push every event, end() each
 * round, and continue while a round calls terse_recall and `maxRounds` allows
 * (a keep-alive while "waiting"), else send the release.
 */
function relay(format: Format, rounds: string[], maxRounds = rounds.length - 1): Relayed {
  const adapter = ADAPTERS[format];
  const stream = recallOf(format).stream();
  const out: Relayed = { sent: "", ends: [], usages: [] };
  let total = NONE;
  for (const [i, round] of rounds.entries()) {
    if (i > 0) {
      out.sent += stream.keepAlive;
      stream.nextRound(total);
    }
    let seen: ReportedUsage | undefined;
    for (const { raw, data } of eventsOf(round)) {
      if (data && typeof data === "object") seen = adapter.usage(data as Json, seen) ?? seen;
      out.sent += stream.push(raw, data);
    }
    const { calls, answer, release } = stream.end();
    out.ends.push({ calls, answer });
    out.usages.push(seen ?? NONE);
    total = addUsage(total, seen ?? NONE);
    if (calls.length === 0 || i === maxRounds || i === rounds.length - 1) {
      out.sent += release;
      break;
    }
  }
  return out;
}

// --- Anthropic messages ---------------------------------------------------------------

const aEvent = (data: Json) => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;

const anthropicUsage = (input: number, cacheRead = 0, cacheWrite = 0) => ({
  input_tokens: input,
  cache_creation_input_tokens: cacheWrite,
  cache_read_input_tokens: cacheRead,
  output_tokens: 1,
  service_tier: "standard",
});

const A = {
  start: (id: string, usage: Json) =>
    aEvent({
      type: "message_start",
      message: {
        id,
        type: "message",
        role: "assistant",
        model: "claude-opus-4-8",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage,
      },
    }),
  ping: () => 'event: ping\ndata: {"type": "ping"}\n\n',
  text: (index: number, text: string) =>
    aEvent({ type: "content_block_start", index, content_block: { type: "text", text: "" } }) +
    text
      .split(/(?<= )/)
      .map((piece) => aEvent({ type: "content_block_delta", index, delta: { type: "text_delta", text: piece } }))
      .join("") +
    aEvent({ type: "content_block_stop", index }),
  thinking: (index: number, thinking: string, signature: string) =>
    aEvent({ type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } }) +
    aEvent({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking } }) +
    aEvent({ type: "content_block_delta", index, delta: { type: "signature_delta", signature } }) +
    aEvent({ type: "content_block_stop", index }),
  toolUse: (index: number, id: string, name: string, input: Json) => {
    const json = JSON.stringify(input);
    const half = json.length >> 1;
    return (
      aEvent({ type: "content_block_start", index, content_block: { type: "tool_use", id, name, input: {} } }) +
      [json.slice(0, half), json.slice(half)]
        .map((p) =>
          aEvent({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: p } }),
        )
        .join("") +
      aEvent({ type: "content_block_stop", index })
    );
  },
  end: (stop_reason: string, output: number) =>
    aEvent({ type: "message_delta", delta: { stop_reason, stop_sequence: null }, usage: { output_tokens: output } }) +
    aEvent({ type: "message_stop" }),
};

const RECALL_ARGS = { handle: "3f2a9c0d1b7e", lines: "120-480" };

/** Every event type the client receives, and every tool_use name in them. */
function anthropicSeen(sent: string): { types: string[]; tools: string[]; indexes: number[] } {
  const datas = eventsOf(sent)
    .map((e) => e.data)
    .filter((d): d is Json => typeof d === "object" && d !== null);
  return {
    types: datas.map((d) => String(d.type)),
    tools: datas.flatMap((d) => {
      const block = d.content_block as Json | undefined;
      return block?.type === "tool_use" ? [String(block.name)] : [];
    }),
    indexes: datas.filter((d) => d.type === "content_block_start").map((d) => Number(d.index)),
  };
}

/** The SDK's MessageStream over the relayed bytes: its final message and every event it saw. */
async function anthropicClient(sent: string) {
  return served(sent, async (url) => {
    const client = new Anthropic({ baseURL: url, apiKey: "test-key", maxRetries: 0 });
    const stream = client.messages.stream({
      model: "claude-opus-4-8",
      max_tokens: 1024,
      messages: [{ role: "user", content: "What does line 300 say?" }],
    });
    const events: string[] = [];
    stream.on("streamEvent", (e) => events.push(e.type));
    const message = await stream.finalMessage();
    return { message, events };
  });
}

describe("recall in Anthropic messages", () => {
  const recall = recallOf("anthropic");
  const cached = { type: "ephemeral" };
  const request = {
    model: "claude-opus-4-8",
    max_tokens: 1024,
    tools: [
      { name: "read_file", description: "Read a file", input_schema: { type: "object", properties: {} } },
      { name: "bash", description: "Run a command", input_schema: { type: "object" }, cache_control: cached },
    ],
    messages: [{ role: "user", content: "What does line 300 say?" }],
  };

  describe("JSON", () => {
    it("declares terse_recall last, the same bytes in every request, once, a caller's cache_control left where it was", () => {
      const body = frozen(request);
      const withTool = recall.withTool(body);
      const tools = withTool.tools as Json[];
      expect(tools.map((t) => t.name)).to.deep.equal(["read_file", "bash", RECALL_TOOL_NAME]);
      expect(tools.slice(0, 2)).to.deep.equal(request.tools);
      expect(tools[2]).to.have.all.keys("name", "description", "input_schema");
      // Another request of the session, with other messages and no tools of its own.
      const later = recall.withTool(frozen({ model: "claude-opus-4-8", messages: [{ role: "user", content: "hi" }] }));
      expect((later.tools as Json[]).map((t) => t.name)).to.deep.equal([RECALL_TOOL_NAME]);
      expect(JSON.stringify((later.tools as Json[])[0])).to.equal(JSON.stringify(tools[2]));
      expect(JSON.stringify(recall.withTool(frozen(request)))).to.equal(JSON.stringify(withTool));
      expect(recall.withTool(withTool)).to.equal(withTool);
    });

    const answer = {
      id: "msg_01",
      type: "message",
      role: "assistant",
      model: "claude-opus-4-8",
      content: [
        { type: "thinking", thinking: "The marker names lines 120-480.", signature: "c2lnLTE=" },
        { type: "text", text: "Let me fetch the cut lines." },
        { type: "tool_use", id: "toolu_client", name: "read_file", input: { path: "a.ts" } },
        { type: "tool_use", id: "toolu_r1", name: RECALL_TOOL_NAME, input: RECALL_ARGS },
        { type: "tool_use", id: "toolu_r2", name: RECALL_TOOL_NAME, input: "not an object" },
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 50, cache_creation_input_tokens: 10, cache_read_input_tokens: 40, output_tokens: 30 },
    };

    it("calls(): the terse_recall tool_use blocks in order, their input as args ({} when not an object)", () => {
      expect(recall.calls(frozen(answer))).to.deep.equal([
        { id: "toolu_r1", args: RECALL_ARGS },
        { id: "toolu_r2", args: {} },
      ]);
      expect(recall.calls({ ...answer, content: [{ type: "text", text: "Done." }] })).to.deep.equal([]);
    });

    it("continueWith(): the request, then the model's turn without the client's call, then one tool_result per call", () => {
      const calls = recall.calls(answer);
      const results = [
        { call: calls[0] as RecallCall, text: "line 300: const answer = 42;" },
        { call: calls[1] as RecallCall, text: "terse: handle unknown or expired" },
      ];
      const body = recall.withTool(request);
      const next = recall.continueWith(frozen(body), frozen(answer), results);
      expect(next.tools).to.deep.equal(body.tools);
      const messages = next.messages as Json[];
      expect(messages.slice(0, 1)).to.deep.equal(request.messages);
      expect(messages.slice(1)).to.deep.equal([
        {
          role: "assistant",
          content: [answer.content[0], answer.content[1], answer.content[3], answer.content[4]],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_r1", content: "line 300: const answer = 42;" },
            { type: "tool_result", tool_use_id: "toolu_r2", content: "terse: handle unknown or expired" },
          ],
        },
      ]);
    });

    it("withoutRecall(): the recall calls gone; tool_use stays the stop reason only while a client call is left", () => {
      const left = recall.withoutRecall(frozen(answer));
      expect((left.content as Json[]).map((b) => b.name ?? b.type)).to.deep.equal(["thinking", "text", "read_file"]);
      expect(left.stop_reason).to.equal("tool_use");
      const onlyRecall = { ...answer, content: answer.content.filter((b) => b.name !== "read_file") };
      const ended = recall.withoutRecall(frozen(onlyRecall));
      expect((ended.content as Json[]).map((b) => b.type)).to.deep.equal(["thinking", "text"]);
      expect(ended.stop_reason).to.equal("end_turn");
    });

    it("merge(): earlier rounds' text and thinking, then the last answer, under the first id, with the summed usage", () => {
      const last = {
        id: "msg_02",
        type: "message",
        role: "assistant",
        model: "claude-opus-4-8",
        content: [{ type: "text", text: "Line 300 sets the answer to 42." }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 80, cache_creation_input_tokens: 0, cache_read_input_tokens: 100, output_tokens: 12 },
      };
      const usage = { input: 280, output: 42, cacheRead: 140, cacheWrite: 10 };
      const merged = recall.merge(frozen([answer]), frozen(last), usage);
      expect(merged.id).to.equal("msg_01");
      expect(merged.content).to.deep.equal([answer.content[0], answer.content[1], last.content[0]]);
      expect(merged.stop_reason).to.equal("end_turn");
      expect(merged.usage).to.deep.equal({
        input_tokens: 130,
        cache_creation_input_tokens: 10,
        cache_read_input_tokens: 140,
        output_tokens: 42,
      });
      expect(ADAPTERS.anthropic.usage(merged, undefined)).to.deep.equal(usage);
    });
  });

  describe("SSE", () => {
    it("every recorded stream passes through byte for byte (text, thinking, a client's tool call, a cut-off call, server tools)", () => {
      const dir = join(FIXTURES, "anthropic");
      const files = readdirSync(dir);
      expect(files.length).to.be.at.least(5);
      for (const file of files) {
        const text = readFileSync(join(dir, file), "utf8");
        const { sent, ends } = relay("anthropic", [text]);
        expect(sent, file).to.equal(text);
        expect(ends[0]?.calls, file).to.deep.equal([]);
      }
    });

    const round1 =
      A.start("msg_01", anthropicUsage(50, 40, 10)) +
      A.ping() +
      A.thinking(0, "The marker names lines 120-480.", "c2lnLTE=") +
      A.text(1, "Let me fetch the cut lines. ") +
      A.toolUse(2, "toolu_r1", RECALL_TOOL_NAME, RECALL_ARGS) +
      A.end("tool_use", 30);
    const round2 =
      A.start("msg_02", anthropicUsage(80, 100)) +
      A.ping() +
      A.text(0, "Line 300 sets the answer to 42.") +
      A.end("end_turn", 12);

    it("text then terse_recall: the text at once, nothing of the call, then the continuation as one stream the SDK reads as one message", async () => {
      const stream = recall.stream();
      const upTo = (text: string) =>
        eventsOf(text)
          .map((e) => stream.push(e.raw, e.data))
          .join("");
      // What round 1 relays before its end: message_start, ping, thinking, text; no tool_use.
      const first = upTo(round1);
      expect(first).to.equal(
        round1.slice(0, round1.indexOf('event: content_block_start\ndata: {"type":"content_block_start","index":2')),
      );
      const end = stream.end();
      expect(end.calls).to.deep.equal([{ id: "toolu_r1", args: RECALL_ARGS }]);
      // The rebuilt answer continues the conversation as the JSON one does.
      expect(end.answer.content).to.deep.equal([
        { type: "thinking", thinking: "The marker names lines 120-480.", signature: "c2lnLTE=" },
        { type: "text", text: "Let me fetch the cut lines. " },
        { type: "tool_use", id: "toolu_r1", name: RECALL_TOOL_NAME, input: RECALL_ARGS },
      ]);
      expect(end.answer).to.include({ id: "msg_01", stop_reason: "tool_use" });
      expect(recall.calls(end.answer)).to.deep.equal(end.calls);

      const { sent, usages } = relay("anthropic", [round1, round2]);
      const seen = anthropicSeen(sent);
      expect(seen.tools).to.deep.equal([]);
      expect(
        seen.types.filter((t) => t === "message_start" || t === "message_delta" || t === "message_stop"),
      ).to.deep.equal(["message_start", "message_delta", "message_stop"]);
      expect(seen.indexes).to.deep.equal([0, 1, 2]);
      expect(sent).to.not.include("tool_use");

      const total = addUsage(usages[0] as ReportedUsage, usages[1] as ReportedUsage);
      expect(total).to.deep.equal({ input: 280, output: 42, cacheRead: 140, cacheWrite: 10 });
      const { message, events } = await anthropicClient(sent);
      // The SDK reads past the pings (the provider's and the keep-alive) without a word.
      expect(sent.split(A.ping()).length - 1).to.equal(3);
      expect(events).to.not.include("ping");
      expect(message.id).to.equal("msg_01");
      expect(message.stop_reason).to.equal("end_turn");
      expect(message.content).to.deep.equal([
        { type: "thinking", thinking: "The marker names lines 120-480.", signature: "c2lnLTE=" },
        { type: "text", text: "Let me fetch the cut lines. " },
        { type: "text", text: "Line 300 sets the answer to 42." },
      ]);
      expect(message.usage).to.include({
        input_tokens: 130,
        cache_creation_input_tokens: 10,
        cache_read_input_tokens: 140,
        output_tokens: 42,
      });
      // What the client's usage reader makes of it is the sum of the rounds.
      let clientUsage: ReportedUsage | undefined;
      for (const { data } of eventsOf(sent)) {
        if (data && typeof data === "object")
          clientUsage = ADAPTERS.anthropic.usage(data as Json, clientUsage) ?? clientUsage;
      }
      expect(clientUsage).to.deep.equal(total);
    });

    it("a client's call beside terse_recall: held, dropped from the next round's request, and the model's repeated call reaches the client", async () => {
      const withClient =
        A.start("msg_01", anthropicUsage(300)) +
        A.text(0, "Let me look. ") +
        A.toolUse(1, "toolu_c1", "read_file", { path: "a.ts" }) +
        A.toolUse(2, "toolu_r1", RECALL_TOOL_NAME, RECALL_ARGS) +
        A.end("tool_use", 40);
      const again =
        A.start("msg_02", anthropicUsage(400)) +
        A.text(0, "Now the file. ") +
        A.toolUse(1, "toolu_c2", "read_file", { path: "b.ts" }) +
        A.end("tool_use", 20);
      const { sent, ends } = relay("anthropic", [withClient, again]);
      expect(ends[0]?.calls).to.deep.equal([{ id: "toolu_r1", args: RECALL_ARGS }]);
      const next = recall.continueWith(request, ends[0]?.answer as Json, [
        { call: ends[0]?.calls[0] as RecallCall, text: "line 300" },
      ]);
      const turn = (next.messages as Json[])[1] as { content: Json[] };
      expect(turn.content.map((b) => b.name ?? b.type)).to.deep.equal(["text", RECALL_TOOL_NAME]);

      const seen = anthropicSeen(sent);
      expect(seen.tools).to.deep.equal(["read_file"]);
      expect(seen.indexes).to.deep.equal([0, 1, 2]);
      expect(sent).to.not.include("toolu_c1");
      const { message } = await anthropicClient(sent);
      expect(message.stop_reason).to.equal("tool_use");
      expect(message.content).to.deep.equal([
        { type: "text", text: "Let me look. " },
        { type: "text", text: "Now the file. " },
        { type: "tool_use", id: "toolu_c2", name: "read_file", input: { path: "b.ts" } },
      ]);
      expect(message.usage).to.include({ input_tokens: 700, output_tokens: 60 });
    });

    it("the round limit: the held calls released without terse_recall's, end_turn where no client call is left, usage summed", async () => {
      // The continuation asks again and no round is left.
      const askingAgain =
        A.start("msg_02", anthropicUsage(80, 100)) +
        A.text(0, "Still need more. ") +
        A.toolUse(1, "toolu_r2", RECALL_TOOL_NAME, { handle: "3f2a9c0d1b7e" }) +
        A.end("tool_use", 9);
      const limited = relay("anthropic", [round1, askingAgain], 1);
      expect(limited.ends[1]?.calls).to.deep.equal([{ id: "toolu_r2", args: { handle: "3f2a9c0d1b7e" } }]);
      expect(anthropicSeen(limited.sent).tools).to.deep.equal([]);
      const { message } = await anthropicClient(limited.sent);
      expect(message.stop_reason).to.equal("end_turn");
      expect(message.content.map((b) => (b.type === "text" ? b.text : b.type))).to.deep.equal([
        "thinking",
        "Let me fetch the cut lines. ",
        "Still need more. ",
      ]);
      expect(message.usage).to.include({ input_tokens: 130, cache_read_input_tokens: 140, output_tokens: 39 });

      // No round at all: the first answer's release; a client call beside keeps tool_use.
      const beside =
        A.start("msg_01", anthropicUsage(300)) +
        A.toolUse(0, "toolu_r1", RECALL_TOOL_NAME, RECALL_ARGS) +
        A.toolUse(1, "toolu_c1", "read_file", { path: "a.ts" }) +
        A.end("tool_use", 40);
      const released = relay("anthropic", [beside], 0);
      expect(anthropicSeen(released.sent).tools).to.deep.equal(["read_file"]);
      expect(anthropicSeen(released.sent).indexes).to.deep.equal([0]);
      const client = await anthropicClient(released.sent);
      expect(client.message.stop_reason).to.equal("tool_use");
      expect(client.message.content).to.deep.equal([
        { type: "tool_use", id: "toolu_c1", name: "read_file", input: { path: "a.ts" } },
      ]);
      expect(client.message.usage).to.include({ input_tokens: 300, output_tokens: 40 });
    });

    it("keep-alive is Anthropic's own ping", () => {
      expect(eventsOf(recall.stream().keepAlive)).to.deep.equal([
        { raw: 'event: ping\ndata: {"type": "ping"}\n\n', data: { type: "ping" } },
      ]);
    });
  });
});

// --- Gemini generateContent -----------------------------------------------------------

const gEvent = (data: Json) => `data: ${JSON.stringify(data)}\r\n\r\n`;

const G = {
  chunk: (responseId: string, parts: Json[], usage: Json, finish?: string) =>
    gEvent({
      candidates: [{ content: { parts, role: "model" }, ...(finish ? { finishReason: finish } : {}), index: 0 }],
      modelVersion: "gemini-2.5-flash",
      responseId,
      usageMetadata: usage,
    }),
  /** Intermediate chunks say only the prompt and total; the last adds candidates and thoughts. */
  usage: (prompt: number, candidates?: number, thoughts?: number) => ({
    promptTokenCount: prompt,
    ...(candidates !== undefined ? { candidatesTokenCount: candidates } : {}),
    ...(thoughts !== undefined ? { thoughtsTokenCount: thoughts } : {}),
    totalTokenCount: prompt + (candidates ?? 0) + (thoughts ?? 0),
  }),
};

const recallPart = (args: Json = RECALL_ARGS) => ({ functionCall: { name: RECALL_TOOL_NAME, args } });

/** Every functionCall name in what the client receives. */
const geminiCalls = (sent: string): string[] =>
  eventsOf(sent).flatMap(({ data }) =>
    ((data as { candidates?: { content?: { parts?: Json[] } }[] })?.candidates?.[0]?.content?.parts ?? []).flatMap(
      (p) => (p.functionCall ? [String((p.functionCall as Json).name)] : []),
    ),
  );

/** @google/genai's chat over the relayed bytes: its chunks and the model turn it records. */
async function geminiClient(sent: string) {
  return served(sent, async (url) => {
    const ai = new GoogleGenAI({ apiKey: "test-key", httpOptions: { baseUrl: url } });
    const chat = ai.chats.create({ model: "gemini-2.5-flash" });
    const chunks: GenerateContentResponse[] = [];
    for await (const chunk of await chat.sendMessageStream({ message: "What does line 300 say?" })) chunks.push(chunk);
    const history = chat.getHistory();
    // The chat records each chunk's content as a model turn of its own.
    const turn = history.slice(1).flatMap((c) => c.parts ?? []);
    return {
      chunks,
      history,
      text: turn
        .filter((p) => !p.thought)
        .map((p) => p.text ?? "")
        .join(""),
      calls: chunks.flatMap((c) => c.functionCalls ?? []),
      usage: chunks.at(-1)?.usageMetadata,
    };
  });
}

describe("recall in Gemini generateContent", () => {
  const recall = recallOf("gemini");
  const request = {
    contents: [{ role: "user", parts: [{ text: "What does line 300 say?" }] }],
    tools: [
      { googleSearch: {} },
      { functionDeclarations: [{ name: "read_file", description: "Read a file", parameters: { type: "object" } }] },
    ],
  };

  describe("JSON", () => {
    it("does not declare terse_recall beside a JSON response, which Gemini refuses with function declarations", () => {
      const jsonMode = frozen({ ...request, generationConfig: { responseMimeType: "application/json" } });
      expect(recall.withTool(jsonMode)).to.equal(jsonMode);
      expect(recall.takesTool(jsonMode, "gemini-2.5-flash")).to.equal(false);
    });

    it("takes no tool where Gemini takes none: beside a cached content, for a Gemma model, beside the caller's own", () => {
      expect(recall.takesTool(request, "gemini-2.5-flash")).to.equal(true);
      expect(recall.takesTool(request, undefined)).to.equal(true);
      const cached = frozen({ ...request, cachedContent: "cachedContents/abc" });
      expect(recall.takesTool(cached, "gemini-2.5-flash")).to.equal(false);
      expect(recall.withTool(cached)).to.equal(cached);
      expect(recall.takesTool({ ...request, cached_content: "cachedContents/abc" }, undefined)).to.equal(false);
      expect(recall.takesTool(request, "gemma-3-27b-it")).to.equal(false);
      expect(recall.takesTool(request, "models/gemma-3n-e4b-it")).to.equal(false);
      expect(recall.takesTool(recall.withTool(request), "gemini-2.5-flash")).to.equal(false);
    });

    it("declares terse_recall in a tool object of its own, last, the same bytes in every request, once", () => {
      const withTool = recall.withTool(frozen(request));
      const tools = withTool.tools as Json[];
      expect(tools.slice(0, 2)).to.deep.equal(request.tools);
      expect(tools[2]).to.deep.equal({
        functionDeclarations: [
          {
            name: RECALL_TOOL_NAME,
            description: (tools[2] as { functionDeclarations: Json[] }).functionDeclarations[0]?.description,
            parameters: (tools[2] as { functionDeclarations: Json[] }).functionDeclarations[0]?.parameters,
          },
        ],
      });
      const later = recall.withTool(frozen({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }));
      expect(JSON.stringify(later.tools)).to.equal(JSON.stringify([tools[2]]));
      expect(JSON.stringify(recall.withTool(frozen(request)))).to.equal(JSON.stringify(withTool));
      expect(recall.withTool(withTool)).to.equal(withTool);
    });

    const answer = {
      candidates: [
        {
          content: {
            role: "model",
            parts: [
              { text: "Thinking about the marker.", thought: true },
              { text: "Let me fetch the cut lines." },
              { functionCall: { name: "read_file", args: { path: "a.ts" } }, thoughtSignature: "c2lnLWc=" },
              { functionCall: { id: "call_r1", ...recallPart().functionCall } },
              { functionCall: { name: RECALL_TOOL_NAME, args: "nope" } },
            ],
          },
          finishReason: "STOP",
          index: 0,
        },
      ],
      usageMetadata: G.usage(120, 30, 50),
      modelVersion: "gemini-2.5-flash",
      responseId: "resp-1",
    };

    it("calls(): the terse_recall functionCall parts in order, with their id or ''", () => {
      expect(recall.calls(frozen(answer))).to.deep.equal([
        { id: "call_r1", args: RECALL_ARGS },
        { id: "", args: {} },
      ]);
    });

    it("continueWith(): the model's turn without the client's call (its signature moved to the first call kept), then functionResponses", () => {
      const calls = recall.calls(answer);
      const next = recall.continueWith(frozen(recall.withTool(request)), frozen(answer), [
        { call: calls[0] as RecallCall, text: "line 300: const answer = 42;" },
        { call: calls[1] as RecallCall, text: "terse: handle unknown or expired" },
      ]);
      const contents = next.contents as Json[];
      expect(contents.slice(0, 1)).to.deep.equal(request.contents);
      const parts = answer.candidates[0]?.content.parts ?? [];
      expect(contents.slice(1)).to.deep.equal([
        {
          role: "model",
          parts: [parts[0], parts[1], { ...parts[3], thoughtSignature: "c2lnLWc=" }, parts[4]],
        },
        {
          role: "user",
          parts: [
            {
              functionResponse: {
                id: "call_r1",
                name: RECALL_TOOL_NAME,
                response: { content: "line 300: const answer = 42;" },
              },
            },
            { functionResponse: { name: RECALL_TOOL_NAME, response: { content: "terse: handle unknown or expired" } } },
          ],
        },
      ]);
    });

    it("withoutRecall(): the client's call stays; nothing left becomes one empty text part", () => {
      const left = recall.withoutRecall(frozen(answer));
      const parts = (left.candidates as { content: { parts: Json[] } }[])[0]?.content.parts;
      expect(parts).to.deep.equal(answer.candidates[0]?.content.parts.slice(0, 3));
      const onlyRecall = {
        ...answer,
        candidates: [{ ...answer.candidates[0], content: { role: "model", parts: [recallPart()] } }],
      };
      const empty = recall.withoutRecall(frozen(onlyRecall));
      expect((empty.candidates as { content: { parts: Json[] } }[])[0]?.content.parts).to.deep.equal([{ text: "" }]);
    });

    it("merge(): earlier rounds' text and thoughts, then the last answer, under the first response id, with the summed usage", () => {
      const last = {
        candidates: [
          {
            content: { role: "model", parts: [{ text: "Line 300 sets the answer to 42." }] },
            finishReason: "STOP",
            index: 0,
          },
        ],
        usageMetadata: { ...G.usage(400, 12), cachedContentTokenCount: 100 },
        modelVersion: "gemini-2.5-flash",
        responseId: "resp-2",
      };
      const usage = { input: 520, output: 92, cacheRead: 100, cacheWrite: 0 };
      const merged = recall.merge(frozen([answer]), frozen(last), usage);
      expect(merged.responseId).to.equal("resp-1");
      expect((merged.candidates as { content: { parts: Json[] } }[])[0]?.content.parts).to.deep.equal([
        { text: "Thinking about the marker.", thought: true },
        { text: "Let me fetch the cut lines." },
        { text: "Line 300 sets the answer to 42." },
      ]);
      expect(merged.usageMetadata).to.deep.equal({
        promptTokenCount: 520,
        candidatesTokenCount: 42,
        thoughtsTokenCount: 50,
        cachedContentTokenCount: 100,
        totalTokenCount: 612,
      });
      expect(ADAPTERS.gemini.usage(merged, undefined)).to.deep.equal(usage);
    });
  });

  describe("SSE", () => {
    /** A recording's chunks as the API sends them. */
    const recorded = (file: string): string[] => {
      const json = JSON.parse(readFileSync(join(FIXTURES, "gemini", file), "utf8")) as {
        interactions: { response: { bodySegments: Json[] } }[];
      };
      return json.interactions.map((i) => i.response.bodySegments.map(gEvent).join(""));
    };

    it("every recorded stream passes through byte for byte (text, and a client's function call released at the end)", () => {
      const files = readdirSync(join(FIXTURES, "gemini"));
      expect(files.length).to.be.at.least(4);
      for (const file of files) {
        for (const text of recorded(file)) {
          const { sent, ends } = relay("gemini", [text]);
          expect(sent, file).to.equal(text);
          expect(ends[0]?.calls, file).to.deep.equal([]);
        }
      }
    });

    const round1 =
      G.chunk("resp-1", [{ text: "Let me " }], G.usage(200)) +
      G.chunk("resp-1", [{ text: "fetch the cut lines. " }], G.usage(200)) +
      G.chunk(
        "resp-1",
        [{ ...recallPart(), thoughtSignature: "c2lnLWc=" }],
        { ...G.usage(200, 20, 10), cachedContentTokenCount: 64 },
        "STOP",
      );
    const round2 =
      G.chunk("resp-2", [{ text: "Line 300 sets " }], G.usage(300)) +
      G.chunk("resp-2", [{ text: "the answer to 42." }], { ...G.usage(300, 12), cachedContentTokenCount: 256 }, "STOP");

    it("text then terse_recall: the text at once, nothing of the call, then the continuation; @google/genai reads one answer", async () => {
      const stream = recall.stream();
      const events = eventsOf(round1);
      const before = events.map((e) => stream.push(e.raw, e.data)).join("");
      expect(before).to.equal(
        events
          .slice(0, 2)
          .map((e) => e.raw)
          .join(""),
      );
      const end = stream.end();
      expect(end.calls).to.deep.equal([{ id: "", args: RECALL_ARGS }]);
      expect(end.answer).to.deep.include({ responseId: "resp-1" });
      expect((end.answer.candidates as Json[])[0]).to.deep.include({
        content: {
          role: "model",
          parts: [{ text: "Let me fetch the cut lines. " }, { ...recallPart(), thoughtSignature: "c2lnLWc=" }],
        },
        finishReason: "STOP",
      });
      expect(end.answer.usageMetadata).to.deep.equal({ ...G.usage(200, 20, 10), cachedContentTokenCount: 64 });

      const { sent, usages } = relay("gemini", [round1, round2]);
      expect(geminiCalls(sent)).to.deep.equal([]);
      expect(sent).to.match(/(\r?\n){4}/); // a blank-line keep-alive after a whole event
      const client = await geminiClient(sent);
      expect(client.calls).to.deep.equal([]);
      expect(client.text).to.equal("Let me fetch the cut lines. Line 300 sets the answer to 42.");
      expect(new Set(client.history.map((c) => c.role))).to.deep.equal(new Set(["user", "model"]));
      expect(client.history.slice(1)).to.have.length(client.chunks.length);
      expect(new Set(client.chunks.map((c) => c.responseId))).to.deep.equal(new Set(["resp-1"]));
      const total = addUsage(usages[0] as ReportedUsage, usages[1] as ReportedUsage);
      expect(total).to.deep.equal({ input: 500, output: 42, cacheRead: 320, cacheWrite: 0 });
      expect(client.usage).to.deep.include({
        promptTokenCount: 500,
        candidatesTokenCount: 42,
        cachedContentTokenCount: 320,
        totalTokenCount: 542,
      });
    });

    it("text written beside the recall call reaches the client before the continuation", async () => {
      const beside = G.chunk("resp-1", [{ text: "Fetching. " }, recallPart()], G.usage(200, 20), "STOP");
      const { sent } = relay("gemini", [beside, round2]);
      expect(geminiCalls(sent)).to.deep.equal([]);
      const client = await geminiClient(sent);
      expect(client.text).to.equal("Fetching. Line 300 sets the answer to 42.");
    });

    it("a client's call beside terse_recall: held, dropped from the next request, and the model's repeated call reaches the client", async () => {
      const withClient =
        G.chunk("resp-1", [{ text: "Let me look. " }], G.usage(200)) +
        G.chunk(
          "resp-1",
          [{ functionCall: { name: "read_file", args: { path: "a.ts" } }, thoughtSignature: "c2lnLWc=" }, recallPart()],
          G.usage(200, 20),
          "STOP",
        );
      const again =
        G.chunk("resp-2", [{ text: "Now the file. " }], G.usage(300)) +
        G.chunk(
          "resp-2",
          [{ functionCall: { name: "read_file", args: { path: "b.ts" } }, thoughtSignature: "c2lnLTI=" }],
          G.usage(300, 15),
          "STOP",
        );
      const { sent, ends } = relay("gemini", [withClient, again]);
      const next = recall.continueWith(request, ends[0]?.answer as Json, [
        { call: ends[0]?.calls[0] as RecallCall, text: "line 300" },
      ]);
      expect((next.contents as Json[])[1]).to.deep.equal({
        role: "model",
        parts: [{ text: "Let me look. " }, { ...recallPart(), thoughtSignature: "c2lnLWc=" }],
      });
      expect(geminiCalls(sent)).to.deep.equal(["read_file"]);
      const client = await geminiClient(sent);
      expect(client.calls).to.deep.equal([{ name: "read_file", args: { path: "b.ts" } }]);
      expect(client.text).to.equal("Let me look. Now the file. ");
      expect(client.usage).to.deep.include({ promptTokenCount: 500, candidatesTokenCount: 35, totalTokenCount: 535 });
    });

    it("the round limit: the held chunks released without terse_recall's parts, usage summed; a client call beside it stays", async () => {
      const askingAgain =
        G.chunk("resp-2", [{ text: "Still need more. " }], G.usage(300)) +
        G.chunk("resp-2", [recallPart({ handle: "3f2a9c0d1b7e" })], G.usage(300, 9), "STOP");
      const limited = relay("gemini", [round1, askingAgain], 1);
      expect(limited.ends[1]?.calls).to.deep.equal([{ id: "", args: { handle: "3f2a9c0d1b7e" } }]);
      expect(geminiCalls(limited.sent)).to.deep.equal([]);
      const client = await geminiClient(limited.sent);
      expect(client.text).to.equal("Let me fetch the cut lines. Still need more. ");
      expect(new Set(client.history.map((c) => c.role))).to.deep.equal(new Set(["user", "model"]));
      expect(client.history.slice(1)).to.have.length(client.chunks.length);
      expect(client.usage).to.deep.include({ promptTokenCount: 500, candidatesTokenCount: 39, totalTokenCount: 539 });

      const beside = G.chunk(
        "resp-1",
        [recallPart(), { functionCall: { name: "read_file", args: { path: "a.ts" } } }],
        G.usage(200, 20),
        "STOP",
      );
      const released = relay("gemini", [G.chunk("resp-1", [{ text: "Reading. " }], G.usage(200)) + beside], 0);
      expect(geminiCalls(released.sent)).to.deep.equal(["read_file"]);
      const withCall = await geminiClient(released.sent);
      expect(withCall.calls).to.deep.equal([{ name: "read_file", args: { path: "a.ts" } }]);
      expect(withCall.usage).to.deep.include({ promptTokenCount: 200, candidatesTokenCount: 20 });
    });

    it("keep-alive: a blank line, which @google/genai's reader skips", async () => {
      const keepAlive = recall.stream().keepAlive;
      expect(keepAlive).to.equal("\n\n");
      const text = G.chunk("resp-1", [{ text: "Hello" }], G.usage(5, 1), "STOP");
      const client = await geminiClient(keepAlive + keepAlive + text + keepAlive);
      expect(client.chunks).to.have.length(1);
      expect(client.text).to.equal("Hello");
    });
  });
});
