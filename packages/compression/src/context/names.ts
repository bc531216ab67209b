// The names of a text: what an agent goes on to use from a tool result it read (paths,
// qualified and compound identifiers, hashes, numbers, the words it greps for next). A
// cut's index lists those of what went (span-index.ts), and the conversation remembers
// those it shows (dedupe.ts), so every byte of every result passes through here once:
// it is read by a hand-written scanner, not a regular expression (see addNames).

/**
 * What a name is, as a pattern (the scanner below finds exactly its matches, and the tests
 * hold it to that): a word that starts with a letter or `_`, with its joined parts
 * (`src/cache/lru.ts`, `django.db.router`, `tests/test_io.py:12`, `verify-version-bump`,
 * `FooService.handle`); a hex hash; a number. Of these, those of MIN_NAME characters and more.
 */
export const NAME_PATTERN = /[A-Za-z_]\w*(?:[./:@+-]\w+)*|\b[0-9a-f]{7,40}\b|\b\d{3,}\b/g;

/** Names this short say too little to be worth their separator. */
export const MIN_NAME = 4;

/** Common English function words of five letters and more: no name, though they match the pattern. */
const COMMON = new Set(
  `about above after again against along already although always among another around because
  before being below between both could doing during either every first found having however
  itself later least maybe might never other others their there these thing things think those
  though through under until using which while would where should still since shall cannot
  whose whether without within`.split(/\s+/),
);
/** The longest word of COMMON: a longer name is none of them. */
const LONGEST_COMMON = Math.max(...[...COMMON].map((w) => w.length));

/** Whether the name is a COMMON word in any case; most are met in lower case, which needs no lower-cased copy. */
function isCommon(name: string): boolean {
  if (name.length > LONGEST_COMMON) return false;
  return COMMON.has(name) || (/[A-Z]/.test(name) && COMMON.has(name.toLowerCase()));
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
 * name never spans a newline, so the names are those of the whole text, found faster on
 * a log). A text whose first lines seldom repeat is read whole from there.
 */
export function namesIn(text: string, into = new Set<string>()): Set<string> {
  return namesOfAll([text], into);
}

/**
 * The names of the texts (a JSON value's keys and strings), as namesIn reads their
 * lines joined, without joining them: each distinct line read once where lines repeat.
 */
export function namesOfAll(texts: readonly string[], into = new Set<string>()): Set<string> {
  let chars = 0;
  for (const text of texts) chars += text.length;
  if (chars < DEDUPE_LINES_FROM) {
    for (const text of texts) addNames(text, into);
    return into;
  }
  const lines: LinesRead = { seen: new Set(), read: 0, whole: false };
  for (const text of texts) {
    if (lines.whole) addNames(text, into);
    else readLines(text, into, lines);
  }
  return into;
}

/** The lines read so far (of MIN_NAME characters and more), and whether the rest is read whole. */
interface LinesRead {
  seen: Set<string>;
  read: number;
  whole: boolean;
}

function readLines(text: string, into: Set<string>, lines: LinesRead): void {
  for (let at = 0; at <= text.length; ) {
    if (lines.read === PROBE_LINES && lines.read - lines.seen.size < lines.read * MIN_REPEATED_SHARE) {
      lines.whole = true;
      addNames(text, into, at);
      return;
    }
    const start = at;
    const nl = text.indexOf("\n", at);
    const end = nl < 0 ? text.length : nl;
    at = end + 1;
    if (end - start < MIN_NAME) continue;
    lines.read++;
    const line = text.slice(start, end);
    if (lines.seen.has(line)) continue;
    lines.seen.add(line);
    // Read in the text, not the line: a slice of a string is read through an indirection on each character.
    addNames(text, into, start, end);
  }
}

/** Character classes, for ASCII (a name is ASCII, as `\w` is): a word character, a joiner, a hex digit. */
const WORD = 1;
const JOINER = 2;
const HEX = 4;
const CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (/\w/.test(ch)) CLASS[c] = WORD | (/[0-9a-f]/.test(ch) ? HEX : 0);
  else if ("./:@+-".includes(ch)) CLASS[c] = JOINER;
}
const classOf = (c: number): number => (c < 128 ? (CLASS[c] as number) : 0);

/**
 * Adds the names of `text` between offsets `from` and `to` (read as if that part were the
 * whole text). It finds what NAME_PATTERN matches, at 1.5x the speed of matching the
 * pattern (a 200 KB JSON result's strings: 1.5 against 2.0 ms): the pattern made a string
 * of every word, most of them too short to keep (`the`, `a`, `is`), where the scanner
 * makes one only for a name of MIN_NAME characters and more.
 */
export function addNames(text: string, into: Set<string>, from = 0, to = text.length): Set<string> {
  let at = from;
  while (at < to) {
    const c = text.charCodeAt(at);
    const cls = classOf(c);
    if ((cls & WORD) === 0) {
      at++;
    } else if (c > 57) {
      // A letter or `_`: the word and its joined parts, each joiner followed by a word character.
      let end = wordEnd(text, at + 1, to);
      while (end + 1 < to && classOf(text.charCodeAt(end)) === JOINER && classOf(text.charCodeAt(end + 1)) & WORD)
        end = wordEnd(text, end + 2, to);
      if (end - at >= MIN_NAME) add(text.slice(at, end), into);
      at = end;
    } else {
      at = numberAt(text, at, from, to, into);
    }
  }
  return into;
}

/** The end of the run of word characters from `at`, before `to`. */
function wordEnd(text: string, at: number, to: number): number {
  while (at < to && classOf(text.charCodeAt(at)) & WORD) at++;
  return at;
}

/**
 * At a digit: a hex hash (7-40 hex digits) or a number, each a whole word (`\b` on both
 * sides), added; the offset to read on from (the next character where neither is).
 */
function numberAt(text: string, at: number, from: number, to: number, into: Set<string>): number {
  if (at > from && classOf(text.charCodeAt(at - 1)) & WORD) return at + 1;
  let hexEnd = at;
  while (hexEnd < to && classOf(text.charCodeAt(hexEnd)) & HEX) hexEnd++;
  let end = at;
  if (hexEnd - at >= 7 && hexEnd - at <= 40) end = hexEnd;
  else while (end < to && text.charCodeAt(end) >= 48 && text.charCodeAt(end) <= 57) end++;
  if (end - at < MIN_NAME || (end < to && classOf(text.charCodeAt(end)) & WORD)) return at + 1;
  add(text.slice(at, end), into);
  return end;
}

function add(name: string, into: Set<string>): void {
  if (!into.has(name) && !isCommon(name)) into.add(name);
}
