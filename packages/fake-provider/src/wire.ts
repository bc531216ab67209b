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
      content: [anthropicBlock(reply)],
      stop_reason: reply.kind === "tool_call" ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: { ...anthropicInput(usage), output_tokens: usage.output },
    };
  }
  return {
    candidates: [{ content: { role: "model", parts: [geminiPart(reply)] }, finishReason: "STOP", index: 0 }],
    usageMetadata: geminiUsage(usage, usage.output),
    modelVersion: model,
  };
}

/**
 * The SSE events of a streamed answer, one string per event: text in deltas of a word
 * each, a tool call's arguments in two halves (as the real APIs split them).
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

/** Text deltas: one word (with its trailing space) each. */
export const wordsOf = (text: string): string[] => text.split(/(?<= )/);

/** A tool call's arguments as JSON, in two pieces. */
export function argumentPieces(call: ToolCall): string[] {
  const json = JSON.stringify(call.arguments);
  return [json.slice(0, json.length >> 1), json.slice(json.length >> 1)];
}

function openaiMessage(reply: Reply): Record<string, unknown> {
  if (reply.kind === "text") return { role: "assistant", content: reply.text, refusal: null };
  const { id, name } = reply.call;
  const call = { id, type: "function", function: { name, arguments: JSON.stringify(reply.call.arguments) } };
  return { role: "assistant", content: null, refusal: null, tool_calls: [call] };
}

const openaiFinish = (reply: Reply) => (reply.kind === "tool_call" ? "tool_calls" : "stop");

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
  if (reply.kind === "text") {
    events.push(chunk({ role: "assistant", content: "" }, null));
    for (const p of wordsOf(reply.text)) events.push(chunk({ content: p }, null));
  } else {
    const { id, name } = reply.call;
    const start = { index: 0, id, type: "function", function: { name, arguments: "" } };
    events.push(chunk({ role: "assistant", content: null, tool_calls: [start] }, null));
    for (const p of argumentPieces(reply.call))
      events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: p } }] }, null));
  }
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

function anthropicBlock(reply: Reply): Record<string, unknown> {
  if (reply.kind === "text") return { type: "text", text: reply.text };
  return { type: "tool_use", id: reply.call.id, name: reply.call.name, input: reply.call.arguments };
}

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
  const delta = (d: unknown) => sse({ type: "content_block_delta", index: 0, delta: d }, "content_block_delta");
  if (reply.kind === "text") {
    events.push(
      sse({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, "content_block_start"),
    );
    for (const p of wordsOf(reply.text)) events.push(delta({ type: "text_delta", text: p }));
  } else {
    const block = { ...anthropicBlock(reply), input: {} };
    events.push(sse({ type: "content_block_start", index: 0, content_block: block }, "content_block_start"));
    for (const p of argumentPieces(reply.call)) events.push(delta({ type: "input_json_delta", partial_json: p }));
  }
  events.push(sse({ type: "content_block_stop", index: 0 }, "content_block_stop"));
  const stop_reason = reply.kind === "tool_call" ? "tool_use" : "end_turn";
  events.push(
    sse(
      { type: "message_delta", delta: { stop_reason, stop_sequence: null }, usage: { output_tokens: usage.output } },
      "message_delta",
    ),
  );
  events.push(sse({ type: "message_stop" }, "message_stop"));
  return events;
}

function geminiPart(reply: Reply): Record<string, unknown> {
  if (reply.kind === "text") return { text: reply.text };
  return { functionCall: { name: reply.call.name, args: reply.call.arguments } };
}

const geminiUsage = (usage: Usage, output: number) => ({
  promptTokenCount: usage.input,
  candidatesTokenCount: output,
  totalTokenCount: usage.input + output,
  ...(usage.cacheRead ? { cachedContentTokenCount: usage.cacheRead } : {}),
});

/** Every chunk carries usageMetadata, growing; the last one (with finishReason) is the total. */
function geminiEvents(model: string, reply: Reply, usage: Usage): string[] {
  const parts = reply.kind === "text" ? wordsOf(reply.text).map((text) => ({ text })) : [geminiPart(reply)];
  return parts.map((part, i) => {
    const last = i === parts.length - 1;
    return sse({
      candidates: [{ content: { role: "model", parts: [part] }, index: 0, ...(last ? { finishReason: "STOP" } : {}) }],
      usageMetadata: geminiUsage(usage, last ? usage.output : i + 1),
      modelVersion: model,
    });
  });
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
