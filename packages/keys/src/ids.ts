import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * Whether `value` could be one of our record ids (ASCII letters, digits, `_`) and is
 * worth a lookup. Anything else is no id: answered 404 without a query (a NUL byte,
 * which a Postgres text cannot hold, was a 500).
 */
export function couldBeRecordId(value: string): boolean {
  return /^[0-9A-Za-z_]{1,64}$/.test(value);
}

/** Random, prefixed record ids (`key_…`, `acct_…`): 22 base62 chars, about 131 bits. */
export function newId(prefix: "key" | "acct" | "evt"): string {
  const bytes = randomBytes(22);
  let out = "";
  // 256 % 62 leaves a bias of under 2% on the lowest 8 symbols; ids need uniqueness, not uniformity.
  for (const b of bytes) out += ALPHABET[b % 62];
  return `${prefix}_${out}`;
}
