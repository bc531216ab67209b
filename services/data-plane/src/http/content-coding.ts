import { promisify } from "node:util";
import { brotliDecompress, gunzip, inflate, type ZlibOptions } from "node:zlib";

// HTTP content codings (RFC 9110 8.4.1) as the data plane undoes them: a caller's request
// body, and an upstream answer a gateway compressed in spite of `accept-encoding: identity`.

type Decoder = (buf: Buffer, options: ZlibOptions) => Promise<Buffer>;

/** The codings undone, each off the event loop's thread. */
const DECODERS: Record<string, Decoder> = {
  gzip: promisify(gunzip) as Decoder,
  "x-gzip": promisify(gunzip) as Decoder,
  deflate: promisify(inflate) as Decoder,
  br: promisify(brotliDecompress) as Decoder,
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
  if (header === undefined) return bytes;
  const codings = header
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "identity");
  let out = bytes;
  for (const coding of codings.reverse()) {
    const decode = DECODERS[coding];
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
