import { TextLru } from "./lru.ts";
import { segment } from "./protected-spans.ts";

// Input compression (`auto_compress_input`): shorter prose in the user's (and system)
// text, the same request, edited as a careful editor would: filler phrases, hedging
// frames ("could you", "your task is to") and discourse openers go, wordy phrases get
// their short form, optional words ("that" after "assume", an intensifier, articles)
// go, whitespace is collapsed, a sentence said twice is said once. Questions stay
// questions and negations stay: each rule names where it must not fire. Protected
// spans (see protected-spans.ts) are never touched. The result depends on the text
// alone, so a message compresses the same way every turn.

/** Marks a phrase that goes only where it opens a sentence. */
const OPENING = true;

/** Phrases that carry no instruction, with what replaces them. Whole words, any case. */
const FILLER: [pattern: RegExp, replacement: string, onlyOpening?: boolean][] = [
  [/\bI (?:would like|want|need) you to\s+/gi, ""],
  [/\bI was wondering if you could\s+/gi, ""],
  // "Please, fix it" is "Fix it", not ", fix it": opening a sentence, a polite word goes
  // with its comma. Elsewhere the comma may end a clause: "He spoke kindly, then left".
  [/\b(?:please|kindly),\s+/gi, "", OPENING],
  [/\b(?:please|kindly)\s+/gi, ""],
  // Started only after a character that is no space: from inside a run of spaces it would
  // scan to the run's end at every one (40 KB of spaces took seconds).
  [/(?<!\s),?\s*please\b/gi, ""],
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
  [/\btake into account\b/gi, "consider"],
  [/\b(?:take on|assume|play|embrace|adopt) the role of\b/gi, "act as"],
  // "Your task is to explain X" is "explain X"; "your task will be to" (a future) stays.
  [/\byour (?:task|job|goal|objective) is to\s+/gi, ""],
  // A discourse opener with its comma ("Now, explain it again", "So, where is it?"),
  // only where it opens a sentence: "Now you are an engineer" keeps its "now".
  // (The word is looked for first: the look back over the spaces before it, tried at every
  // one of a run of spaces, would make the run's length squared.)
  [/(?=(?:now|so|well|okay|ok),)(?<=^|[.!?]\s+|\n\s*)(?:now|so|well|okay|ok),\s+/gim, ""],
  // An intensifier says nothing an instruction needs, but "not very good" is not "not good".
  [/(?<!\bnot |n't |\bnever )\b(?:very|really) (?=[a-z])/gi, ""],
  // "that" after a verb of saying or thinking, before the clause's subject, is optional
  // English: "assume that each sister has" is "assume each sister has". Verbs only, by
  // their forms: "not that the code is wrong" and "the knowledge that" keep it.
  [
    /(?<=\b(?:(?:assum|stat|believ|prov|indicat|not|realiz|realis|argu|decid)(?:e|es|ed|ing)|(?:find|say|think|know|show|suggest|mean|expect|discover|confirm)(?:s|ed|ing)?|found|said|thought|knew|known|shown|meant|understood|understands?|verif(?:y|ies|ied)) )that (?=(?:the|a|an|this|these|those|each|every|all|some|no|any|his|her|its|their|our|my|your|he|she|it|they|we|you|I|there)\b)/gi,
    "",
  ],
  // A relative clause that only places its noun: "a satellite that is in orbit" is "a
  // satellite in orbit" (but "a number that is even" keeps its clause).
  [
    /\b(?:that|which) (?:is|are) (?=(?:in|on|at|of|for|from|with|under|over|between|near|inside|outside|within|without)\b)/gi,
    "",
  ],
  [/\bso that\b/gi, "so"],
  [/\band also\b/gi, "and"],
  // After "please" and the empty adverbs went, only at the start of a sentence or clause
  // ("How can you find it?" asks how) and only before a verb of request: "Would you like
  // to take the bus?" is a question, not a request.
  [
    /(?<![\w'’][ \t]*)\b(?:could|can|would|will) you (?:please |kindly )?(?=(?:add|analy[sz]e|answer|calculate|change|check|clarify|compare|compose|condense|continue|convert|create|critique|demonstrate|derive|describe|design|draft|edit|elaborate|estimate|evaluate|expand|explain|find|fix|format|generate|give|help|identify|illustrate|implement|improve|list|make|modify|name|organi[sz]e|outline|propose|provide|rank|rate|recommend|remove|rephrase|replace|review|revise|rewrite|show|simplify|solve|sort|suggest|summari[sz]e|teach|tell|translate|update|verify|write)\b)/gi,
    "",
  ],
  [/\bthank you(?: (?:so|very) much)?(?: in advance)?[.!]?\s*/gi, ""],
  [/\bthanks(?: in advance)?[.!]?\s*/gi, ""],
];

/**
 * Articles carry almost no meaning for a model and are ~8% of English prose tokens.
 * Dropped only before a lower-case word or a capitalised name of two letters or more
 * ("the JSON object", "a Python program"; so "vitamin A", "option B", "a C compiler"
 * stay), never before a verb or operator that shows the letter is a name ("let a be",
 * "a and b"). The material a user asks to have processed (after "the following",
 * "below", a colon ending a line) is a protected span, so text to be edited keeps its
 * every word.
 */
const ARTICLE =
  /\b(?:the|an?) (?!(?:be|is|are|was|were|and|or|of|to|in|on|at|with|has|have|can|equals|plus|minus|times|over)\b)(?=[a-z]|[A-Z][A-Za-z])/g;
/** An article opening a sentence (the word looked for before the look back over the spaces, which kept it linear). */
const SENTENCE_ARTICLE =
  /(?=(?:The|An?) )(?<=^|[.!?]\s+|\n\s*)(?:The|An?) (?!(?:be|is|are|was|were|and|or|of|to|in|on|at|with|has|have|can|equals|plus|minus|times|over)\b)([a-z]|[A-Z](?=[A-Za-z]))/g;

function dropArticles(prose: string): string {
  return prose.replace(ARTICLE, "").replace(SENTENCE_ARTICLE, (_m, c: string) => c.toUpperCase());
}

function tidyWhitespace(prose: string): string {
  return prose
    .replace(/[ \t]+/g, " ")
    .replace(/ +\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n");
}

/** Stands where a phrase that opened a sentence went, so the next word gets its capital. */
const OPENED = "\uE000";

/** Whether a sentence starts at `offset`: only spaces since the text's start, a sentence's end, a line break or a removed opener. */
function opensSentence(text: string, offset: number): boolean {
  let i = offset - 1;
  while (i >= 0 && (text[i] === " " || text[i] === "\t")) i--;
  return i < 0 || ".!?\n\uE000".includes(text[i] ?? "");
}

function compressProse(prose: string): string {
  if (prose.includes(OPENED)) return tidyWhitespace(prose);
  let out = prose;
  for (const [pattern, replacement, onlyOpening] of FILLER) {
    out = out.replace(pattern, (match: string, ...rest: unknown[]) => {
      const [offset, text] = rest.slice(-2) as [number, string];
      if (onlyOpening && !opensSentence(text, offset)) return match;
      // "I would like you to" is capitalised wherever it stands: only a sentence's opener passes its capital on.
      if (!/^[A-Z]/.test(match) || !opensSentence(text, offset)) return replacement;
      return replacement === "" ? OPENED : replacement[0]?.toUpperCase() + replacement.slice(1);
    });
  }
  // A comma right after an opener that went was the opener's ("Thanks, fix it" is "Fix it").
  out = dropArticles(out).replace(/\uE000\s*(?:,\s*)?([a-z]?)/g, (_m, c: string) => c.toUpperCase());
  return tidyWhitespace(out);
}

/**
 * A run of a line up to a sentence's end, and the end (`end`), where it has one. A run that
 * has none is matched too, and kept as it is: left to fail, it was tried again from each
 * of its characters, each try to its end (seconds for a 40 KB line with no full stop).
 */
const SENTENCE = /[^.!?\n]+(?<end>[.!?]+(?:\s+|$))?/g;

/** Drops a prose sentence that already appeared earlier in the same text. */
function dropRepeatedSentences(prose: string, seen: Set<string>): string {
  return prose.replace(SENTENCE, (sentence, end: string | undefined) => {
    if (end === undefined) return sentence;
    const key = sentence.trim().toLowerCase().replace(/\s+/g, " ");
    if (key.length < 20) return sentence;
    if (seen.has(key)) return "";
    seen.add(key);
    return sentence;
  });
}

/**
 * Results remembered by their text: an agent resends its system prompt and every earlier
 * user message each turn, and some 40 expressions over a 2 KB prompt cost about 100 µs.
 * Looked up by a key read from a few characters (TextLru): keyed by the text itself, the
 * Map hashed all of each request's new strings, ~2 µs for the proxy bench's 2 KB.
 * The result depends on the text alone, so a hit is what a new run would give. Texts
 * past MEMO_MAX_CHARS are rare and run each time (they would pin their size in memory).
 */
const MEMO_ENTRIES = 2_000;
const MEMO_MAX_CHARS = 64 * 1024;
/** Characters of the texts and results remembered in all. */
const MEMO_CHARS = 16_000_000;
const memo = new TextLru<string>(MEMO_ENTRIES, MEMO_CHARS, (result) => result.length);

/** Characters of the texts and results remembered. */
export const inputTextChars = (): number => memo.chars;

/** Forgets the remembered results: benchmarks replay each session from a cold start. */
export function forgetInputTexts(): void {
  memo.clear();
}

/** Shorter prose, protected spans byte-identical. Capitalises a sentence start left lower-case by a removed phrase. */
export function compressInputText(text: string): string {
  if (text.length > MEMO_MAX_CHARS) return compressUncached(text);
  const hit = memo.get(text);
  if (hit !== undefined) return hit;
  const out = compressUncached(text);
  memo.set(text, out);
  return out;
}

function compressUncached(text: string): string {
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
