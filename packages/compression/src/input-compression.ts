import { segment } from "./protected-spans.ts";

// Input compression (`auto_compress_input`): shorter prose in the user's (and system)
// text, the same request. Filler phrases go, whitespace is collapsed, a sentence said
// twice is said once. Protected spans (see protected-spans.ts) are never touched. The
// result depends on the text alone, so a message compresses the same way every turn.

/** Phrases that carry no instruction, with what replaces them. Whole words, any case. */
const FILLER: [RegExp, string][] = [
  [/\b(?:could|can|would) you (?:please |kindly )?/gi, ""],
  [/\bI (?:would like|want|need) you to\s+/gi, ""],
  [/\bI was wondering if you could\s+/gi, ""],
  [/\b(?:please|kindly)\s+/gi, ""],
  [/,?\s*please\b/gi, ""],
  [/\bit is (?:important|worth) (?:to note|noting) that\s+/gi, ""],
  [/\b(?:as a matter of fact|needless to say|for what it's worth|to be honest|at the end of the day),?\s*/gi, ""],
  [/\bin order to\b/gi, "to"],
  [/\bdue to the fact that\b/gi, "because"],
  [/\bat this point in time\b/gi, "now"],
  [/\bin the event that\b/gi, "if"],
  [/\bfor the purpose of\b/gi, "for"],
  [/\bwith regard(?:s)? to\b/gi, "about"],
  [/\b(?:basically|essentially|actually|literally),?\s+/gi, ""],
  [/\bthank you(?: (?:so|very) much)?(?: in advance)?[.!]?\s*/gi, ""],
  [/\bthanks(?: in advance)?[.!]?\s*/gi, ""],
];

function tidyWhitespace(prose: string): string {
  return prose
    .replace(/[ \t]+/g, " ")
    .replace(/ +\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n");
}

function compressProse(prose: string): string {
  let out = prose;
  for (const [pattern, replacement] of FILLER) out = out.replace(pattern, replacement);
  return tidyWhitespace(out);
}

/** Drops a prose sentence that already appeared earlier in the same text. */
function dropRepeatedSentences(prose: string, seen: Set<string>): string {
  return prose.replace(/[^.!?\n]+[.!?]+(?:\s+|$)/g, (sentence) => {
    const key = sentence.trim().toLowerCase().replace(/\s+/g, " ");
    if (key.length < 20) return sentence;
    if (seen.has(key)) return "";
    seen.add(key);
    return sentence;
  });
}

/** Shorter prose, protected spans byte-identical. Capitalises a sentence start left lower-case by a removed phrase. */
export function compressInputText(text: string): string {
  const seen = new Set<string>();
  const segments = segment(text);
  const out = segments.map((s, i) => {
    if (s.protected) return s.text;
    let prose = dropRepeatedSentences(compressProse(s.text), seen);
    const atStart = i === 0 || /[.!?]\s*$/.test(segments[i - 1]?.text ?? "");
    if (atStart) prose = prose.replace(/^(\s*)([a-z])/, (_m, space: string, c: string) => space + c.toUpperCase());
    return prose;
  });
  return out.join("");
}
