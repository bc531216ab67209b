// What text terse stores as a name (model names, key names) and as free text (a usage
// event's reason), decided in one place so the edge, the event schema and the store agree.
//
// A name is shown in lists, logs and the dashboard and compared for uniqueness: a NUL
// cannot be stored by Postgres at all (one such value failed a whole batch of other
// accounts' usage), a line break forges log lines, and invisible or direction-changing
// characters make two different names look the same (`main` and `main\u200B`) or one
// read backwards (`\u202E`).

/** C0, DEL and C1 controls; U+2028/2029 break lines like \n does. */
const CONTROL = /[\p{Cc}\u2028\u2029]/u;
/**
 * Format characters (zero-width ones, bidi embeddings, overrides and isolates, BOM, soft
 * hyphen) and the rest Unicode says to render as nothing: variation selectors, the
 * combining grapheme joiner, Hangul fillers, Khmer's invisible vowels.
 */
const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/u;
/** Something that shows: not a space, not a mark on nothing, not the blank braille cell. */
const VISIBLE = /[^\s\p{M}\u2800]/u;
/** A combining mark first sits on whatever is shown before the name (a quote, a bracket). */
const LEADING_MARK = /^\p{M}/u;
/** A surrogate on its own encodes no character: UTF-8 cannot carry it. */
const LONE_SURROGATE = /\p{Cs}/u;

/** Why `s` cannot be stored as a name, completing "<field> ...", or undefined when it can. */
export function nameFault(s: string): string | undefined {
  if (LONE_SURROGATE.test(s)) return "is not valid Unicode";
  if (CONTROL.test(s)) return "must not contain control characters";
  if (INVISIBLE.test(s)) return "must not contain invisible or direction-changing characters";
  if (!VISIBLE.test(s)) return "must contain a visible character";
  if (LEADING_MARK.test(s)) return "must not begin with a combining mark";
  return undefined;
}

/** Why `s` cannot be stored as free text (Postgres text), or undefined when it can. */
export function textFault(s: string): string | undefined {
  if (LONE_SURROGATE.test(s)) return "is not valid Unicode";
  if (s.includes("\u0000")) return "must not contain NUL characters";
  return undefined;
}
