// What a shortened result still names. The lines cut from the middle of a long log carry
// the names an agent goes on to use: paths, qualified and compound identifiers, hashes.
// They are listed once each after the cut (the index of the omitted part), so the agent
// still sees that `src/cache/lru.ts` or `test_parse_dates` was in there and can ask for
// it; for a repetitive log the distinct names are a small fraction of its text.

/**
 * Paths, dotted names, snake_case / camelCase / PascalCase compounds, hex hashes, 3+ digit
 * numbers. Every name starts where a word does, and a path where a run of its characters
 * does: the look-arounds say so up front, so the search skips the inside of words (the
 * same names, found ~1.5x faster).
 */
const NAME =
  /(?<!\w)(?=[\w.@+-])(?:(?<![\w.@+-])(?:[\w.@+-]+\/)+[\w.@+-]+|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b|\b[A-Za-z]\w*_\w+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b|\b[0-9a-f]{7,40}\b|\b\d{3,}\b|\b[A-Za-z][a-z]{3,}\b)/g;
/** Names without the plain words: for the many small cuts inside one JSON value, where listing words costs more than it keeps. */
const SHAPED_NAME =
  /(?<!\w)(?=[\w.@+-])(?:(?<![\w.@+-])(?:[\w.@+-]+\/)+[\w.@+-]+|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b|\b[A-Za-z]\w*_\w+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b|\b[0-9a-f]{7,40}\b|\b\d{3,}\b)/g;

/**
 * Plain words are listed last, after every name: an agent also goes back to the words of
 * what it read (a setting, a log's subject, a term it then greps for), but a function
 * word says nothing. Common English words of five letters and more are left out.
 */
const PLAIN_WORD = /^[A-Za-z][a-z]+$/;
const COMMON = new Set(
  `about above after again against along already although always among another around because
  before being below between both could doing during either every first found given going great
  having however itself later least maybe might never other others their there these thing
  things think those though three through under until using which while whole would where
  should still since shall value values check false print return class string number added
  being cannot point since whose whether without within total`.split(/\s+/),
);
/** Names this short say too little to be worth their separator. */
const MIN_NAME = 4;
/**
 * The index grows with what was cut, a tenth of it: a 20 KB file or log cut to 3 KB lists
 * up to ~2 KB more of its names than the base (what the agents of the corpus went on to
 * use from such a cut was mostly there), up to a ceiling: a 1 MB log keeps ~10 KB of its
 * names, not 100 KB.
 */
const NAMES_PER_OMITTED_CHAR = 0.1;
const MAX_EXTRA_NAMES = 8_000;
/** Larger omitted parts are sampled at their ends: the index is a guide, and its cost must stay linear and small. */
const MAX_SCAN_CHARS = 64_000;

/** Kinds in the order they are listed when the budget runs short: names first, then numbers, then plain words. */
function rank(name: string): number {
  if (PLAIN_WORD.test(name)) return 4;
  if (/^\d+$/.test(name)) return 3;
  if (/^[0-9a-f]+$/.test(name)) return 2;
  return name.includes("/") || name.includes(".") ? 0 : 1;
}

/** From this length a text's lines are read once each: below it, the bookkeeping costs more than it saves. */
const DEDUPE_LINES_FROM = 32_000;

/**
 * The names of the text, in order of first appearance. In a long text a line seen
 * before is skipped: it names nothing new, and a long log repeats most of its lines (a
 * name never spans a newline, so the names are those of the whole text, found ~2x
 * faster on a log).
 */
function namesIn(text: string, into = new Set<string>(), pattern = NAME): Set<string> {
  if (text.length < DEDUPE_LINES_FROM) return addNames(text, into, pattern);
  const lines = new Set<string>();
  for (let at = 0; at <= text.length; ) {
    const nl = text.indexOf("\n", at);
    const end = nl < 0 ? text.length : nl;
    const line = text.slice(at, end);
    at = end + 1;
    if (line.length < MIN_NAME || lines.has(line)) continue;
    lines.add(line);
    addNames(line, into, pattern);
  }
  return into;
}

function addNames(text: string, into: Set<string>, pattern: RegExp): Set<string> {
  // `match` with a global pattern returns the matched strings in one call, without a match object each.
  for (const name of text.match(pattern) ?? [])
    if (name.length >= MIN_NAME && !COMMON.has(name.toLowerCase())) into.add(name);
  return into;
}

/** The names of the text, or of its first and last MAX_SCAN_CHARS / 2 when longer: the ends of a cut lie next to the kept head and tail. */
function namesNearEnds(text: string, pattern: RegExp): Set<string> {
  if (text.length <= MAX_SCAN_CHARS) return namesIn(text, new Set(), pattern);
  const half = MAX_SCAN_CHARS / 2;
  return namesIn(text.slice(-half), namesIn(text.slice(0, half), new Set(), pattern), pattern);
}

/**
 * One marker line listing the names of `omittedText` that `keptText` does not show
 * (`baseBudget` characters of them plus a share of the omitted size),
 * in order of first appearance within each kind (what comes right after the kept head
 * is most often the rest of what the command was run for), plain words after every name
 * (without `words`, names only), up to `budget` characters;
 * undefined when there is none or no budget.
 */
export function spanIndex(omittedText: string, keptText: string, baseBudget: number, words = true): string | undefined {
  if (baseBudget <= 0) return undefined;
  const budget = baseBudget + Math.min(MAX_EXTRA_NAMES, Math.floor(omittedText.length * NAMES_PER_OMITTED_CHAR));
  const pattern = words ? NAME : SHAPED_NAME;
  const kept = namesIn(keptText, new Set(), pattern);
  const candidates = [...namesNearEnds(omittedText, pattern)]
    .filter((name) => !kept.has(name))
    .map((name) => ({ name, rank: rank(name) }))
    .sort((a, b) => a.rank - b.rank)
    .map((c) => c.name);
  const listed: string[] = [];
  let used = 0;
  for (const name of candidates) {
    if (used + name.length + 2 > budget) continue;
    listed.push(name);
    used += name.length + 2;
  }
  return listed.length > 0 ? `[terse: the omitted part mentions: ${listed.join(", ")}]` : undefined;
}
