import { createServer, type Server } from "node:http";
import { type HttpReceiveLimits, httpServerOptions } from "@terse/config";
import { answerClientError } from "@terse/errors";
import express, { type Express } from "express";
import { pinoHttp } from "pino-http";
import { type AppContext, type AppDeps, buildServices } from "./context.ts";
import { errorHandler, notFound } from "./http/errors.ts";
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
      // Method, path and status only: headers carry tokens, and bodies passwords.
      serializers: {
        req: (req: { id: string; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      customLogLevel: (_req, res, err) =>
        err || res.statusCode >= 500 ? "error" : res.statusCode >= 400 ? "warn" : "info",
    }),
  );
  app.use(metrics.middleware);
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

  app.use(notFound);
  app.use(errorHandler);
  return app;
}

/** The HTTP server for the app: requests Node's parser refuses get the envelope too. */
/** `limits`: how long a request may take to arrive (the service's config). */
export function createHttpServer(app: Express, limits: HttpReceiveLimits): Server {
  return createServer(httpServerOptions(limits), app).on("clientError", answerClientError);
}
