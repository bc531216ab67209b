import { isRecord } from "../json.ts";
import type { PairingCheck } from "../request-view.ts";

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Gemini: a model turn's functionCall parts are answered by the next turn's functionResponse parts, by name and id (in any order). */
export const geminiPairing: PairingCheck = (body) => {
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
