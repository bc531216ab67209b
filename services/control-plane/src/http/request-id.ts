import { randomUUID } from "node:crypto";
import type { NextFunction, Request, Response } from "express";

// DESIGN.md section 7: every control-plane response carries X-Request-Id. A caller's
// own id is reused when it looks like an id (so traces join up), never echoed raw:
// anything else could inject into logs or headers.
const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestId(req: Request, res: Response, next: NextFunction): void {
  const incoming = req.headers["x-request-id"];
  const id = typeof incoming === "string" && SANE_ID.test(incoming) ? incoming : randomUUID();
  req.id = id; // pino-http's field: its request log line carries it
  res.setHeader("X-Request-Id", id);
  next();
}
