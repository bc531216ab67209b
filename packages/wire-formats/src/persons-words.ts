// What a person typed, inside a tool's result. Agents put it where the tool's output would
// be: a denied call's reason, the context given with an approval, the answers to the
// agent's own questions; or after the output so far of a command the person answered
// while it ran. None of it is output, and what a person typed is never cut (observation.ts
// says the same of user messages). The shapes, from each agent's own templates:
// - Cline, Roo Code and Kilo Code (their formatResponse, in the XML protocol and with
//   native tool calls alike): "The user denied this operation." and the feedback forms in
//   `<feedback>` tags, the whole result; "The user provided the following feedback:" after
//   a running command's output so far.
// - Claude Code: a rejected call ("The user doesn't want to proceed with this tool use. ..",
//   with what the user said after "the user said:"), and the answers to its AskUserQuestion
//   tool ("User has answered your questions: ..").
// - Gemini CLI: a write or an edit the person changed before approving it, after the line
//   that says it was done ("User modified the `content` to be: .." / "the `new_string`
//   content"): the text they wrote.

/** A result that is the person's words from its first character. */
const WHOLE =
  /^(?:The user (?:denied this operation\.|(?:denied this operation and provided the following feedback|approved this operation and provided the following context|provided the following feedback):\n<feedback>\n)|The user doesn't want to proceed with this tool use\.|User has answered your questions: )/;
/** The longest start WHOLE reads: it is tried on so much of the text, not on a copy of all of it. */
const WHOLE_READS = 160;
/** Where the person's feedback follows the output so far of a command still running (Cline). */
const AFTER_OUTPUT = "\n\nThe user provided the following feedback:\n<feedback>\n";
/** Where the text the person wrote in place of the model's follows the report of a write or an edit (Gemini CLI). */
const MODIFIED = " User modified the `";

/**
 * Where the person's words start in a tool's output read from `from`: `from` where all
 * of it is theirs, -1 where none is. Everything from there on is theirs (what follows
 * their feedback may be typed too).
 */
export function personsWordsFrom(text: string, from = 0): number {
  if (WHOLE.test(text.slice(from, from + WHOLE_READS))) return from;
  const feedback = text.indexOf(AFTER_OUTPUT, from);
  if (feedback >= 0) return feedback;
  // Only a write's or an edit's report is read for it: no other output is searched twice.
  return text.startsWith("Successfully ", from) ? text.indexOf(MODIFIED, from) : -1;
}
