// Binary data a tool returns as text: an image or a file in base64 (a screenshot tool's
// `{mimeType, data}`, MCP's `{type: "image", data, mimeType}`, a `data:` URL). Any cut
// or rewrite of it decodes to a broken file, so compression never shortens a text that
// holds some, and a format never takes such a string for a result's text.

/**
 * A run of the base64 alphabet (standard or URL-safe) this long, unbroken by whitespace
 * or punctuation, is encoded data: prose, code, paths and hashes break sooner (a SHA-512
 * in hex is 128 characters; base64 of 192 bytes is 256).
 */
const MIN_RUN = 256;
/** Characters read to find a run: every one such a run holds at least two of. */
const PROBE_STEP = MIN_RUN / 2;
const ALPHABET = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-") ALPHABET[c.charCodeAt(0)] = 1;
const inAlphabet = (code: number) => code < 128 && ALPHABET[code] === 1;

/** A `data:` URL's payload, of any length. */
const DATA_URL = /\bdata:[\w.+-]+\/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,[A-Za-z0-9+/]/;
/** A whole string in base64 (padding and all). */
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;
/** The keys an object gives its data's type by, beside the data (Gemini, MCP, Anthropic). */
const MIME_KEYS = ["mimeType", "mime_type", "mediaType", "media_type"];
/** The same keys as a JSON text writes them, followed by a string: `"mimeType": "image/png"`. */
const MIME_MEMBER = /"(?:mimeType|mime_type|mediaType|media_type)"\s*:\s*"[\w.+-]+\/[\w.+-]+"/;
/** A member whose value is base64 (at least 8 characters: `"data": "done"` is not data). */
const BASE64_MEMBER = /"(?:data|blob|bytes|base64)"\s*:\s*"[A-Za-z0-9+/_-]{8,}={0,2}"/;

/**
 * Whether `text` holds encoded binary data: a long base64 run, a base64 `data:` URL, or
 * in JSON a base64 member beside a mime type (an image too small for a long run). Read
 * on every long result, so cheap: the substring searches go first.
 */
export function holdsEncodedData(text: string): boolean {
  return (
    holdsBase64Run(text) ||
    (text.includes(";base64,") && DATA_URL.test(text)) ||
    // Each mime key ends `ype"`.
    (text.includes('ype"') && MIME_MEMBER.test(text) && BASE64_MEMBER.test(text))
  );
}

/**
 * Whether `text` has a run of MIN_RUN characters of the base64 alphabet with a letter or
 * digit in it (a rule of dashes is no data). Only every PROBE_STEP-th character is read
 * until one is in the alphabet; its run is then measured, as far as MIN_RUN each way (the
 * payload of a megabyte image is not read through), and probing goes on past it: each
 * character is read a few times at most, and prose's short words are mostly skipped.
 */
function holdsBase64Run(text: string): boolean {
  for (let probe = PROBE_STEP - 1; probe < text.length; probe += PROBE_STEP) {
    if (!inAlphabet(text.charCodeAt(probe))) continue;
    let start = probe;
    while (start > 0 && probe - start < MIN_RUN && inAlphabet(text.charCodeAt(start - 1))) start--;
    let end = probe + 1;
    while (end < text.length && end - start < MIN_RUN && inAlphabet(text.charCodeAt(end))) end++;
    if (end - start >= MIN_RUN && /[A-Za-z0-9]/.test(text.slice(start, end))) return true;
    while (probe + PROBE_STEP < end) probe += PROBE_STEP;
  }
  return false;
}

/** Whether `value`, a string member of `owner`, is encoded data: itself, or base64 beside a mime type. */
export function isEncodedMember(value: string, owner: unknown): boolean {
  if (holdsEncodedData(value)) return true;
  const besideMimeType =
    typeof owner === "object" &&
    owner !== null &&
    MIME_KEYS.some((k) => typeof (owner as Record<string, unknown>)[k] === "string");
  return besideMimeType && BASE64.test(value);
}
