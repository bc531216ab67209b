import { isUtf8 } from "node:buffer";
import { ApiError } from "@terse/errors";
import express, { type NextFunction, type Request, type RequestHandler, type Response } from "express";

// Bodies are JSON (spec 4). A request with a body must say application/json (415
// otherwise); a request without one reads as `{}`. Parse errors and oversize bodies
// reach the error handler as body-parser errors (400 / 413).

/** Key-management and login bodies are a few hundred bytes; anything near this is not ours. */
export const MAX_BODY_BYTES = 16 * 1024;

const parse = express.json({
  limit: MAX_BODY_BYTES,
  strict: true,
  type: () => true,
  // Bytes that are not UTF-8 would be decoded to U+FFFD and stored that way (a key
  // named "ab\uFFFDcd"): 400 instead. body-parser hands what verify throws to the error
  // handler as it is.
  verify: (_req, _res, buf, encoding) => {
    if (encoding === "utf-8" && !isUtf8(buf)) {
      throw new ApiError("invalid_request", { message: "Request body is not valid UTF-8" });
    }
  },
});

/** A body is present when it is chunked or has a non-zero length. */
function hasBody(req: Request): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

export const jsonBody: RequestHandler = (req: Request, res: Response, next: NextFunction) => {
  if (!hasBody(req)) {
    req.body = {};
    next();
    return;
  }
  if (!req.is("application/json")) throw new ApiError("unsupported_media_type", { param: "Content-Type" });
  parse(req, res, next);
};
