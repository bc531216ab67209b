import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import OpenAI from "openai";
import {
  ADAPTERS,
  addUsage,
  isUsageOnlyChunk,
  RECALL_TOOL_NAME,
  type RecallCall,
  type ReportedUsage,
  UsageChunkFilter,
} from "../src/index.ts";
import { eventsOf, FIXTURES, frozen, NONE, recallOf, served } from "./recall-kit.ts";

// Recall in OpenAI chat completions and the Responses API: the tool terse adds, the
// calls it answers, the next round's request, and one client stream made of several
// upstream rounds. Streams are shaped like the recorded ones in
// ../shared/corpus/wire-fixtures/openai (read here at run time) and the fake provider's;
// the relayed bytes are parsed by the official `openai` SDK, served from a local server.

type Json = Record<string, unknown>;
type Format = "openai" | "openai-responses";

const OPENAI_FIXTURES = join(FIXTURES, "openai");
const RECALL_ARGS = { handle: "3f2a9c0d1b7e", lines: "120-480" };
const CLIENT_ARGS = { path: "src/a.ts" };

const datasOf = (text: string): Json[] =>
  eventsOf(text)
    .map((e) => e.data)
    .filter((d): d is Json => typeof d === "object" && d !== null);

/** The recorded streams of a Jest snapshot file, unescaped to the bytes the API sent. */
function recordedStreams(file: string): string[] {
  const snap = readFileSync(join(OPENAI_FIXTURES, file), "utf8");
  return [...snap.matchAll(/^exports\[`[^`]+`\] = `\n"([\s\S]*?)"\n`;$/gm)].map((m) =>
    (m[1] ?? "").replace(/\\(.)/g, "$1"),
  );
}

interface Relayed {
  /** What the client receives. */
  sent: string;
  /** Each round's end(). */
  ends: { calls: RecallCall[]; answer: Json }[];
  /** Every round's usage summed, as the adapter reads it off the upstream events. */
  total: ReportedUsage;
}

/**
 * The data plane's loop over scripted upstream rounds: push every event, end() each
 * round, and go on while a round calls terse_recall and `maxRounds` allows (a keep-alive
 * while "waiting"), else send the release.
 */
function relay(format: Format, rounds: string[], maxRounds = rounds.length - 1): Relayed {
  const adapter = ADAPTERS[format];
  const stream = recallOf(format).stream();
  const out: Relayed = { sent: "", ends: [], total: NONE };
  for (const [i, round] of rounds.entries()) {
    if (i > 0) {
      out.sent += stream.keepAlive;
      stream.nextRound(out.total);
    }
    let seen: ReportedUsage | undefined;
    for (const { raw, data } of eventsOf(round)) {
      if (data && typeof data === "object") seen = adapter.usage(data as Json, seen) ?? seen;
      out.sent += stream.push(raw, data);
    }
    const { calls, answer, release } = stream.end();
    out.ends.push({ calls, answer });
    out.total = addUsage(out.total, seen ?? NONE);
    if (calls.length === 0 || i === maxRounds) {
      out.sent += release;
      break;
    }
  }
  return out;
}

/** Serves `body` as an event stream to every request, for the SDK to read. */
/** An SDK client reading `body` from a local server. */
function servedTo<T>(body: string, use: (client: OpenAI) => Promise<T>): Promise<T> {
  return served(body, (url) => use(new OpenAI({ baseURL: `${url}/v1`, apiKey: "test-key", maxRetries: 0 })));
}

// --- chat completions ------------------------------------------------------------------

/** Text deltas: a word (with its trailing space) each. */
const wordsOf = (text: string): string[] => text.split(/(?<= )/).filter((word) => word !== "");

const sse = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

interface ChatCall {
  id: string;
  name: string;
  args: Json;
}

/**
 * One upstream chat stream as OpenAI sends it with include_usage: the opening chunk and
 * a word per text delta, each call opened by its id and name and its arguments in two
 * halves, the finish chunk, the usage chunk, [DONE].
 */
function chatStream(o: {
  id: string;
  created: number;
  text?: string;
  calls?: ChatCall[];
  usage: [prompt: number, completion: number, cached: number];
}): string {
  const chunk = (delta: Json, finish: string | null = null) =>
    sse({
      id: o.id,
      object: "chat.completion.chunk",
      created: o.created,
      model: "gpt-4o-2024-08-06",
      system_fingerprint: "fp_845eaabc1f",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      usage: null,
    });
  const events: string[] = [];
  if (o.text !== undefined) {
    events.push(chunk({ role: "assistant", content: "", refusal: null }));
    for (const word of wordsOf(o.text)) events.push(chunk({ content: word }));
  }
  for (const [index, call] of (o.calls ?? []).entries()) {
    const opening = events.length === 0 ? { role: "assistant", content: null, refusal: null } : {};
    const start = { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } };
    events.push(chunk({ ...opening, tool_calls: [start] }));
    const json = JSON.stringify(call.args);
    for (const half of [json.slice(0, json.length >> 1), json.slice(json.length >> 1)])
      events.push(chunk({ tool_calls: [{ index, function: { arguments: half } }] }));
  }
  events.push(chunk({}, o.calls?.length ? "tool_calls" : "stop"));
  const [prompt, completion, cached] = o.usage;
  events.push(
    sse({
      id: o.id,
      object: "chat.completion.chunk",
      created: o.created,
      model: "gpt-4o-2024-08-06",
      system_fingerprint: "fp_845eaabc1f",
      choices: [],
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0 },
      },
    }),
  );
  events.push("data: [DONE]\n\n");
  return events.join("");
}

const recallCall = (id: string, args: Json = RECALL_ARGS): ChatCall => ({ id, name: RECALL_TOOL_NAME, args });
const clientCall: ChatCall = { id: "call_client", name: "read_file", args: CLIENT_ARGS };

/** The SDK's ChatCompletionStream over the relayed bytes: its final completion and what it emitted. */
async function chatClient(sent: string) {
  return servedTo(sent, async (client) => {
    const stream = client.chat.completions.stream({
      model: "gpt-4o-2024-08-06",
      messages: [{ role: "user", content: "What does line 300 say?" }],
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    const toolDeltas: string[] = [];
    stream.on("content.delta", (e) => deltas.push(e.delta));
    stream.on("tool_calls.function.arguments.delta", (e) => toolDeltas.push(e.name));
    const completion = await stream.finalChatCompletion();
    return { completion, deltas, toolDeltas };
  });
}

describe("recall in OpenAI chat completions", () => {
  const recall = recallOf("openai");
  const request = {
    model: "gpt-4o",
    tools: [
      { type: "function", function: { name: "read_file", description: "Read a file", parameters: { type: "object" } } },
    ],
    messages: [
      { role: "system", content: "You are a coding agent." },
      { role: "user", content: "What does line 300 say?" },
    ],
  };

  describe("JSON", () => {
    it("declares terse_recall last, the same bytes in every request, and only once", () => {
      const withTool = recall.withTool(frozen(request));
      const tools = withTool.tools as Json[];
      expect(tools.map((t) => (t.function as Json).name)).to.deep.equal(["read_file", RECALL_TOOL_NAME]);
      expect(tools[0]).to.deep.equal(request.tools[0]);
      expect(tools[1]).to.have.all.keys("type", "function");
      expect(tools[1]?.function).to.have.all.keys("name", "description", "parameters");
      const later = recall.withTool(frozen({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }));
      expect(JSON.stringify(later.tools)).to.equal(JSON.stringify([tools[1]]));
      expect(JSON.stringify(recall.withTool(frozen(request)))).to.equal(JSON.stringify(withTool));
      expect(recall.withTool(withTool)).to.equal(withTool);
    });

    const answer = {
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1_723_031_664,
      model: "gpt-4o-2024-08-06",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: "Let me fetch the cut lines. ",
            refusal: null,
            tool_calls: [
              { id: "call_client", type: "function", function: { name: "read_file", arguments: '{"path":"a.ts"}' } },
              {
                id: "call_r1",
                type: "function",
                function: { name: RECALL_TOOL_NAME, arguments: JSON.stringify(RECALL_ARGS) },
              },
              { id: "call_r2", type: "function", function: { name: RECALL_TOOL_NAME, arguments: '{"handle":' } },
            ],
          },
          logprobs: null,
          finish_reason: "tool_calls",
        },
      ],
      usage: {
        prompt_tokens: 100,
        completion_tokens: 30,
        total_tokens: 130,
        prompt_tokens_details: { cached_tokens: 64 },
      },
    };

    it("calls(): the terse_recall calls among the client's, in order, their arguments parsed ({} when not an object)", () => {
      expect(recall.calls(frozen(answer))).to.deep.equal([
        { id: "call_r1", args: RECALL_ARGS },
        { id: "call_r2", args: {} },
      ]);
      const text = { ...answer, choices: [{ index: 0, message: { role: "assistant", content: "Done." } }] };
      expect(recall.calls(frozen(text))).to.deep.equal([]);
    });

    it("continueWith(): the request, the model's turn with only its terse_recall calls, one tool message per call", () => {
      const calls = recall.calls(answer);
      const results = [
        { call: calls[0] as RecallCall, text: "line 300: const answer = 42;" },
        { call: calls[1] as RecallCall, text: "terse: handle unknown or expired" },
      ];
      const body = recall.withTool(request);
      const next = recall.continueWith(frozen(body), frozen(answer), results);
      expect(next.tools).to.deep.equal(body.tools);
      expect(next.model).to.equal("gpt-4o");
      const messages = next.messages as Json[];
      expect(messages.slice(0, 2)).to.deep.equal(request.messages);
      expect(messages.slice(2)).to.deep.equal([
        {
          role: "assistant",
          content: "Let me fetch the cut lines. ",
          tool_calls: answer.choices[0]?.message.tool_calls.slice(1),
        },
        { role: "tool", tool_call_id: "call_r1", content: "line 300: const answer = 42;" },
        { role: "tool", tool_call_id: "call_r2", content: "terse: handle unknown or expired" },
      ]);
      expect(ADAPTERS.openai.pairing(next)).to.deep.equal([]);
    });

    it("withoutRecall(): the client's calls stay; with none left, no tool_calls and finish_reason stop", () => {
      const left = recall.withoutRecall(frozen(answer));
      const choice = (left.choices as Json[])[0] as Json;
      expect((choice.message as Json).tool_calls).to.deep.equal(answer.choices[0]?.message.tool_calls.slice(0, 1));
      expect(choice.finish_reason).to.equal("tool_calls");
      const onlyRecall = structuredClone(answer);
      onlyRecall.choices[0]?.message.tool_calls.shift();
      const ended = (recall.withoutRecall(frozen(onlyRecall)).choices as Json[])[0] as Json;
      expect(ended.message).to.deep.equal({
        role: "assistant",
        content: "Let me fetch the cut lines. ",
        refusal: null,
      });
      expect(ended.finish_reason).to.equal("stop");
      const plain = frozen({ ...answer, choices: [{ index: 0, message: { role: "assistant", content: "Hi" } }] });
      expect(recall.withoutRecall(plain)).to.equal(plain);
    });

    it("merge(): earlier rounds' text, then the last answer's, under the first id, with the summed usage", () => {
      const last = {
        id: "chatcmpl-2",
        object: "chat.completion",
        created: 1_723_031_670,
        model: "gpt-4o-2024-08-06",
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: "Line 300 sets the answer to 42.", refusal: null },
            logprobs: null,
            finish_reason: "stop",
          },
        ],
        usage: {
          prompt_tokens: 180,
          completion_tokens: 12,
          total_tokens: 192,
          prompt_tokens_details: { cached_tokens: 128, audio_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 0 },
        },
      };
      const usage = { input: 280, output: 42, cacheRead: 192, cacheWrite: 0 };
      const merged = recall.merge(frozen([answer]), frozen(last), usage);
      expect(merged.id).to.equal("chatcmpl-1");
      expect(merged.created).to.equal(answer.created);
      expect(merged.choices).to.deep.equal([
        {
          index: 0,
          message: {
            role: "assistant",
            content: "Let me fetch the cut lines. Line 300 sets the answer to 42.",
            refusal: null,
          },
          logprobs: null,
          finish_reason: "stop",
        },
      ]);
      expect(merged.usage).to.deep.equal({
        prompt_tokens: 280,
        completion_tokens: 42,
        total_tokens: 322,
        prompt_tokens_details: { cached_tokens: 192, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0 },
      });
      expect(ADAPTERS.openai.usage(merged, undefined)).to.deep.equal(usage);
    });
  });

  describe("SSE", () => {
    it("(a) every recorded stream, and a client's tool call, pass through byte for byte", () => {
      const streams = recordedStreams("ChatCompletionStream.test.ts.snap");
      expect(streams.length).to.be.at.least(4);
      const clientOnly = chatStream({
        id: "c",
        created: 1,
        text: "I'll read it. ",
        calls: [clientCall],
        usage: [9, 3, 0],
      });
      for (const text of [...streams, clientOnly]) {
        const relayed = relay("openai", [text]);
        expect(relayed.sent).to.equal(text);
        expect(relayed.ends[0]?.calls).to.deep.equal([]);
      }
    });

    const round1 = chatStream({
      id: "chatcmpl-1",
      created: 1_723_031_664,
      text: "Let me fetch the cut lines. ",
      calls: [recallCall("call_r1")],
      usage: [100, 30, 64],
    });
    const round2 = chatStream({
      id: "chatcmpl-2",
      created: 1_723_031_670,
      text: "Line 300 sets the answer to 42.",
      usage: [180, 12, 128],
    });

    it("(b) text, then terse_recall, then the continuation: one stream the SDK reads as one clean answer", async () => {
      const relayed = relay("openai", [round1, round2]);
      expect(relayed.ends[0]?.calls).to.deep.equal([{ id: "call_r1", args: RECALL_ARGS }]);
      expect(relayed.sent).to.not.include(RECALL_TOOL_NAME);
      expect(relayed.sent).to.not.include("tool_calls");
      expect(relayed.sent.match(/\[DONE\]/g)).to.have.length(1);
      expect(relayed.sent.endsWith("data: [DONE]\n\n")).to.equal(true);
      expect(relayed.sent).to.include(": keep-alive\n\n");
      const chunks = datasOf(relayed.sent);
      expect(new Set(chunks.map((c) => c.id))).to.deep.equal(new Set(["chatcmpl-1"]));
      expect(new Set(chunks.map((c) => c.created))).to.deep.equal(new Set([1_723_031_664]));
      const roles = chunks.flatMap((c) => ((c.choices as Json[])[0]?.delta as Json | undefined)?.role ?? []);
      expect(roles).to.deep.equal(["assistant"]);
      const usageChunks = chunks.filter(isUsageOnlyChunk);
      expect(usageChunks).to.have.length(1);

      // The round's answer, rebuilt whole for the next request.
      const next = recallOf("openai").continueWith(request, relayed.ends[0]?.answer as Json, []);
      expect((next.messages as Json[]).at(-1)).to.deep.equal({
        role: "assistant",
        content: "Let me fetch the cut lines. ",
        tool_calls: [
          {
            id: "call_r1",
            type: "function",
            function: { name: RECALL_TOOL_NAME, arguments: JSON.stringify(RECALL_ARGS) },
          },
        ],
      });

      const { completion, deltas, toolDeltas } = await chatClient(relayed.sent);
      expect(completion.id).to.equal("chatcmpl-1");
      expect(completion.choices).to.have.length(1);
      const choice = completion.choices[0];
      expect(choice?.message.content).to.equal("Let me fetch the cut lines. Line 300 sets the answer to 42.");
      expect(choice?.message.tool_calls ?? []).to.deep.equal([]);
      expect(choice?.finish_reason).to.equal("stop");
      expect(deltas.join("")).to.equal(choice?.message.content);
      expect(toolDeltas).to.deep.equal([]);
      expect(completion.usage).to.deep.include({ prompt_tokens: 280, completion_tokens: 42, total_tokens: 322 });
      expect(completion.usage?.prompt_tokens_details?.cached_tokens).to.equal(192);
      expect(relayed.total).to.deep.equal({ input: 280, output: 42, cacheRead: 192, cacheWrite: 0 });
    });

    it("(b) relays round 1's text as it comes, before its tool call ends", () => {
      const stream = recallOf("openai").stream();
      const events = eventsOf(round1);
      const sentEach = events.map(({ raw, data }) => stream.push(raw, data));
      // The opening and each word, relayed by the push that brought it; the call, its finish, usage and [DONE] held.
      const said = events.findIndex(({ raw }) => raw.includes("tool_calls"));
      expect(said).to.equal(1 + "Let me fetch the cut lines. ".split(" ").length - 1);
      expect(sentEach.slice(0, said)).to.deep.equal(events.slice(0, said).map((e) => e.raw));
      expect(sentEach.slice(said).join("")).to.equal("");
      expect(stream.end().release).to.not.include(RECALL_TOOL_NAME);
    });

    it("(b) without include_usage asked, the UsageChunkFilter takes the summed usage chunk out and the rest still parses", async () => {
      const relayed = relay("openai", [round1, round2]);
      const filter = new UsageChunkFilter();
      const filtered = filter.push(relayed.sent) + filter.flush();
      expect(datasOf(filtered).filter(isUsageOnlyChunk)).to.deep.equal([]);
      expect(filtered).to.equal(relayed.sent.replace(/data: \{[^\n]*"choices":\[\],"usage":\{[^\n]*\n\n/, ""));
      const { completion } = await chatClient(filtered);
      expect(completion.choices[0]?.message.content).to.equal(
        "Let me fetch the cut lines. Line 300 sets the answer to 42.",
      );
    });

    it("(b) a round that opens with the recall call (no text): the client still gets the opening role", async () => {
      const first = chatStream({ id: "chatcmpl-1", created: 1, calls: [recallCall("call_r1")], usage: [50, 10, 0] });
      const last = chatStream({ id: "chatcmpl-2", created: 2, text: "42.", usage: [70, 2, 0] });
      const relayed = relay("openai", [first, last]);
      expect(relayed.sent).to.not.include(RECALL_TOOL_NAME);
      const { completion } = await chatClient(relayed.sent);
      expect(completion.choices[0]?.message).to.deep.include({ role: "assistant", content: "42." });
      expect(completion.usage).to.deep.include({ prompt_tokens: 120, completion_tokens: 12, total_tokens: 132 });
    });

    it("(c) the client's call beside terse_recall: resolved first, the client's call comes through as index 0 when the model makes it again", async () => {
      const first = chatStream({
        id: "chatcmpl-1",
        created: 1,
        text: "Two things. ",
        calls: [clientCall, recallCall("call_r1")],
        usage: [100, 30, 0],
      });
      // The model makes the dropped call again, after the recalled text.
      const again = chatStream({
        id: "chatcmpl-2",
        created: 2,
        text: "Now the file. ",
        calls: [clientCall],
        usage: [150, 20, 0],
      });
      const relayed = relay("openai", [first, again]);
      expect(relayed.ends[0]?.calls).to.deep.equal([{ id: "call_r1", args: RECALL_ARGS }]);
      const next = recallOf("openai").continueWith(request, relayed.ends[0]?.answer as Json, []);
      const turn = (next.messages as Json[]).at(-1) ?? {};
      expect((turn.tool_calls as Json[]).map((c) => c.id)).to.deep.equal(["call_r1"]);
      expect(relayed.sent).to.not.include(RECALL_TOOL_NAME);
      const indexes = datasOf(relayed.sent).flatMap(
        (c) =>
          (((c.choices as Json[])[0]?.delta as Json | undefined)?.tool_calls as Json[] | undefined)?.map(
            (t) => t.index,
          ) ?? [],
      );
      expect(new Set(indexes)).to.deep.equal(new Set([0]));
      const { completion } = await chatClient(relayed.sent);
      const choice = completion.choices[0];
      expect(choice?.message.content).to.equal("Two things. Now the file. ");
      expect(choice?.message.tool_calls).to.deep.equal([
        {
          id: "call_client",
          type: "function",
          function: { name: "read_file", arguments: JSON.stringify(CLIENT_ARGS) },
        },
      ]);
      expect(choice?.finish_reason).to.equal("tool_calls");
      expect(completion.usage).to.deep.include({ prompt_tokens: 250, completion_tokens: 50 });
    });

    it("(c) the client's call after terse_recall is renumbered to index 0", async () => {
      const first = chatStream({
        id: "chatcmpl-1",
        created: 1,
        calls: [recallCall("call_r1"), clientCall],
        usage: [100, 30, 0],
      });
      const relayed = relay("openai", [first], 0);
      const calls = datasOf(relayed.sent).flatMap(
        (c) => (((c.choices as Json[])[0]?.delta as Json | undefined)?.tool_calls as Json[] | undefined) ?? [],
      );
      expect(calls.map((t) => t.index)).to.deep.equal([0, 0, 0]);
      const { completion } = await chatClient(relayed.sent);
      expect(completion.choices[0]?.message.tool_calls?.map((c) => c.id)).to.deep.equal(["call_client"]);
      expect(completion.choices[0]?.finish_reason).to.equal("tool_calls");
    });

    it("(d) the round limit hit: the held end is released without the recall call, as an ordinary end of turn", async () => {
      const repeat = chatStream({
        id: "chatcmpl-2",
        created: 2,
        text: "Still looking. ",
        calls: [recallCall("call_r2")],
        usage: [180, 12, 0],
      });
      const relayed = relay("openai", [round1, repeat], 1);
      expect(relayed.ends.map((e) => e.calls.length)).to.deep.equal([1, 1]);
      expect(relayed.sent).to.not.include(RECALL_TOOL_NAME);
      expect(relayed.sent.match(/\[DONE\]/g)).to.have.length(1);
      const { completion } = await chatClient(relayed.sent);
      const choice = completion.choices[0];
      expect(choice?.message.content).to.equal("Let me fetch the cut lines. Still looking. ");
      expect(choice?.message.tool_calls ?? []).to.deep.equal([]);
      expect(choice?.finish_reason).to.equal("stop");
      expect(completion.usage).to.deep.include({ prompt_tokens: 280, completion_tokens: 42 });
    });

    it("(d) the limit hit with the client's call beside: it is released, renumbered, finish_reason tool_calls", async () => {
      const first = chatStream({
        id: "chatcmpl-1",
        created: 1,
        text: "Two things. ",
        calls: [recallCall("call_r1"), clientCall],
        usage: [100, 30, 0],
      });
      const relayed = relay("openai", [first], 0);
      const { completion } = await chatClient(relayed.sent);
      const choice = completion.choices[0];
      expect(choice?.message.content).to.equal("Two things. ");
      expect(choice?.message.tool_calls).to.deep.equal([
        {
          id: "call_client",
          type: "function",
          function: { name: "read_file", arguments: JSON.stringify(CLIENT_ARGS) },
        },
      ]);
      expect(choice?.finish_reason).to.equal("tool_calls");
      expect(completion.usage).to.deep.include({ prompt_tokens: 100, completion_tokens: 30 });
    });
  });
});

// --- Responses API ---------------------------------------------------------------------

type ResponsesItem =
  | { kind: "reasoning"; id: string; text: string }
  | { kind: "text"; id: string; text: string }
  | { kind: "call"; id: string; callId: string; name: string; args: Json };

/** One upstream Responses stream as the API sends it: `event:` lines, numbered events, usage in response.completed. */
function responsesStream(o: {
  id: string;
  items: ResponsesItem[];
  usage: [input: number, output: number, cached: number];
}): string {
  let sequence = 0;
  const events: string[] = [];
  const event = (type: string, fields: Json) =>
    events.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`);
  const response = (status: string, output: Json[], usage: Json | null) => ({
    id: o.id,
    object: "response",
    created_at: 1_723_031_665,
    status,
    model: "gpt-5",
    output,
    error: null,
    incomplete_details: null,
    instructions: null,
    metadata: {},
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: [],
    usage,
  });
  const itemOf = (item: ResponsesItem, done: boolean): Json => {
    const status = done ? "completed" : "in_progress";
    if (item.kind === "call") {
      const args = done ? JSON.stringify(item.args) : "";
      return { id: item.id, type: "function_call", status, call_id: item.callId, name: item.name, arguments: args };
    }
    if (item.kind === "reasoning")
      return { id: item.id, type: "reasoning", summary: done ? [{ type: "summary_text", text: item.text }] : [] };
    const content = done ? [{ type: "output_text", text: item.text, annotations: [] }] : [];
    return { id: item.id, type: "message", role: "assistant", status, content };
  };
  event("response.created", { response: response("in_progress", [], null) });
  event("response.in_progress", { response: response("in_progress", [], null) });
  const output = o.items.map((item, output_index) => {
    event("response.output_item.added", { output_index, item: itemOf(item, false) });
    const at = { item_id: item.id, output_index };
    if (item.kind === "call") {
      const json = JSON.stringify(item.args);
      for (const delta of [json.slice(0, json.length >> 1), json.slice(json.length >> 1)])
        event("response.function_call_arguments.delta", { ...at, delta });
      event("response.function_call_arguments.done", { ...at, arguments: json });
    } else if (item.kind === "reasoning") {
      const part = { type: "summary_text", text: "" };
      event("response.reasoning_summary_part.added", { ...at, summary_index: 0, part });
      event("response.reasoning_summary_text.delta", { ...at, summary_index: 0, delta: item.text });
      event("response.reasoning_summary_text.done", { ...at, summary_index: 0, text: item.text });
      event("response.reasoning_summary_part.done", { ...at, summary_index: 0, part: { ...part, text: item.text } });
    } else {
      const part = (text: string) => ({ type: "output_text", text, annotations: [] });
      event("response.content_part.added", { ...at, content_index: 0, part: part("") });
      for (const delta of wordsOf(item.text))
        event("response.output_text.delta", { ...at, content_index: 0, delta, logprobs: [] });
      event("response.output_text.done", { ...at, content_index: 0, text: item.text, logprobs: [] });
      event("response.content_part.done", { ...at, content_index: 0, part: part(item.text) });
    }
    const done = itemOf(item, true);
    event("response.output_item.done", { output_index, item: done });
    return done;
  });
  const [input, out, cached] = o.usage;
  event("response.completed", {
    response: response("completed", output, {
      input_tokens: input,
      input_tokens_details: { cached_tokens: cached },
      output_tokens: out,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: input + out,
    }),
  });
  return events.join("");
}

const recallItem = (n: number): ResponsesItem => ({
  kind: "call",
  id: `fc_r${n}`,
  callId: `call_r${n}`,
  name: RECALL_TOOL_NAME,
  args: RECALL_ARGS,
});
const clientItem: ResponsesItem = {
  kind: "call",
  id: "fc_client",
  callId: "call_client",
  name: "shell",
  args: CLIENT_ARGS,
};

/** The SDK's ResponseStream over the relayed bytes: its final response and what it emitted. */
async function responsesClient(sent: string) {
  return servedTo(sent, async (client) => {
    const stream = client.responses.stream({ model: "gpt-5", input: "What does line 300 say?" });
    const deltas: string[] = [];
    const types: string[] = [];
    stream.on("event", (e) => types.push(e.type));
    stream.on("response.output_text.delta", (e) => deltas.push(e.delta));
    const response = await stream.finalResponse();
    return { response, deltas, types };
  });
}

/** The sequence numbers and output indexes the client sees. */
function numbering(sent: string): { sequence: number[]; indexes: number[] } {
  const datas = datasOf(sent);
  return {
    sequence: datas.map((d) => d.sequence_number as number),
    indexes: datas.filter((d) => d.type === "response.output_item.added").map((d) => d.output_index as number),
  };
}

describe("recall in the OpenAI Responses API", () => {
  const recall = recallOf("openai-responses");
  const request = {
    model: "gpt-5",
    instructions: "You are a coding agent.",
    tools: [{ type: "function", name: "shell", description: "Run a command", parameters: { type: "object" } }],
    input: "What does line 300 say?",
  };

  describe("JSON", () => {
    it("declares terse_recall last, the same bytes in every request, and only once", () => {
      const withTool = recall.withTool(frozen(request));
      const tools = withTool.tools as Json[];
      expect(tools.map((t) => t.name)).to.deep.equal(["shell", RECALL_TOOL_NAME]);
      expect(tools[0]).to.deep.equal(request.tools[0]);
      expect(tools[1]).to.deep.include({ type: "function", strict: false });
      expect(tools[1]).to.have.all.keys("type", "name", "description", "parameters", "strict");
      const later = recall.withTool(frozen({ model: "gpt-5", input: [{ role: "user", content: "hi" }] }));
      expect(JSON.stringify(later.tools)).to.equal(JSON.stringify([tools[1]]));
      expect(JSON.stringify(recall.withTool(frozen(request)))).to.equal(JSON.stringify(withTool));
      expect(recall.withTool(withTool)).to.equal(withTool);
    });

    const reasoning = { id: "rs_1", type: "reasoning", summary: [], encrypted_content: "gAAAA" };
    const message = {
      id: "msg_1",
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "Let me fetch the cut lines. ", annotations: [] }],
    };
    const client = {
      id: "fc_client",
      type: "function_call",
      status: "completed",
      call_id: "call_client",
      name: "shell",
      arguments: '{"cmd":"ls"}',
    };
    const call = (n: number, args: string) => ({
      id: `fc_r${n}`,
      type: "function_call",
      status: "completed",
      call_id: `call_r${n}`,
      name: RECALL_TOOL_NAME,
      arguments: args,
    });
    const answer = {
      id: "resp_1",
      object: "response",
      created_at: 1_723_031_665,
      status: "completed",
      model: "gpt-5",
      output: [reasoning, message, client, call(1, JSON.stringify(RECALL_ARGS)), call(2, "[1]")],
      usage: {
        input_tokens: 100,
        input_tokens_details: { cached_tokens: 64 },
        output_tokens: 30,
        output_tokens_details: { reasoning_tokens: 10 },
        total_tokens: 130,
      },
    };

    it("calls(): the terse_recall function_call items among the client's, their arguments parsed", () => {
      expect(recall.calls(frozen(answer))).to.deep.equal([
        { id: "call_r1", args: RECALL_ARGS },
        { id: "call_r2", args: {} },
      ]);
      expect(recall.calls(frozen({ ...answer, output: [message, client] }))).to.deep.equal([]);
    });

    it("continueWith(): a string input made a list, then reasoning, text and the recall calls, then their outputs", () => {
      const calls = recall.calls(answer);
      const results = [
        { call: calls[0] as RecallCall, text: "line 300: const answer = 42;" },
        { call: calls[1] as RecallCall, text: "terse: handle unknown or expired" },
      ];
      const body = recall.withTool(request);
      const next = recall.continueWith(frozen(body), frozen(answer), results);
      expect(next.tools).to.deep.equal(body.tools);
      expect(next.instructions).to.equal(request.instructions);
      expect(next.input).to.deep.equal([
        { role: "user", content: "What does line 300 say?" },
        reasoning,
        message,
        answer.output[3],
        answer.output[4],
        { type: "function_call_output", call_id: "call_r1", output: "line 300: const answer = 42;" },
        { type: "function_call_output", call_id: "call_r2", output: "terse: handle unknown or expired" },
      ]);
      expect(ADAPTERS["openai-responses"].pairing(next)).to.deep.equal([]);
      const listed = recall.continueWith(frozen({ ...body, input: [{ role: "user", content: "hi" }] }), answer, []);
      expect((listed.input as Json[])[0]).to.deep.equal({ role: "user", content: "hi" });
    });

    it("withoutRecall(): only the recall calls go, the client's call stays", () => {
      const left = recall.withoutRecall(frozen(answer));
      expect((left.output as Json[]).map((i) => i.id)).to.deep.equal(["rs_1", "msg_1", "fc_client"]);
      expect(left.status).to.equal("completed");
      const plain = frozen({ ...answer, output: [message] });
      expect(recall.withoutRecall(plain)).to.equal(plain);
    });

    it("merge(): earlier rounds' reasoning and text, then the last answer, under the first id, with the summed usage", () => {
      const last = {
        id: "resp_2",
        object: "response",
        created_at: 1_723_031_670,
        status: "completed",
        model: "gpt-5",
        output: [
          {
            id: "msg_2",
            type: "message",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: "Line 300 sets the answer to 42.", annotations: [] }],
          },
        ],
        usage: {
          input_tokens: 180,
          input_tokens_details: { cached_tokens: 128 },
          output_tokens: 12,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: 192,
        },
      };
      const usage = { input: 280, output: 42, cacheRead: 192, cacheWrite: 0 };
      const merged = recall.merge(frozen([answer]), frozen(last), usage);
      expect(merged.id).to.equal("resp_1");
      expect(merged.created_at).to.equal(answer.created_at);
      expect((merged.output as Json[]).map((i) => i.id)).to.deep.equal(["rs_1", "msg_1", "msg_2"]);
      expect(merged.usage).to.deep.equal({
        input_tokens: 280,
        input_tokens_details: { cached_tokens: 192 },
        output_tokens: 42,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 322,
      });
      expect(ADAPTERS["openai-responses"].usage(merged, undefined)).to.deep.equal(usage);
    });
  });

  describe("SSE", () => {
    it("(a) every recorded stream, and a client's function call, pass through byte for byte", () => {
      const streams = recordedStreams("ResponseStream.test.ts.snap");
      expect(streams.length).to.be.at.least(2);
      const clientOnly = responsesStream({
        id: "resp_c",
        items: [{ kind: "text", id: "msg_c", text: "I'll look. " }, clientItem],
        usage: [9, 3, 0],
      });
      for (const text of [...streams, clientOnly]) {
        const relayed = relay("openai-responses", [text]);
        expect(relayed.sent).to.equal(text);
        expect(relayed.ends[0]?.calls).to.deep.equal([]);
      }
    });

    const round1 = responsesStream({
      id: "resp_1",
      items: [
        { kind: "reasoning", id: "rs_1", text: "The marker names lines 120-480." },
        { kind: "text", id: "msg_1", text: "Let me fetch the cut lines. " },
        recallItem(1),
      ],
      usage: [100, 30, 64],
    });
    const round2 = responsesStream({
      id: "resp_2",
      items: [{ kind: "text", id: "msg_2", text: "Line 300 sets the answer to 42." }],
      usage: [180, 12, 128],
    });

    it("(b) text, then terse_recall, then the continuation: one response the SDK reads whole", async () => {
      const relayed = relay("openai-responses", [round1, round2]);
      expect(relayed.ends[0]?.calls).to.deep.equal([{ id: "call_r1", args: RECALL_ARGS }]);
      expect(relayed.sent).to.not.include(RECALL_TOOL_NAME);
      expect(relayed.sent).to.not.include("function_call");
      expect(relayed.sent).to.include(": keep-alive\n\n");
      const datas = datasOf(relayed.sent);
      expect(datas.filter((d) => d.type === "response.created")).to.have.length(1);
      expect(datas.filter((d) => d.type === "response.completed")).to.have.length(1);
      const { sequence, indexes } = numbering(relayed.sent);
      expect(sequence).to.deep.equal(sequence.map((_, i) => i));
      expect(indexes).to.deep.equal([0, 1, 2]);

      const next = recall.continueWith(request, relayed.ends[0]?.answer as Json, []);
      expect((next.input as Json[]).map((i) => i.id ?? i.role)).to.deep.equal(["user", "rs_1", "msg_1", "fc_r1"]);

      const { response, deltas, types } = await responsesClient(relayed.sent);
      expect(response.id).to.equal("resp_1");
      expect(response.output.map((i) => i.id)).to.deep.equal(["rs_1", "msg_1", "msg_2"]);
      expect(response.output_text).to.equal("Let me fetch the cut lines. Line 300 sets the answer to 42.");
      expect(deltas.join("")).to.equal(response.output_text);
      expect(types.filter((t) => t.startsWith("response.function_call"))).to.deep.equal([]);
      expect(response.usage).to.deep.include({ input_tokens: 280, output_tokens: 42, total_tokens: 322 });
      expect(response.usage?.input_tokens_details.cached_tokens).to.equal(192);
      expect(relayed.total).to.deep.equal({ input: 280, output: 42, cacheRead: 192, cacheWrite: 0 });
    });

    it("(b) relays round 1's text as it comes, holding only the call's events", () => {
      const stream = recall.stream();
      const events = eventsOf(round1);
      const sentEach = events.map(({ raw, data }) => stream.push(raw, data));
      events.forEach(({ raw, data }, i) => {
        const type = (data as Json).type as string;
        const held =
          (data as Json).item_id === "fc_r1" || (data as Json).output_index === 2 || type === "response.completed";
        expect(sentEach[i], type).to.equal(held ? "" : raw);
      });
    });

    it("(c) the client's call beside terse_recall: resolved first, the client's call comes through when the model makes it again", async () => {
      const first = responsesStream({
        id: "resp_1",
        items: [{ kind: "text", id: "msg_1", text: "Two things. " }, clientItem, recallItem(1)],
        usage: [100, 30, 0],
      });
      const again = responsesStream({
        id: "resp_2",
        items: [
          { kind: "text", id: "msg_2", text: "Now the command. " },
          { ...clientItem, id: "fc_client_2" },
        ],
        usage: [150, 20, 0],
      });
      const relayed = relay("openai-responses", [first, again]);
      const next = recall.continueWith(request, relayed.ends[0]?.answer as Json, []);
      expect((next.input as Json[]).map((i) => i.id ?? i.role)).to.deep.equal(["user", "msg_1", "fc_r1"]);
      expect(relayed.sent).to.not.include(RECALL_TOOL_NAME);
      expect(relayed.sent).to.not.include('"fc_client"');
      const { sequence, indexes } = numbering(relayed.sent);
      expect(sequence).to.deep.equal(sequence.map((_, i) => i));
      expect(indexes).to.deep.equal([0, 1, 2]);
      const { response } = await responsesClient(relayed.sent);
      expect(response.output.map((i) => [i.type, i.id])).to.deep.equal([
        ["message", "msg_1"],
        ["message", "msg_2"],
        ["function_call", "fc_client_2"],
      ]);
      expect(response.output_text).to.equal("Two things. Now the command. ");
      expect(response.usage).to.deep.include({ input_tokens: 250, output_tokens: 50, total_tokens: 300 });
    });

    it("(d) the round limit hit: the held end released without the recall call, the client's call numbered on", async () => {
      const first = responsesStream({
        id: "resp_1",
        items: [{ kind: "text", id: "msg_1", text: "Two things. " }, recallItem(1), clientItem],
        usage: [100, 30, 0],
      });
      const relayed = relay("openai-responses", [first], 0);
      expect(relayed.sent).to.not.include(RECALL_TOOL_NAME);
      const { sequence, indexes } = numbering(relayed.sent);
      expect(sequence).to.deep.equal(sequence.map((_, i) => i));
      expect(indexes).to.deep.equal([0, 1]);
      const { response } = await responsesClient(relayed.sent);
      expect(response.output.map((i) => i.id)).to.deep.equal(["msg_1", "fc_client"]);
      expect(response.usage).to.deep.include({ input_tokens: 100, output_tokens: 30 });
    });

    it("(d) the limit hit after a continuation: both rounds' text, no call, usage summed", async () => {
      const repeat = responsesStream({
        id: "resp_2",
        items: [{ kind: "text", id: "msg_2", text: "Still looking. " }, recallItem(2)],
        usage: [180, 12, 128],
      });
      const relayed = relay("openai-responses", [round1, repeat], 1);
      expect(relayed.ends.map((e) => e.calls.length)).to.deep.equal([1, 1]);
      expect(relayed.sent).to.not.include(RECALL_TOOL_NAME);
      const { response } = await responsesClient(relayed.sent);
      expect(response.id).to.equal("resp_1");
      expect(response.output.map((i) => i.id)).to.deep.equal(["rs_1", "msg_1", "msg_2"]);
      expect(response.output_text).to.equal("Let me fetch the cut lines. Still looking. ");
      expect(response.usage).to.deep.include({ input_tokens: 280, output_tokens: 42, total_tokens: 322 });
    });
  });
});
