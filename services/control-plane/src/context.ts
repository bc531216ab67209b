import type { ControlPlaneConfig } from "@terse/config";
import type { Db } from "@terse/db";
import type { Logger } from "@terse/logger";
import type { RequestHandler } from "express";
import type { Redis } from "ioredis";
import { AccountService } from "./domain/accounts.ts";
import { KeyService } from "./domain/keys.ts";
import { LoginThrottle } from "./domain/login-throttle.ts";
import { Tokens } from "./domain/tokens.ts";
import { AccountStore } from "./infra/account-store.ts";
import { KeyCache } from "./infra/key-cache.ts";
import { KeyStore } from "./infra/key-store.ts";

/** What the process provides; main.ts and the tests build it the same way. */
export interface AppDeps {
  config: ControlPlaneConfig;
  db: Db;
  redis: Redis;
  logger: Logger;
  /** Time source for record timestamps; tests may pin it. */
  clock?: () => Date;
  /** Flipped by main.ts on SIGTERM: /readyz answers 503 from then on. */
  lifecycle?: Lifecycle;
}

export interface Lifecycle {
  shuttingDown: boolean;
}

export interface Services {
  keys: KeyService;
  accounts: AccountService;
  tokens: Tokens;
  throttle: LoginThrottle;
  accountStore: AccountStore;
  keyStore: KeyStore;
  keyCache: KeyCache;
}

/**
 * Passed to every route file's `register(app, ctx)`. `requireAccount` is the JWT
 * middleware: routes that need the caller's account put it before their handler and
 * read `req.account`.
 */
export interface AppContext extends AppDeps {
  clock: () => Date;
  lifecycle: Lifecycle;
  services: Services;
  requireAccount: RequestHandler;
}

/** Wires stores into domain services, once per app. */
export function buildServices(deps: AppDeps & { clock: () => Date }): Services {
  const keyStore = new KeyStore(deps.db);
  const keyCache = new KeyCache(deps.redis, {
    leaseTtlMs: deps.config.KEY_LEASE_TTL_MS,
    onFenced: (ids) =>
      deps.logger.warn({ processes: ids }, "proxy processes fenced: a key change was not acknowledged in time"),
  });
  const keys = new KeyService({
    db: deps.db,
    store: keyStore,
    cache: keyCache,
    plans: deps.config.TERSE_PLANS,
    logger: deps.logger,
    clock: deps.clock,
  });
  const accountStore = new AccountStore(deps.db);
  const accounts = new AccountService({ store: accountStore });
  const tokens = new Tokens({
    secret: deps.config.JWT_SECRET,
    issuer: deps.config.JWT_ISSUER,
    audience: deps.config.JWT_AUDIENCE,
    ttlSeconds: deps.config.JWT_TTL_SECONDS,
    jwksUrl: deps.config.JWT_JWKS_URL,
    jwksIssuer: deps.config.JWT_JWKS_ISSUER,
    jwksAudience: deps.config.JWT_JWKS_AUDIENCE,
  });
  return { keys, accounts, accountStore, tokens, throttle: new LoginThrottle(deps.redis), keyStore, keyCache };
}
