import type { IncomingMessage } from "node:http";
import { ApiError } from "@terse/errors";

/**
 * Reads a JSON object body: 415 for another content type, 413 past `maxBytes` (checked
 * against Content-Length first, so an oversized upload is refused before it is read),
 * 400 for anything that is not a JSON object.
 */
export async function readJsonObject(
  req: IncomingMessage,
  maxBytes: number,
): Promise<{ body: Record<string, unknown>; bytes: number }> {
  const type = req.headers["content-type"] ?? "";
  if (!/^application\/json\b/i.test(type)) throw new ApiError("unsupported_media_type");
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > maxBytes) throw new ApiError("payload_too_large");
  const { text, size } = await readText(req, maxBytes);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError("invalid_request", { message: "Request body is not valid JSON" });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ApiError("invalid_request", { message: "Request body must be a JSON object" });
  }
  return { body: parsed as Record<string, unknown>, bytes: size };
}

/**
 * The whole body as text, by 'data' events: an async iterator over the request costs a
 * promise per chunk, and this runs on every request.
 */
function readText(req: IncomingMessage, maxBytes: number): Promise<{ text: string; size: number }> {
  return new Promise((resolve, reject) => {
    // The caller may have hung up while the key was being checked: no event will come.
    if (req.destroyed) {
      reject(new Error("request closed before its body was read"));
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
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
      resolve({ text: body.toString("utf8"), size });
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    // The caller went away before the body was complete: nothing to answer.
    const onClose = () => onError(new Error("request closed before its body was complete"));
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
