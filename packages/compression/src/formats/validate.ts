import type { WireFormat } from "@terse/wire-formats";
import { isRecord } from "./format.ts";

// Each provider's rules for tool calls and their results, as its API enforces them: what
// a compressed request must still satisfy (the benchmark and the tests run every output
// through it). Returns the broken rules, empty when the request is valid.

type Check = (body: Record<string, unknown>) => string[];

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** OpenAI: an assistant's tool_calls are answered, each id once, by the tool messages right after it. */
const openai: Check = (body) => {
  const problems: string[] = [];
  let open = new Set<string>();
  for (const [i, m] of list(body.messages).entries()) {
    if (!isRecord(m)) continue;
    if (m.role === "tool") {
      const id = String(m.tool_call_id);
      if (!open.delete(id)) problems.push(`message ${i}: tool result ${id} answers no open tool call`);
      continue;
    }
    if (open.size > 0) problems.push(`message ${i}: tool calls ${[...open].join(", ")} left unanswered`);
    open = new Set(list(m.tool_calls).map((c) => String(isRecord(c) ? c.id : "")));
  }
  return problems;
};

/** Anthropic: the user message after an assistant's tool_use blocks holds a tool_result for each id. */
const anthropic: Check = (body) => {
  const problems: string[] = [];
  const messages = list(body.messages);
  const blocks = (m: unknown, type: string, key: string) =>
    list(isRecord(m) ? m.content : undefined)
      .filter((b) => isRecord(b) && b.type === type)
      .map((b) => String((b as Record<string, unknown>)[key]));
  for (const [i, m] of messages.entries()) {
    if (!isRecord(m)) continue;
    const results = blocks(m, "tool_result", "tool_use_id");
    const calls = new Set(blocks(messages[i - 1], "tool_use", "id"));
    if (results.length > 0 && (m.role !== "user" || !results.every((id) => calls.has(id))))
      problems.push(`message ${i}: tool_result without a tool_use in the message before`);
    const uses = blocks(m, "tool_use", "id");
    const answered = new Set(blocks(messages[i + 1], "tool_result", "tool_use_id"));
    if (i + 1 < messages.length && !uses.every((id) => answered.has(id)))
      problems.push(`message ${i}: tool_use without a tool_result in the next message`);
  }
  return problems;
};

/** Gemini: a model turn's functionCall parts are answered by the next turn's functionResponse parts, by name and id (in any order). */
const gemini: Check = (body) => {
  const problems: string[] = [];
  const contents = list(body.contents);
  const names = (c: unknown, key: string) =>
    list(isRecord(c) ? c.parts : undefined)
      .filter((p) => isRecord(p) && isRecord(p[key]))
      .map((p) => {
        const part = (p as Record<string, Record<string, unknown>>)[key];
        return `${String(part?.name)}#${String(part?.id ?? "")}`;
      });
  for (const [i, c] of contents.entries()) {
    const calls = names(c, "functionCall");
    const responses = names(contents[i + 1], "functionResponse");
    if (calls.length > 0 && i + 1 < contents.length && calls.sort().join() !== responses.sort().join())
      problems.push(`content ${i}: function calls not answered one for one in the next content`);
    if (names(c, "functionResponse").length > 0 && names(contents[i - 1], "functionCall").length === 0)
      problems.push(`content ${i}: function responses without function calls before`);
  }
  return problems;
};

/** Responses API: every function_call_output answers a function_call before it, each call_id once. */
const openaiResponses: Check = (body) => {
  const problems: string[] = [];
  const open = new Set<string>();
  for (const [i, item] of list(body.input).entries()) {
    if (!isRecord(item)) continue;
    if (item.type === "function_call") open.add(String(item.call_id));
    if (item.type === "function_call_output" && !open.delete(String(item.call_id)))
      problems.push(`item ${i}: function_call_output ${String(item.call_id)} answers no open function_call`);
  }
  return problems;
};

export const pairingProblems: Readonly<Record<WireFormat, Check>> = {
  openai,
  anthropic,
  gemini,
  "openai-responses": openaiResponses,
};
