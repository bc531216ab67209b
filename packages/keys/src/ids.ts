import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Random, prefixed record ids (`key_…`, `acct_…`): 22 base62 chars, about 131 bits. */
export function newId(prefix: "key" | "acct" | "evt"): string {
  const bytes = randomBytes(22);
  let out = "";
  // 256 % 62 leaves a bias of under 2% on the lowest 8 symbols; ids need uniqueness, not uniformity.
  for (const b of bytes) out += ALPHABET[b % 62];
  return `${prefix}_${out}`;
}
