import { createServer, type Server } from "node:http";
import { type HttpReceiveLimits, httpServerOptions } from "@terse/config";
import { answerClientError } from "@terse/errors";
import express, { type Express } from "express";
import { pinoHttp } from "pino-http";
import { type AppContext, type AppDeps, buildServices } from "./context.ts";
import { errorHandler, methodNotAllowed, notFound } from "./http/errors.ts";
import { createHttpMetrics } from "./http/metrics.ts";
import { requestId } from "./http/request-id.ts";
import { requireAccount } from "./routes/auth_middleware.ts";
import * as dashboard from "./routes/dashboard.ts";
import * as health from "./routes/health.ts";
import * as login from "./routes/v1_auth_login.ts";
import * as keysCreate from "./routes/v1_keys_create.ts";
import * as keysList from "./routes/v1_keys_list.ts";
import * as keysRevoke from "./routes/v1_keys_revoke.ts";
import * as keysRotate from "./routes/v1_keys_rotate.ts";
import * as keysUpdate from "./routes/v1_keys_update.ts";
import * as usage from "./routes/v1_usage.ts";

/**
 * The control plane's express app, built the same way by main.ts and the tests.
 * Order: request id -> request log -> metrics -> routes -> 404 -> the one error handler.
 */
export function createApp(deps: AppDeps): Express {
  const clock = deps.clock ?? (() => new Date());
  const services = buildServices({ ...deps, clock });
  const ctx: AppContext = {
    ...deps,
    clock,
    lifecycle: deps.lifecycle ?? { shuttingDown: false },
    services,
    requireAccount: requireAccount(services),
  };
  const metrics = createHttpMetrics({ defaultMetrics: deps.config.NODE_ENV !== "test" });

  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", deps.config.CONTROL_PLANE_TRUST_PROXY);
  app.use(requestId);
  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (req) => req.id,
      // Method, path and status only: headers carry tokens, bodies passwords, and a query
      // whatever a caller put there (a token sent as ?access_token= is refused, not logged).
      serializers: {
        req: (req: { id: string; method: string; url: string }) => ({
          id: req.id,
          method: req.method,
          url: loggableUrl(req.url),
        }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      customLogLevel: (_req, res, err) =>
        err || res.statusCode >= 500 ? "error" : res.statusCode >= 400 ? "warn" : "info",
    }),
  );
  app.use(metrics.middleware);
  // Every API answer is one account's own (raw keys once, tokens, usage): no browser or
  // proxy cache may keep it.
  app.use("/v1", (_req, res, next) => {
    res.setHeader("Cache-Control", "no-store");
    next();
  });
  app.use((_req, res, next) => {
    // While draining, clients are told not to reuse the connection.
    if (ctx.lifecycle.shuttingDown) res.setHeader("Connection", "close");
    next();
  });

  health.register(app, ctx, metrics);
  login.register(app, ctx);
  keysCreate.register(app, ctx);
  keysList.register(app, ctx);
  keysUpdate.register(app, ctx);
  keysRotate.register(app, ctx);
  keysRevoke.register(app, ctx);
  usage.register(app, ctx);
  dashboard.register(app, ctx); // /dashboard/keys

  app.use(methodNotAllowed(app));
  app.use(notFound);
  app.use(errorHandler);
  return app;
}

/** The HTTP server for the app: requests Node's parser refuses get the envelope too. */
/** `limits`: how long a request may take to arrive (the service's config). */
export function createHttpServer(app: Express, limits: HttpReceiveLimits): Server {
  return createServer(httpServerOptions(limits), app).on("clientError", answerClientError);
}

/** Query parameters whose values the API defines and a log may show (GET /v1/usage's). */
const LOGGED_PARAMETERS = new Set(usage.USAGE_PARAMETERS);

/** The URL with every query value the API does not define replaced. */
export function loggableUrl(url: string): string {
  const at = url.indexOf("?");
  if (at < 0) return url;
  const shown = new URLSearchParams();
  for (const [name, value] of new URLSearchParams(url.slice(at + 1))) {
    shown.append(name, LOGGED_PARAMETERS.has(name) ? value : "[REDACTED]");
  }
  return `${url.slice(0, at)}?${shown.toString()}`;
}
