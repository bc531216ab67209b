import { isRecord } from "../json.ts";
import type { PairingCheck } from "../request-view.ts";

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** OpenAI: an assistant's tool_calls are answered, each id once, by the tool messages right after it. */
export const chatPairing: PairingCheck = (body) => {
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
