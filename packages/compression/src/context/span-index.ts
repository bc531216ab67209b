// What a shortened result still names. The lines cut from the middle of a long log carry
// the names an agent goes on to use: paths, qualified and compound identifiers, hashes,
// and the words it greps for next. They are listed once each after the cut (the index of
// the omitted part), so the agent still sees that `src/cache/lru.ts` or
// `test_parse_dates` was in there and can ask for it; for a long log the distinct names
// are a small fraction of its text (a 1 MB build log names a few thousand things, 10-50 KB
// of index against the ~1 MB it stands for).

/**
 * A name: a word that starts with a letter or `_`, with its joined parts (`src/cache/lru.ts`,
 * `django.db.router`, `tests/test_io.py:12`, `verify-version-bump`, `FooService.handle`);
 * a hex hash; a number of 3+ digits. One plain pattern, so one pass over a megabyte of log
 * stays within a few milliseconds.
 */
const NAME = /[A-Za-z_]\w*(?:[./:@+-]\w+)*|\b[0-9a-f]{7,40}\b|\b\d{3,}\b/g;

/**
 * Plain words are listed last, after every name: an agent also goes back to the words of
 * what it read (a setting, a log's subject, a term it then greps for), but a function
 * word says nothing. Common English function words of five letters and more are left out.
 */
const PLAIN_WORD = /^[A-Za-z][a-z]+$/;
const COMMON = new Set(
  `about above after again against along already although always among another around because
  before being below between both could doing during either every first found having however
  itself later least maybe might never other others their there these thing things think those
  though through under until using which while would where should still since shall cannot
  whose whether without within`.split(/\s+/),
);
/** Names this short say too little to be worth their separator. */
const MIN_NAME = 4;
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

/** From this length a text's lines are read once each: below it, the bookkeeping costs more than it saves. */
const DEDUPE_LINES_FROM = 32_000;
/**
 * Lines read before deciding whether reading each line once pays: a listing or a file
 * repeats few of its lines, and for those the bookkeeping is all cost (the rest of the
 * text is then read whole).
 */
const PROBE_LINES = 256;
const MIN_REPEATED_SHARE = 0.25;

/**
 * The names of the text, in order of first appearance. In a long text a line seen
 * before is skipped: it names nothing new, and a long log repeats most of its lines (a
 * name never spans a newline, so the names are those of the whole text, found ~2x
 * faster on a log). A text whose first lines seldom repeat is read whole from there.
 */
export function namesIn(text: string, into = new Set<string>()): Set<string> {
  if (text.length < DEDUPE_LINES_FROM) return addNames(text, into);
  const lines = new Set<string>();
  let read = 0;
  for (let at = 0; at <= text.length; ) {
    if (read === PROBE_LINES && read - lines.size < read * MIN_REPEATED_SHARE) return addNames(text.slice(at), into);
    const nl = text.indexOf("\n", at);
    const end = nl < 0 ? text.length : nl;
    const line = text.slice(at, end);
    at = end + 1;
    if (line.length < MIN_NAME) continue;
    read++;
    if (lines.has(line)) continue;
    lines.add(line);
    addNames(line, into);
  }
  return into;
}

function addNames(text: string, into: Set<string>): Set<string> {
  // `match` with a global pattern returns the matched strings in one call, without a match object each.
  for (const name of text.match(NAME) ?? [])
    if (name.length >= MIN_NAME && !into.has(name) && !isCommon(name)) into.add(name);
  return into;
}

/** The longest word of COMMON: a longer name is none of them, and needs no lower-cased copy to tell. */
const LONGEST_COMMON = Math.max(...[...COMMON].map((w) => w.length));

function isCommon(name: string): boolean {
  return name.length <= LONGEST_COMMON && COMMON.has(name.toLowerCase());
}

/**
 * One note line listing the names of `omittedText` that `keptText` does not show, up to
 * `budget` characters (indexBudget), in order of first appearance within each kind (what
 * comes right after the kept head is most often the rest of what the command was run
 * for), plain words after every name; undefined when there is none or no budget.
 */
export function spanIndex(
  omittedText: string,
  keptText: string,
  budget: number,
  shown: ReadonlySet<string> = NO_NAMES,
): string | undefined {
  return budget > 0 ? listNames(namesIn(omittedText), namesIn(keptText), budget, shown) : undefined;
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
  // Each stretch read in place: joining a megabyte of them first cost as much as a tenth of the reading.
  const omitted = new Set<string>();
  for (const text of gone) namesIn(text, omitted);
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
