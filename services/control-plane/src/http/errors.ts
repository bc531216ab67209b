import { ApiError } from "@terse/errors";
import type { Express, NextFunction, Request, Response } from "express";
import { isDatabaseUnavailable } from "../infra/db-errors.ts";

// The one error handler of the control plane: everything becomes the envelope of
// @terse/errors. 5xx are logged with the request id and never show internals.

/** body-parser's error types, by what they mean for the caller. */
const BODY_ERRORS: Record<string, (err: { body?: unknown }) => ApiError> = {
  "entity.parse.failed": (err) => new ApiError("invalid_request", { message: unparsedBodyMessage(err.body) }),
  "entity.too.large": () => new ApiError("payload_too_large"),
  "encoding.unsupported": () => new ApiError("unsupported_media_type", { message: "Unsupported content encoding" }),
  "charset.unsupported": () => new ApiError("unsupported_media_type", { message: "Unsupported charset" }),
  "request.aborted": () => new ApiError("invalid_request", { message: "Request aborted" }),
  "request.size.invalid": () =>
    new ApiError("invalid_request", { message: "Request size did not match Content-Length" }),
};

/** Strict parsing refuses JSON that is no object or array (`null`, `"name"`, `7`): say so, not "not JSON". */
function unparsedBodyMessage(body: unknown): string {
  if (typeof body !== "string") return "Request body is not valid JSON";
  try {
    JSON.parse(body);
    return "Request body must be a JSON object";
  } catch {
    return "Request body is not valid JSON";
  }
}

/**
 * A body-parser error with a client status but no type of its own: its decoder (zlib)
 * failed on a body that is not what its Content-Encoding says. Still the caller's fault.
 */
function undecodableBody(err: unknown, req: Request): ApiError | null {
  const status = (err as { status?: unknown } | null)?.status;
  if (typeof status !== "number" || status < 400 || status > 499) return null;
  const coding = req.headers["content-encoding"];
  const message = coding ? `Request body is not valid ${coding} data` : "Malformed request body";
  return new ApiError("invalid_request", { message });
}

function toApiError(err: unknown, req: Request): ApiError | null {
  if (err instanceof ApiError) return err;
  // The router could not percent-decode a path parameter (`/v1/auth/keys/%zz`): an id
  // that resolves to nothing, like any malformed id (DESIGN.md section 7).
  if (err instanceof URIError) return new ApiError("not_found");
  // Postgres gone (restart, failover): the caller may retry, and nothing was changed.
  if (isDatabaseUnavailable(err)) return new ApiError("service_unavailable", { cause: err });
  const type = (err as { type?: unknown } | null)?.type;
  if (typeof type === "string") return BODY_ERRORS[type]?.(err as { body?: unknown }) ?? null;
  return undecodableBody(err, req);
}

export function errorHandler(err: unknown, req: Request, res: Response, _next: NextFunction): void {
  const apiError = toApiError(err, req) ?? new ApiError("internal_error");
  if (apiError.status >= 500) req.log?.error({ err }, apiError.message);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.status(apiError.status).set(apiError.headers).json(apiError.toEnvelope());
}

export function notFound(_req: Request, _res: Response, next: NextFunction): void {
  next(new ApiError("route_not_found"));
}

/** What of Express's router the 405 below reads: its routes, each with its path matcher and methods. */
interface RouteLayer {
  match(path: string): unknown;
  route?: { methods: Record<string, boolean> };
}

/**
 * 405 with `Allow` for a path the API serves under other methods (`GET /v1/auth/login`),
 * as the data plane answers; 404 stays for paths it does not serve. Read off the app's own
 * routes, so the two never disagree. Install after every route, before `notFound`.
 */
export function methodNotAllowed(app: Express) {
  // Express's types leave out the matcher every layer has (router 2).
  const layers = () => app.router.stack as unknown as RouteLayer[];
  return (req: Request, _res: Response, next: NextFunction): void => {
    const allowed = new Set<string>();
    for (const layer of layers()) {
      if (!layer.route || !layer.match(req.path)) continue;
      for (const method of Object.keys(layer.route.methods)) allowed.add(method.toUpperCase());
    }
    if (allowed.has("GET")) allowed.add("HEAD");
    // No route of that path, or one of its method that found nothing to serve: a 404.
    if (allowed.size === 0 || allowed.has(req.method)) {
      next();
      return;
    }
    next(new ApiError("method_not_allowed", { headers: { Allow: [...allowed].sort().join(", ") } }));
  };
}
