import { isUtf8 } from "node:buffer";
import type { IncomingMessage } from "node:http";
import { ApiError } from "@terse/errors";
import { UnknownCoding, undoCodings } from "./content-coding.ts";

/**
 * Real payloads nest a few levels (tool schemas a few dozen). JSON.parse takes any depth,
 * but JSON.stringify and every walk of the body after it recurse, and past some
 * thousands of levels they overflow the stack: a 500, or a crash in an event handler.
 */
export const MAX_JSON_DEPTH = 128;

/** The caller hung up before its request body was whole: there is no one to answer. */
export class CallerGone extends Error {
  constructor() {
    super("the caller closed the connection before its request body was complete");
    this.name = "CallerGone";
  }
}

/**
 * Reads a JSON object body: 415 for another content type, 413 past `maxBytes` (checked
 * against Content-Length first, so an oversized upload is refused before it is read),
 * 400 for anything that is not a JSON object: bytes that are not UTF-8 (RFC 8259 8.1;
 * decoding would forward U+FFFD in their place), or nesting past MAX_JSON_DEPTH.
 */
export async function readJsonObject(
  req: IncomingMessage,
  maxBytes: number,
): Promise<{ body: Record<string, unknown>; bytes: number }> {
  if (!isJsonInUtf8(req.headers["content-type"] ?? "")) throw new ApiError("unsupported_media_type");
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > maxBytes) throw new ApiError("payload_too_large");
  const read = await readBytes(req, maxBytes);
  const bytes = await decodeContent(read.bytes, req.headers["content-encoding"], maxBytes);
  const size = read.size;
  if (!isUtf8(bytes)) throw new ApiError("invalid_request", { message: "Request body is not valid UTF-8" });
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw new ApiError("invalid_request", { message: "Request body is not valid JSON" });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ApiError("invalid_request", { message: "Request body must be a JSON object" });
  }
  if (nestedDeeperThan(parsed, MAX_JSON_DEPTH)) {
    throw new ApiError("invalid_request", {
      message: `Request body is nested more than ${MAX_JSON_DEPTH} levels deep`,
    });
  }
  return { body: parsed as Record<string, unknown>, bytes: size };
}

/**
 * The body as the client meant it: codings undone in the reverse of the order listed.
 * The body forwarded is a new, plain one (its Content-Encoding is never passed on), so
 * an unknown coding is 415 and a body that is not what its header says is 400. The
 * decoded size is bounded too: a small gzip can inflate to gigabytes.
 */
async function decodeContent(bytes: Buffer, header: string | undefined, maxBytes: number): Promise<Buffer> {
  try {
    return await undoCodings(bytes, header, maxBytes);
  } catch (err) {
    if (err instanceof UnknownCoding)
      throw new ApiError("unsupported_media_type", { message: "Unsupported content encoding" });
    if (err instanceof RangeError) throw new ApiError("payload_too_large");
    const coding = (err as { coding?: string }).coding;
    throw new ApiError("invalid_request", { message: `Request body is not valid ${coding} data` });
  }
}

/**
 * Whether `value` has arrays or objects more than `levels` deep (recursion bounded by
 * `levels`). Walks keys in place: every request passes here, and Object.values would
 * allocate an array per object of the body.
 */
function nestedDeeperThan(value: unknown, levels: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (levels === 0) return true;
  if (Array.isArray(value)) {
    for (const child of value) if (nestedDeeperThan(child, levels - 1)) return true;
    return false;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) if (nestedDeeperThan(record[key], levels - 1)) return true;
  return false;
}

/**
 * The whole body, by 'data' events: an async iterator over the request costs a promise
 * per chunk, and this runs on every request.
 */
function readBytes(req: IncomingMessage, maxBytes: number): Promise<{ bytes: Buffer; size: number }> {
  return new Promise((resolve, reject) => {
    // The caller may have hung up while the key was being checked: no event will come.
    if (req.destroyed) {
      reject(new CallerGone());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        req.resume(); // drain what is still coming; the answer is 413
        reject(new ApiError("payload_too_large"));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve({ bytes: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size), size });
    };
    // A reset or a close before 'end': the caller went away, nothing to answer.
    const onError = () => {
      cleanup();
      reject(new CallerGone());
    };
    const onClose = onError;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

/**
 * `application/json`, with no charset or UTF-8's (the only one JSON between systems may
 * use, RFC 8259 8.1): not `application/json-seq`, not a body in UTF-16 read as UTF-8.
 */
function isJsonInUtf8(contentType: string): boolean {
  const [type = "", ...params] = contentType.split(";");
  if (type.trim().toLowerCase() !== "application/json") return false;
  for (const param of params) {
    const [name = "", value = ""] = param.split("=");
    if (name.trim().toLowerCase() !== "charset") continue;
    const charset = value.trim().replace(/^"|"$/g, "").toLowerCase();
    if (charset !== "utf-8" && charset !== "utf8") return false;
  }
  return true;
}
