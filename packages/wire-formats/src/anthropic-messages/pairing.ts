import { isRecord } from "../json.ts";
import type { PairingCheck } from "../request-view.ts";

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Anthropic: the user message after an assistant's tool_use blocks holds a tool_result for each id. */
export const messagesPairing: PairingCheck = (body) => {
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
