import { segment } from "./protected-spans.ts";

// Input compression (`auto_compress_input`): shorter prose in the user's (and system)
// text, the same request. Filler phrases go, wordy phrases get their short form,
// articles go, whitespace is collapsed, a sentence said twice is said once. Protected
// spans (see protected-spans.ts) are never touched. The
// result depends on the text alone, so a message compresses the same way every turn.

/** Phrases that carry no instruction, with what replaces them. Whole words, any case. */
const FILLER: [RegExp, string][] = [
  [/\bI (?:would like|want|need) you to\s+/gi, ""],
  [/\bI was wondering if you could\s+/gi, ""],
  [/\b(?:please|kindly)\s+/gi, ""],
  [/,?\s*please\b/gi, ""],
  [/\btake a (?:moment|minute|second) to\s+/gi, ""],
  [/\bit is (?:important|worth) (?:to note|noting) that\s+/gi, ""],
  [/\b(?:as a matter of fact|needless to say|for what it's worth|to be honest|at the end of the day),?\s*/gi, ""],
  [/\bin order to\b/gi, "to"],
  [/\bdue to the fact that\b/gi, "because"],
  [/\bin spite of the fact that\b/gi, "although"],
  [/\bat this point in time\b/gi, "now"],
  [/\bin the event that\b/gi, "if"],
  [/\bfor the purpose of\b/gi, "for"],
  [/\bwith regard(?:s)? to\b/gi, "about"],
  [/\bin the form of\b/gi, "as"],
  [/\b(?:is|are) able to\b/gi, "can"],
  [/\bhas the ability to\b/gi, "can"],
  [/\bprior to\b/gi, "before"],
  [/\beach and every\b/gi, "every"],
  [/\bwhether or not\b/gi, "whether"],
  [/\bmake sure(?: that)?\b/gi, "ensure"],
  [/\ba (?:large |great )?(?:number|lot) of\b/gi, "many"],
  [/\bas well as\b/gi, "and"],
  [/\b(?:basically|essentially|actually|literally),?\s+/gi, ""],
  // After "please" and the empty adverbs went, and only before a verb of request:
  // "Would you like to take the bus?" is a question, not a request.
  [
    /\b(?:could|can|would|will) you (?:please |kindly )?(?=(?:analy[sz]e|answer|calculate|check|compare|compose|create|describe|design|draft|edit|evaluate|explain|find|fix|generate|give|help|identify|implement|improve|list|make|outline|provide|rephrase|rewrite|show|solve|suggest|summari[sz]e|tell|translate|write)\b)/gi,
    "",
  ],
  [/\bthank you(?: (?:so|very) much)?(?: in advance)?[.!]?\s*/gi, ""],
  [/\bthanks(?: in advance)?[.!]?\s*/gi, ""],
];

/**
 * Articles carry almost no meaning for a model and are ~8% of English prose tokens.
 * Dropped only before a lower-case word (so "vitamin A", "option B" stay), never before
 * a verb or operator that shows the letter is a name ("let a be", "a and b"). The
 * material a user asks to have processed (after "the following", "below", a colon
 * ending a line) is a protected span, so text to be edited keeps its every word.
 */
const ARTICLE =
  /\b(?:the|an?) (?!(?:be|is|are|was|were|and|or|of|to|in|on|at|with|has|have|can|equals|plus|minus|times|over)\b)(?=[a-z])/g;
const SENTENCE_ARTICLE =
  /(^|[.!?]\s+|\n\s*)(?:The|An?) (?!(?:be|is|are|was|were|and|or|of|to|in|on|at|with|has|have|can|equals|plus|minus|times|over)\b)([a-z])/g;

function dropArticles(prose: string): string {
  return prose
    .replace(ARTICLE, "")
    .replace(SENTENCE_ARTICLE, (_m, before: string, c: string) => before + c.toUpperCase());
}

function tidyWhitespace(prose: string): string {
  return prose
    .replace(/[ \t]+/g, " ")
    .replace(/ +\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n");
}

/** Stands where a phrase that opened a sentence went, so the next word gets its capital. */
const OPENED = "\uE000";

function compressProse(prose: string): string {
  if (prose.includes(OPENED)) return tidyWhitespace(prose);
  let out = prose;
  for (const [pattern, replacement] of FILLER) {
    out = out.replace(pattern, (match: string) => {
      if (!/^[A-Z]/.test(match)) return replacement;
      return replacement === "" ? OPENED : replacement[0]?.toUpperCase() + replacement.slice(1);
    });
  }
  out = dropArticles(out).replace(/\uE000\s*([a-z]?)/g, (_m, c: string) => c.toUpperCase());
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
