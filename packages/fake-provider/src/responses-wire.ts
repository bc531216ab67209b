// The OpenAI Responses API (`POST /v1/responses`), JSON and SSE, as Codex CLI reads it:
// output items (a `message` for text, then a `function_call` per call), and usage in the
// final `response.completed`. Event shapes follow
// shared/corpus/wire-fixtures/openai/ResponseStream.test.ts.snap; the real API names
// each event on an `event:` line too, and ends with no [DONE].
import type { Reply, ToolCall } from "./reply.ts";
import { argumentPieces, hasText, sse, type Usage, wordsOf } from "./wire.ts";

const RESPONSE_ID = "resp_fake";

type Item = { kind: "text"; id: string; text: string } | { kind: "call"; id: string; call: ToolCall };

/**
 * The answer's output items with their ids. `answer` numbers the fake's answers: no two
 * items share an id, as none of the real API's do (a client merging two answers' items,
 * as terse's recall does, would otherwise see duplicates the SDK refuses).
 */
function itemsOf(reply: Reply, answer: number): Item[] {
  const text: Item[] = hasText(reply) ? [{ kind: "text", id: `msg_fake_${answer}`, text: reply.text }] : [];
  const calls = reply.calls.map((call, i): Item => ({ kind: "call", id: `fc_fake_${answer}_${i + 1}`, call }));
  return [...text, ...calls];
}

function outputItem(item: Item, status: "in_progress" | "completed"): Record<string, unknown> {
  if (item.kind === "call") {
    const { id: call_id, name } = item.call;
    const args = status === "completed" ? JSON.stringify(item.call.arguments) : "";
    return { id: item.id, type: "function_call", status, call_id, name, arguments: args };
  }
  const content = status === "completed" ? [{ type: "output_text", text: item.text, annotations: [] }] : [];
  return { id: item.id, type: "message", role: "assistant", status, content };
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

export function responsesJsonBody(model: string, reply: Reply, usage: Usage, answer = 1): unknown {
  const output = itemsOf(reply, answer).map((item) => outputItem(item, "completed"));
  return responseObject(model, output, usage, "completed");
}

export function responsesSseEvents(model: string, reply: Reply, usage: Usage, answer = 1): string[] {
  let sequence = 0;
  const event = (type: string, fields: Record<string, unknown>) =>
    sse({ type, sequence_number: sequence++, ...fields }, type);
  const events = [
    event("response.created", { response: responseObject(model, [], null, "in_progress") }),
    event("response.in_progress", { response: responseObject(model, [], null, "in_progress") }),
  ];
  const done = itemsOf(reply, answer).map((item, output_index) => {
    events.push(event("response.output_item.added", { output_index, item: outputItem(item, "in_progress") }));
    const at = { item_id: item.id, output_index };
    if (item.kind === "call") {
      for (const delta of argumentPieces(item.call))
        events.push(event("response.function_call_arguments.delta", { ...at, delta }));
      const args = JSON.stringify(item.call.arguments);
      events.push(event("response.function_call_arguments.done", { ...at, arguments: args }));
    } else {
      const part = (text: string) => ({ type: "output_text", text, annotations: [] });
      events.push(event("response.content_part.added", { ...at, content_index: 0, part: part("") }));
      for (const delta of wordsOf(item.text)) {
        events.push(event("response.output_text.delta", { ...at, content_index: 0, delta, logprobs: [] }));
      }
      events.push(event("response.output_text.done", { ...at, content_index: 0, text: item.text, logprobs: [] }));
      events.push(event("response.content_part.done", { ...at, content_index: 0, part: part(item.text) }));
    }
    const completed = outputItem(item, "completed");
    events.push(event("response.output_item.done", { output_index, item: completed }));
    return completed;
  });
  events.push(event("response.completed", { response: responseObject(model, done, usage, "completed") }));
  return events;
}
