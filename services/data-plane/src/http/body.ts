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
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new ApiError("payload_too_large");
    chunks.push(chunk as Buffer);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new ApiError("invalid_request", { message: "Request body is not valid JSON" });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ApiError("invalid_request", { message: "Request body must be a JSON object" });
  }
  return { body: parsed as Record<string, unknown>, bytes: size };
}
