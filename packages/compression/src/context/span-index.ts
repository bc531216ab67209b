// What a shortened result still names. The lines cut from the middle of a long log carry
// the names an agent goes on to use: paths, qualified and compound identifiers, hashes.
// They are listed once each after the cut (the index of the omitted part), so the agent
// still sees that `src/cache/lru.ts` or `test_parse_dates` was in there and can ask for
// it; for a repetitive log the distinct names are a small fraction of its text.

/** Paths, dotted names, snake_case / camelCase / PascalCase compounds, hex hashes, 3+ digit numbers. */
const NAME =
  /(?:[\w.@+-]+\/)+[\w.@+-]+|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b|\b[A-Za-z]\w*_\w+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b|\b[0-9a-f]{7,40}\b|\b\d{3,}\b/g;
/** Names this short say too little to be worth their separator. */
const MIN_NAME = 4;
/**
 * The index grows with what was cut: a 1 MB log keeps ~20 KB of its names (the result
 * still shrinks by 98%), a 20 KB one a few hundred characters more than the base.
 */
const NAMES_PER_OMITTED_CHAR = 0.02;
/** Larger omitted parts are sampled: the index is a guide, and its cost must stay linear and small. */
const MAX_SCAN_CHARS = 200_000;

/** Kinds in the order they are listed when the budget runs short: names first, numbers last. */
function rank(name: string): number {
  if (/^\d+$/.test(name)) return 3;
  if (/^[0-9a-f]+$/.test(name)) return 2;
  return name.includes("/") || name.includes(".") ? 0 : 1;
}

/** The text, or its first and last MAX_SCAN_CHARS / 2 when longer: the ends of a cut are what lies next to the kept head and tail. */
function scanned(text: string): string {
  if (text.length <= MAX_SCAN_CHARS) return text;
  return `${text.slice(0, MAX_SCAN_CHARS / 2)}\n${text.slice(-MAX_SCAN_CHARS / 2)}`;
}

export function namesIn(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of scanned(text).matchAll(NAME)) {
    const name = m[0];
    if (name.length >= MIN_NAME) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

/**
 * One marker line listing the names of `omittedText` that `keptText` does not show
 * (`baseBudget` characters of them plus a share of the omitted size),
 * in order of first appearance within each kind (what comes right after the kept head
 * is most often the rest of what the command was run for), up to `budget` characters;
 * undefined when there is none or no budget.
 */
export function spanIndex(omittedText: string, keptText: string, baseBudget: number): string | undefined {
  if (baseBudget <= 0) return undefined;
  const budget = baseBudget + Math.floor(omittedText.length * NAMES_PER_OMITTED_CHAR);
  const kept = namesIn(keptText);
  const candidates = [...namesIn(omittedText)]
    .filter(([name]) => !kept.has(name))
    .sort((a, b) => rank(a[0]) - rank(b[0]));
  const listed: string[] = [];
  let used = 0;
  for (const [name] of candidates) {
    if (used + name.length + 2 > budget) continue;
    listed.push(name);
    used += name.length + 2;
  }
  return listed.length > 0 ? `[terse: the omitted part mentions: ${listed.join(", ")}]` : undefined;
}
