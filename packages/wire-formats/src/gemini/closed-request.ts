import { isRecord } from "../json.ts";
import { TERSE_INSTRUCTION_TAG } from "../request-view.ts";
import { systemKey } from "./request-view.ts";

// Two kinds of Gemini request take neither a system instruction nor tools, and Gemini
// refuses the request when either is there:
//   - one that names a `cachedContent`: the cache holds them (400 "CachedContent can not
//     be used with GenerateContent request setting system_instruction, tools or
//     tool_config");
//   - one to a Gemma model (400 "Developer instruction is not enabled for
//     models/gemma-3-27b-it", and "Function calling is not enabled").
// terse's own additions must then go elsewhere (its instruction, into the first user
// turn, as Google's Gemma guide puts system instructions) or not at all (its recall tool).

/** Why Gemini takes no system instruction and no tools in this request, or null. */
export function closedRequestReason(body: Record<string, unknown>, model: string | undefined): string | null {
  if (body.cachedContent !== undefined || body.cached_content !== undefined) return "cached content";
  if (model !== undefined && /^(models\/)?gemma-/i.test(model)) return "a Gemma model";
  return null;
}

/**
 * The request as Gemini takes it from `model`: a closed request's system instruction, where
 * it is terse's alone, moved to the front of the first user turn (a new one when the
 * conversation opens with the model's); any other request as it is. A caller's own system
 * instruction stays where it was sent: Gemini answers it as it would without terse.
 */
export function asGeminiTakesIt(body: Record<string, unknown>, model: string | undefined): Record<string, unknown> {
  return closedRequestReason(body, model) ? withInstructionInFirstTurn(body) : body;
}

/** A system instruction that is terse's alone, moved to the front of the first user turn. */
export function withInstructionInFirstTurn(body: Record<string, unknown>): Record<string, unknown> {
  const key = systemKey(body);
  const system = body[key];
  const parts = isRecord(system) && Array.isArray(system.parts) ? system.parts : [];
  const ours = parts.length > 0 && parts.every((p) => isRecord(p) && isTerseText(p.text));
  if (!ours) return body;
  const { [key]: _system, ...rest } = body;
  const contents = Array.isArray(body.contents) ? body.contents : [];
  const [first, ...later] = contents;
  const opensWithUser = isRecord(first) && (first.role === "user" || first.role === undefined);
  const opening =
    opensWithUser && Array.isArray(first.parts)
      ? [{ ...first, parts: [...parts, ...first.parts] }, ...later]
      : [{ role: "user", parts }, ...contents];
  return { ...rest, contents: opening };
}

const isTerseText = (text: unknown): boolean => typeof text === "string" && text.startsWith(TERSE_INSTRUCTION_TAG);
