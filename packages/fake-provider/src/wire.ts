// Answers in each provider's exact wire format (JSON and SSE), with usage: OpenAI chat
// completions, Anthropic messages, Gemini generateContent. (The Responses API is in
// responses-wire.ts.) Shapes follow the recorded streams in shared/corpus/wire-fixtures.
import type { Reply, ToolCall } from "./reply.ts";
import type { Provider } from "./routes.ts";

export interface Usage {
  /** Every billed input token, cache reads and writes included (as OpenAI and Gemini count). */
  input: number;
  output: number;
  /** Of input, read from the prompt cache; 0 when left out. */
  cacheRead?: number;
  /** Of input, written to the prompt cache (Anthropic only reports writes); 0 when left out. */
  cacheWrite?: number;
}

/** OpenAI chat's usage object, cache reads in prompt_tokens_details. */
const openaiUsage = (usage: Usage) => ({
  prompt_tokens: usage.input,
  completion_tokens: usage.output,
  total_tokens: usage.input + usage.output,
  prompt_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
});

/** Anthropic counts its three input parts apart: input_tokens is the uncached rest. */
const anthropicInput = (usage: Usage) => ({
  input_tokens: usage.input - (usage.cacheRead ?? 0) - (usage.cacheWrite ?? 0),
  cache_creation_input_tokens: usage.cacheWrite ?? 0,
  cache_read_input_tokens: usage.cacheRead ?? 0,
});

