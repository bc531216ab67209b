import { isRecord } from "../json.ts";
import type { PairingCheck } from "../request-view.ts";

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Responses API: every function_call_output answers a function_call before it, each call_id once. */
export const responsesPairing: PairingCheck = (body) => {
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
