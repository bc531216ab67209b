// The OpenAI Responses API (`POST /v1/responses`), JSON and SSE, as Codex CLI reads it:
// a `message` or `function_call` output item, and usage in the final `response.completed`.
// Event shapes follow shared/corpus/wire-fixtures/openai/ResponseStream.test.ts.snap; the
// real API names each event on an `event:` line too, and ends with no [DONE].
import type { Reply } from "./reply.ts";
import { argumentPieces, sse, type Usage, wordsOf } from "./wire.ts";

const RESPONSE_ID = "resp_fake";
const ITEM_ID = { text: "msg_fake", tool_call: "fc_fake" } as const;

function outputItem(reply: Reply, status: "in_progress" | "completed"): Record<string, unknown> {
  const id = ITEM_ID[reply.kind];
  if (reply.kind === "tool_call") {
    const { id: call_id, name } = reply.call;
    const args = status === "completed" ? JSON.stringify(reply.call.arguments) : "";
    return { id, type: "function_call", status, call_id, name, arguments: args };
  }
  const content = status === "completed" ? [{ type: "output_text", text: reply.text, annotations: [] }] : [];
  return { id, type: "message", role: "assistant", status, content };
}

function responseObject(model: string, output: unknown[], usage: Usage | null, status: string) {
  return {
    id: RESPONSE_ID,
    object: "response",
    created_at: 1_700_000_000,
    status,
    model,
    output,
    error: null,
    incomplete_details: null,
    instructions: null,
    metadata: {},
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: [],
    usage: usage && {
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input + usage.output,
    },
  };
}

export function responsesJsonBody(model: string, reply: Reply, usage: Usage): unknown {
  return responseObject(model, [outputItem(reply, "completed")], usage, "completed");
}

export function responsesSseEvents(model: string, reply: Reply, usage: Usage): string[] {
  let sequence = 0;
  const event = (type: string, fields: Record<string, unknown>) =>
    sse({ type, sequence_number: sequence++, ...fields }, type);
  const item_id = ITEM_ID[reply.kind];
  const at = { item_id, output_index: 0 };
  const events = [
    event("response.created", { response: responseObject(model, [], null, "in_progress") }),
    event("response.in_progress", { response: responseObject(model, [], null, "in_progress") }),
    event("response.output_item.added", { output_index: 0, item: outputItem(reply, "in_progress") }),
  ];
  if (reply.kind === "tool_call") {
    for (const delta of argumentPieces(reply.call))
      events.push(event("response.function_call_arguments.delta", { ...at, delta }));
    const args = JSON.stringify(reply.call.arguments);
    events.push(event("response.function_call_arguments.done", { ...at, arguments: args }));
  } else {
    const part = (text: string) => ({ type: "output_text", text, annotations: [] });
    events.push(event("response.content_part.added", { ...at, content_index: 0, part: part("") }));
    for (const delta of wordsOf(reply.text)) {
      events.push(event("response.output_text.delta", { ...at, content_index: 0, delta, logprobs: [] }));
    }
    events.push(event("response.output_text.done", { ...at, content_index: 0, text: reply.text, logprobs: [] }));
    events.push(event("response.content_part.done", { ...at, content_index: 0, part: part(reply.text) }));
  }
  const done = outputItem(reply, "completed");
  events.push(event("response.output_item.done", { output_index: 0, item: done }));
  events.push(event("response.completed", { response: responseObject(model, [done], usage, "completed") }));
  return events;
}