export const sse = (data: unknown, event?: string) =>
  `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;

export function jsonBody(provider: Provider, model: string, reply: Reply, usage: Usage): unknown {
  if (provider === "openai") {
    return {
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: 1_700_000_000,
      model,
      choices: [{ index: 0, message: openaiMessage(reply), finish_reason: openaiFinish(reply) }],
      usage: openaiUsage(usage),
    };
  }
  if (provider === "anthropic") {
    return {
      id: "msg_fake",
      type: "message",
      role: "assistant",
      model,
      content: anthropicBlocks(reply),
      stop_reason: anthropicStop(reply),
      stop_sequence: null,
      usage: { ...anthropicInput(usage), output_tokens: usage.output },
    };
  }
  return {
    candidates: [{ content: { role: "model", parts: geminiParts(reply) }, finishReason: "STOP", index: 0 }],
    usageMetadata: geminiUsage(usage, usage.output),
    modelVersion: model,
  };
}

/**
 * The SSE events of a streamed answer, one string per event: text in deltas of a word
 * each, then each tool call with its arguments in two halves (as the real APIs split
 * and order them).
 */
export function sseEvents(
  provider: Provider,
  model: string,
  reply: Reply,
  usage: Usage,
  includeUsage: boolean,
): string[] {
  if (provider === "openai") return openaiEvents(model, reply, usage, includeUsage);
  if (provider === "anthropic") return anthropicEvents(model, reply, usage);
  return geminiEvents(model, reply, usage);
}

/** Text deltas: one word (with its trailing space) each; none for "". */
export const wordsOf = (text: string): string[] => text.split(/(?<= )/).filter((word) => word !== "");

/** A tool call's arguments as JSON, in two pieces. */
export function argumentPieces(call: ToolCall): string[] {
  const json = JSON.stringify(call.arguments);
  return [json.slice(0, json.length >> 1), json.slice(json.length >> 1)];
}

/** Whether the answer has a text part: a text answer always (even ""), a call answer when text comes before its calls. */
export const hasText = (reply: Reply): boolean => reply.calls.length === 0 || reply.text !== "";

function openaiMessage(reply: Reply): Record<string, unknown> {
  const content = hasText(reply) ? reply.text : null;
  if (reply.calls.length === 0) return { role: "assistant", content, refusal: null };
  const tool_calls = reply.calls.map(({ id, name, arguments: args }) => ({
    id,
    type: "function",
    function: { name, arguments: JSON.stringify(args) },
  }));
  return { role: "assistant", content, refusal: null, tool_calls };
}

const openaiFinish = (reply: Reply) => (reply.calls.length > 0 ? "tool_calls" : "stop");

function openaiEvents(model: string, reply: Reply, usage: Usage, includeUsage: boolean): string[] {
  const chunk = (delta: unknown, finish: string | null) =>
    sse({
      id: "chatcmpl-fake",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    });
  const events: string[] = [];
  if (hasText(reply)) {
    events.push(chunk({ role: "assistant", content: "" }, null));
    for (const p of wordsOf(reply.text)) events.push(chunk({ content: p }, null));
  }
  reply.calls.forEach((call, index) => {
    const start = { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } };
    // The first chunk of an answer opens the assistant's turn; a call after text is a delta of its own.
    const opening = events.length === 0 ? { role: "assistant", content: null } : {};
    events.push(chunk({ ...opening, tool_calls: [start] }, null));
    for (const p of argumentPieces(call))
      events.push(chunk({ tool_calls: [{ index, function: { arguments: p } }] }, null));
  });
  events.push(chunk({}, openaiFinish(reply)));
  if (includeUsage) {
    events.push(
      sse({
        id: "chatcmpl-fake",
        object: "chat.completion.chunk",
        created: 1_700_000_000,
        model,
        choices: [],
        usage: openaiUsage(usage),
      }),
    );
  }
  events.push("data: [DONE]\n\n");
  return events;
}

function anthropicBlocks(reply: Reply): Record<string, unknown>[] {
  const text = hasText(reply) ? [{ type: "text", text: reply.text }] : [];
  return [...text, ...reply.calls.map(({ id, name, arguments: input }) => ({ type: "tool_use", id, name, input }))];
}

const anthropicStop = (reply: Reply) => (reply.calls.length > 0 ? "tool_use" : "end_turn");

function anthropicEvents(model: string, reply: Reply, usage: Usage): string[] {
  const message = {
    id: "msg_fake",
    type: "message",
    role: "assistant",
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { ...anthropicInput(usage), output_tokens: 1 },
  };
  const events = [sse({ type: "message_start", message }, "message_start")];
  const delta = (index: number, d: unknown) =>
    sse({ type: "content_block_delta", index, delta: d }, "content_block_delta");
  anthropicBlocks(reply).forEach((block, index) => {
    const start = block.type === "text" ? { ...block, text: "" } : { ...block, input: {} };
    events.push(sse({ type: "content_block_start", index, content_block: start }, "content_block_start"));
    if (block.type === "text") {
      for (const p of wordsOf(reply.text)) events.push(delta(index, { type: "text_delta", text: p }));
    } else {
      const call = reply.calls[hasText(reply) ? index - 1 : index] as ToolCall;
      for (const p of argumentPieces(call)) events.push(delta(index, { type: "input_json_delta", partial_json: p }));
    }
    events.push(sse({ type: "content_block_stop", index }, "content_block_stop"));
  });
  const stop_reason = anthropicStop(reply);
  events.push(
    sse(
      { type: "message_delta", delta: { stop_reason, stop_sequence: null }, usage: { output_tokens: usage.output } },
      "message_delta",
    ),
  );
  events.push(sse({ type: "message_stop" }, "message_stop"));
  return events;
}

const geminiCall = (call: ToolCall) => ({ functionCall: { name: call.name, args: call.arguments } });

function geminiParts(reply: Reply): Record<string, unknown>[] {
  return [...(hasText(reply) ? [{ text: reply.text }] : []), ...reply.calls.map(geminiCall)];
}

const geminiUsage = (usage: Usage, output: number) => ({
  promptTokenCount: usage.input,
  candidatesTokenCount: output,
  totalTokenCount: usage.input + output,
  ...(usage.cacheRead ? { cachedContentTokenCount: usage.cacheRead } : {}),
});

/**
 * A chunk per word of text, then one with every call (as Gemini sends parallel calls);
 * every chunk carries usageMetadata, growing; the last one (with finishReason) is the total.
 */
function geminiEvents(model: string, reply: Reply, usage: Usage): string[] {
  const words = wordsOf(reply.text);
  const texts = hasText(reply) ? (words.length > 0 ? words : [""]).map((text) => [{ text }]) : [];
  const chunks = reply.calls.length > 0 ? [...texts, reply.calls.map(geminiCall)] : texts;
  return chunks.map((parts, i) => {
    const last = i === chunks.length - 1;
    return sse({
      candidates: [{ content: { role: "model", parts }, index: 0, ...(last ? { finishReason: "STOP" } : {}) }],
      usageMetadata: geminiUsage(usage, last ? usage.output : i + 1),
      modelVersion: model,
    });
  });
}

/**
 * What the real Gemini API refuses of a generation request that terse could cause by
 * adding its instruction or its tool: a system instruction or tools beside a cached
 * content, and either of them for a Gemma model. The message, or null.
 */
export function geminiRefusal(body: Record<string, unknown>, model: string): string | null {
  const system = body.systemInstruction ?? body.system_instruction;
  const tools = body.tools ?? body.toolConfig ?? body.tool_config;
  if ((body.cachedContent ?? body.cached_content) !== undefined && (system !== undefined || tools !== undefined)) {
    return "CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config.\n\nProposed fix: move those values to CachedContent from GenerateContent request.";
  }
  if (!model.startsWith("gemma-")) return null;
  if (system !== undefined) return `Developer instruction is not enabled for models/${model}`;
  if (body.tools !== undefined) return `Function calling is not enabled for models/${model}`;
  return null;
}

/** Each provider's error envelope. OpenAI partly echoes the key it refused, as the real API does. */
export function errorBody(provider: Provider, status: number, providerKey: string | undefined): unknown {
  const key = providerKey ?? "";
  const echoed = key.length > 8 ? `${key.slice(0, 3)}${"*".repeat(8)}${key.slice(-4)}` : "";
  if (provider === "openai") {
    return {
      error: {
        message: `Incorrect API key provided: ${echoed}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        type: "invalid_request_error",
        param: null,
        code: "invalid_api_key",
      },
    };
  }
  if (provider === "anthropic") {
    return { type: "error", error: { type: "authentication_error", message: `invalid x-api-key ${key}` } };
  }
  return {
    error: {
      code: status,
      message: `API key not valid: ${key}. Please pass a valid API key.`,
      status: "INVALID_ARGUMENT",
    },
  };
}
