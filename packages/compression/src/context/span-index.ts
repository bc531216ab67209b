// What a shortened result still names. The lines cut from the middle of a long log carry
// the names an agent goes on to use: paths, qualified and compound identifiers, hashes,
// and the words it greps for next. They are listed once each after the cut (the index of
// the omitted part), so the agent still sees that `src/cache/lru.ts` or
// `test_parse_dates` was in there and can ask for it; for a long log the distinct names
// are a small fraction of its text (a 1 MB build log names a few thousand things, 10-50 KB
// of index against the ~1 MB it stands for).

import { addNames, namesIn, namesOfAll } from "./names.ts";

/**
 * Plain words are listed last, after every name: an agent also goes back to the words of
 * what it read (a setting, a log's subject, a term it then greps for), but a function
 * word says nothing (names.ts leaves the common ones out).
 */
const PLAIN_WORD = /^[A-Za-z][a-z]+$/;
/**
 * The index grows with what was cut, a fifth of it: a 20 KB file or log cut to 3 KB lists
 * up to ~3.5 KB more of its names than the base, and a 320 KB log up to 64 KB (the most):
 * its whole vocabulary fits in most, and the cut still saves four fifths and more. At a
 * tenth, results of 10-100 KB whose later-used names lie all over them (the benchmark's
 * `generated, 10-100 KB`) kept 80% of those names at `standard` (worst tenth 70%); at a
 * fifth they keep all, for 3% more of their sessions' cost (docs/compression.md).
 */
const NAMES_PER_OMITTED_CHAR = 0.2;
const MAX_EXTRA_NAMES = 64_000;

/** The characters an index of a cut of `omittedChars` may use, on top of the level's `base`. */
export function indexBudget(base: number, omittedChars: number): number {
  if (base <= 0) return 0;
  return base + Math.min(MAX_EXTRA_NAMES, Math.floor(omittedChars * NAMES_PER_OMITTED_CHAR));
}

/** Kinds in the order they are listed when the budget runs short: paths, compounds, hashes, numbers, plain words. */
function rank(name: string): number {
  const c = name.charCodeAt(0);
  if (c >= 48 && c <= 57) return /^\d+$/.test(name) ? 3 : 2;
  if (PLAIN_WORD.test(name)) return 4;
  return name.includes("/") || name.includes(".") ? 0 : 1;
}

/**
 * One note line listing the names of `omitted` (a text, or texts read as if joined by
 * line breaks) that `keptText` does not show, up to `budget` characters (indexBudget), in
 * order of first appearance within each kind (what comes right after the kept head is most
 * often the rest of what the command was run for), plain words after every name;
 * undefined when there is none or no budget.
 */
export function spanIndex(
  omitted: string | readonly string[],
  keptText: string,
  budget: number,
  shown: ReadonlySet<string> = NO_NAMES,
): string | undefined {
  if (budget <= 0) return undefined;
  const names = typeof omitted === "string" ? namesIn(omitted) : namesOfAll(omitted);
  return listNames(names, namesIn(keptText), budget, shown);
}

/** The index of a cut of whole lines: `gone` the stretches that went, `kept` the lines shown, `base` the level's keepNames. */
export function cutIndex(
  gone: readonly string[],
  kept: readonly string[],
  base: number,
  shown: ReadonlySet<string> = NO_NAMES,
): string | undefined {
  let omittedChars = 0;
  for (const text of gone) omittedChars += text.length;
  const budget = indexBudget(base, omittedChars);
  if (budget <= 0) return undefined;
  // The stretches read as one text (a line seen in one is skipped in the next), without joining
  // them: joining a megabyte of them first cost as much as a tenth of the reading.
  const omitted = namesOfAll(gone);
  const keptNames = new Set<string>();
  for (const line of kept) addNames(line, keptNames);
  return listNames(omitted, keptNames, budget, shown);
}

/**
 * The index line: the names of `omitted` that neither `kept` nor the conversation before
 * the result (`shown`) shows, by rank, within `budget` characters.
 */
function listNames(
  omitted: Set<string>,
  kept: Set<string>,
  budget: number,
  shown: ReadonlySet<string>,
): string | undefined {
  const byRank: string[][] = [[], [], [], [], []];
  for (const name of omitted) if (!kept.has(name) && !shown.has(name)) byRank[rank(name)]?.push(name);
  const listed: string[] = [];
  let used = 0;
  for (const names of byRank) {
    for (const name of names) {
      if (used + name.length + 1 > budget) continue;
      listed.push(name);
      used += name.length + 1;
    }
  }
  // Spaces between, not commas: the tokenizer takes " name" as one token where ", name" is two (a fifth fewer tokens).
  return listed.length > 0 ? `${INDEX_NOTE}${listed.join(" ")}]` : undefined;
}

const NO_NAMES: ReadonlySet<string> = new Set();

/** How an index line starts (recall-handles.ts tells it from a cut marker by it). */
export const INDEX_NOTE = "[terse: the omitted part mentions: ";
