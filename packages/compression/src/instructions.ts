// Response compression: one fixed instruction per level, added to the request's system
// slot so the model answers in fewer tokens. Fixed text (never built per request) so
// that two requests at the same level share the same prompt-cache prefix.
//
// Every level keeps what must stay exact: code, commands, paths, numbers, error
// messages, identifiers and any format the user asked for. Only the prose around them
// gets shorter.

import type { Intensity } from "@terse/keys/settings";
import { TERSE_INSTRUCTION_TAG } from "@terse/wire-formats";

export type { Intensity };

const KEEP_EXACT =
  "Keep code, commands, file paths, URLs, numbers, identifiers, error messages and quoted text exactly as they are, " +
  "and follow any format the user asked for (JSON, tables, lists, length).";

export const INSTRUCTIONS: Readonly<Record<Intensity, string>> = {
  lite:
    "Answer directly, without filler: no greetings, no pleasantries, no restating the question, no closing offers of more help. " +
    `Use complete sentences. ${KEEP_EXACT}`,
  full:
    "Answer tersely. Lead with the answer. Short sentences; fragments are fine. " +
    "No filler, hedging, pleasantries or repetition; no preamble or summary. " +
    `Give detail only where it changes what the reader does. ${KEEP_EXACT}`,
  ultra:
    "Answer telegraphically: the fewest words that carry the meaning. Drop articles, filler and connectives; " +
    "fragments, arrows (->) and abbreviations everyone knows are fine. One line when one line will do. " +
    `${KEEP_EXACT}`,
};

/** The instruction for a level, opened by the tag that marks it as terse's (where a format must tell it apart). */
export function instructionFor(intensity: Intensity): string {
  return `${TERSE_INSTRUCTION_TAG} ${INSTRUCTIONS[intensity]}`;
}
