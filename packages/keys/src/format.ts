import { hash, randomBytes } from "node:crypto";
import { crc32 } from "node:zlib";

// Key format v1 (DESIGN.md section 7). Changing it is a written decision: old keys must
// keep verifying, so a new format gets a new prefix or version marker, never a new
// meaning for this one.
//
//   svc_live_ <43 chars: 32 random bytes, base62, big-endian, left-padded with 0>
//             <6 chars: CRC32 of those 43 ASCII characters, base62, left-padded>
//
// The checksum lets the proxy reject a mistyped or truncated key without a Redis
// lookup, and lets secret scanners match the shape with near-zero false positives.

export const KEY_PREFIX = "svc_live_";
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const SECRET_CHARS = 43;
const CHECKSUM_CHARS = 6;
export const RAW_KEY_LENGTH = KEY_PREFIX.length + SECRET_CHARS + CHECKSUM_CHARS; // 58
/** `svc_live_` + 8: the only part of a key shown after creation. */
export const KEY_PREFIX_LENGTH = KEY_PREFIX.length + 8;

const BASE62_BODY = /^[0-9A-Za-z]+$/;

function toBase62(value: bigint, width: number): string {
  let out = "";
  let n = value;
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(width, "0");
}

/** The checksum of a secret. Number arithmetic (a CRC32 fits): the proxy checks every request's key. */
function checksumOf(secret: string): string {
  let n = crc32(secret);
  let out = "";
  while (n > 0) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out.padStart(CHECKSUM_CHARS, "0");
}

/** A new raw key. Shown to its owner once, then only its hash is kept. */
export function generateRawKey(): string {
  const secret = toBase62(BigInt(`0x${randomBytes(32).toString("hex")}`), SECRET_CHARS);
  return `${KEY_PREFIX}${secret}${checksumOf(secret)}`;
}

/** Prefix, length, alphabet and checksum: everything that can be checked without a lookup. */
export function isWellFormedKey(raw: string): boolean {
  if (raw.length !== RAW_KEY_LENGTH || !raw.startsWith(KEY_PREFIX)) return false;
  const body = raw.slice(KEY_PREFIX.length);
  if (!BASE62_BODY.test(body)) return false;
  const secret = body.slice(0, SECRET_CHARS);
  return checksumOf(secret) === body.slice(SECRET_CHARS);
}

/** SHA-256 of the raw key, hex: what Postgres and Redis hold instead of the key. One-shot (the proxy hashes every request's key). */
export function hashKey(raw: string): string {
  return hash("sha256", raw, "hex");
}

export function keyPrefixOf(raw: string): string {
  return raw.slice(0, KEY_PREFIX_LENGTH);
}
