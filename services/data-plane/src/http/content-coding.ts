import type { Readable, Transform } from "node:stream";
import { promisify } from "node:util";
import {
  brotliDecompress,
  createBrotliDecompress,
  createGunzip,
  createInflate,
  gunzip,
  inflate,
  type ZlibOptions,
} from "node:zlib";

// HTTP content codings (RFC 9110 8.4.1) as the data plane undoes them: a caller's request
// body, and an upstream answer a gateway compressed in spite of `accept-encoding: identity`.

type Decoder = (buf: Buffer, options: ZlibOptions) => Promise<Buffer>;

/** Each coding undone whole (off the event loop's thread) or as a stream's bytes come. */
interface Coding {
  whole: Decoder;
  stream: () => Transform;
}

const GZIP: Coding = { whole: promisify(gunzip) as Decoder, stream: createGunzip };
const CODINGS: Record<string, Coding> = {
  gzip: GZIP,
  "x-gzip": GZIP,
  deflate: { whole: promisify(inflate) as Decoder, stream: createInflate },
  br: { whole: promisify(brotliDecompress) as Decoder, stream: createBrotliDecompress },
};

/** A coding no decoder here knows. */
export class UnknownCoding extends Error {}

/**
 * Undoes the codings a Content-Encoding header lists, last first, the result at most
 * `maxBytes` (a small gzip can inflate to gigabytes: zlib's RangeError past it). Throws
 * UnknownCoding for a coding it has no decoder for, and zlib's error, with `coding` set,
 * for bytes that are not what the header says.
 */
export async function undoCodings(bytes: Buffer, header: string | undefined, maxBytes: number): Promise<Buffer> {
  const codings = codingsOf(header);
  let out = bytes;
  for (const coding of codings.reverse()) {
    const decode = CODINGS[coding]?.whole;
    if (!decode) throw new UnknownCoding(coding);
    try {
      out = await decode(out, { maxOutputLength: maxBytes });
    } catch (err) {
      if (err instanceof Error) Object.assign(err, { coding });
      throw err;
    }
  }
  return out;
}

/**
 * `body` with the codings a Content-Encoding header lists undone as it comes (last
 * first): `body` itself when it lists none, undefined (and `body` untouched) when one has
 * no decoder here. Any decoder's error (bytes that are not what the header says) is the
 * returned stream's.
 */
export function decodedStream(body: Readable, header: string | undefined): Readable | undefined {
  const codings = codingsOf(header).reverse();
  if (codings.some((c) => CODINGS[c] === undefined)) return undefined;
  let out: Readable = body;
  for (const coding of codings) {
    const next = (CODINGS[coding] as Coding).stream();
    // pipe() carries no errors: an inner decoder's goes to the last, which its reader watches.
    if (out !== body) out.once("error", (err) => next.destroy(err));
    out = out.pipe(next);
  }
  return out;
}

/** The codings a Content-Encoding header lists, in its order, without `identity`. */
function codingsOf(header: string | undefined): string[] {
  if (header === undefined) return [];
  return header
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "identity");
}
