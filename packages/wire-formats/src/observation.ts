// Agents without native tool calls (mini-swe-agent, SWE-agent's text mode, Aider) send a
// command's output back as a plain user message. terse compresses such an observation as
// it compresses a tool result, and nothing else a user message holds: what a person typed
// stays as typed. So an observation is recognised by a strict shape only:
// - the whole message is `<returncode>N</returncode>`, then the output in `<output>` tags
//   (or the agent's own cut of a long one: `<warning>`, `<output_head>`, `<elided_chars>`,
//   `<output_tail>`), and nothing before or after;
// - and it answers an action: the assistant message before it holds a fenced code block.
// A person who pastes such text as the first message, or after an answer without a
// command, is left alone.

const OBSERVATION =
  /^<returncode>-?\d{1,3}<\/returncode>\n(?:<warning>\n[^<]*<\/warning>)?(<output>\n|<output_head>\n)([\s\S]*?)(\n?<\/output>|\n?<\/output_tail>)\s*$/;

/** The parts of an observation: its tags before and after, and the output between; undefined for any other text. */
export function splitObservation(text: string): { open: string; output: string; close: string } | undefined {
  if (!text.startsWith("<returncode>")) return undefined;
  const m = OBSERVATION.exec(text);
  if (!m) return undefined;
  const tag = m[1] ?? "";
  // The warning holds no `<`, so the first open tag is the output's.
  const openEnd = text.indexOf(tag) + tag.length;
  const output = m[2] ?? "";
  return { open: text.slice(0, openEnd), output, close: text.slice(openEnd + output.length) };
}

const FENCE = /```[a-z]*\n([\s\S]*?)\n?```/g;

/** The command of an agent's action: the last fenced code block of its message, or undefined. */
export function fencedCommand(text: string): string | undefined {
  let last: string | undefined;
  for (const m of text.matchAll(FENCE)) last = m[1];
  return last?.trim() || undefined;
}
