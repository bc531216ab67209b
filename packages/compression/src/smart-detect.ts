import type { Intensity } from "./instructions.ts";
import { TextLru } from "./lru.ts";

// Smart detect: the level for one request, chosen from the latest user text,
// deterministically and in microseconds (regular expressions over at most a few KB).
// Precision work (code, diffs, stack traces, "exact" requests) leans to lite, so
// nothing the user needs verbatim is squeezed; a short conversational question leans
// to ultra; anything else keeps the key's own level.

export interface Choice {
  intensity: Intensity;
  reason: string;
}

/** Only the tail of a long message is read: the ask is usually at the end. */
const SCAN_CHARS = 4_000;
/** Below this a question counts as short and conversational. */
const SHORT_QUESTION_CHARS = 160;

const SIGNALS: [RegExp, string][] = [
  [/```/, "code block"],
  [/^(?:diff --git|@@ -\d+,?\d* \+\d+,?\d* @@|[-+]{3} [ab]\/)/m, "diff"],
  [
    /^\s*(?:Traceback \(most recent call last\)|at [\w$.<>]+ \(.*:\d+:\d+\)|Exception in thread|panic:|\w+Error: )/m,
    "stack trace or error",
  ],
  [
    /\b(?:exact(?:ly)?|verbatim|word[- ]for[- ]word|step[- ]by[- ]step|in (?:full )?detail|thorough(?:ly)?|complete (?:code|list|implementation))\b/i,
    "asks for exactness or detail",
  ],
  [/^\s*(?:def |class |function |const |let |import |#include|public |fn |func |SELECT |CREATE TABLE)/m, "code"],
];

/**
 * The signal each text showed, remembered by text: an agent's latest user text is the same
 * on every request of a turn's tool loop, and the five expressions over a 2 KB prompt
 * cost some 3 µs. null: none.
 */
const signals = new TextLru<string | null>(2_000, 4_000_000);

/** Characters of the texts whose signals are remembered. */
export const signalTextChars = (): number => signals.chars;

/** Forgets the remembered signals: benchmarks replay each session from a cold start. */
export function forgetSignals(): void {
  signals.clear();
}

function signalIn(text: string): string | null {
  let what = signals.get(text);
  if (what === undefined) {
    what = SIGNALS.find(([pattern]) => pattern.test(text))?.[1] ?? null;
    signals.set(text, what);
  }
  return what;
}

export function detectIntensity(latestUserText: string, keyIntensity: Intensity): Choice {
  const text = latestUserText.length > SCAN_CHARS ? latestUserText.slice(-SCAN_CHARS) : latestUserText;
  const what = signalIn(text);
  if (what !== null) return { intensity: "lite", reason: `smart detect: ${what}` };
  const trimmed = text.trim();
  if (
    trimmed.length > 0 &&
    trimmed.length <= SHORT_QUESTION_CHARS &&
    /\?\s*$/.test(trimmed) &&
    !trimmed.includes("\n")
  ) {
    return { intensity: "ultra", reason: "smart detect: short question" };
  }
  return { intensity: keyIntensity, reason: "smart detect: no signal, key setting" };
}
