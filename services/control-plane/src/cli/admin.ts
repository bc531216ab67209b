// `pnpm admin <command>`: operator commands of the control plane (README, DESIGN.md 3).
//   accounts:create --email E --password P --plan free|pro|team|enterprise   prints the account as JSON
//   accounts:set-plan --email E --plan PLAN                                  also rewrites the keys' cache records
//   cache:resync                                                             rebuilds the Redis key cache
//   usage:failed                                                             what the usage queue's failed set holds
//   usage:retry                                                              puts its failed batches back in the queue
import { parseArgs } from "node:util";
import {
  ConfigError,
  type ControlPlaneAdminConfig,
  controlPlaneAdminEnv,
  loadConfig,
  PLAN_NAMES,
  type PlanName,
} from "@terse/config";
import { createDb, type Db } from "@terse/db";
import { createLogger } from "@terse/logger";
import type { Redis } from "ioredis";
import { AccountService, accountView, InvalidAccountError } from "../domain/accounts.ts";
import { resyncKeyCache } from "../domain/cache-resync.ts";
import { KeyService } from "../domain/keys.ts";
import { changePlan } from "../domain/plan-change.ts";
import { reevaluateQuota } from "../domain/usage-quota.ts";
import { AccountStore, DuplicateEmailError } from "../infra/account-store.ts";
import { KeyCache } from "../infra/key-cache.ts";
import { KeyStore } from "../infra/key-store.ts";
import { createRedis } from "../infra/redis.ts";
import { failedUsage, retryFailedBatches } from "../infra/usage-failed-set.ts";
import { adminEnvironment } from "./env-file.ts";

const USAGE = `usage:
  pnpm admin accounts:create --email E --password P --plan ${PLAN_NAMES.join("|")}
  pnpm admin accounts:set-plan --email E --plan ${PLAN_NAMES.join("|")}
  pnpm admin cache:resync
  pnpm admin usage:failed
  pnpm admin usage:retry`;

/** A mistake of the operator: one line on stderr, exit 2. */
class UsageError extends Error {}

interface Runtime {
  config: ControlPlaneAdminConfig;
  db: Db;
  redis: Redis;
}

function option(values: Record<string, string | boolean | undefined>, name: string): string {
  const value = values[name];
  if (typeof value !== "string" || value === "") throw new UsageError(`--${name} is required`);
  return value;
}

function planOption(values: Record<string, string | boolean | undefined>): PlanName {
  const plan = option(values, "plan");
  if (!(PLAN_NAMES as readonly string[]).includes(plan)) {
    throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(", ")}`);
  }
  return plan as PlanName;
}

function keyService(rt: Runtime): KeyService {
  return new KeyService({
    db: rt.db,
    store: new KeyStore(rt.db),
    cache: new KeyCache(rt.redis, { leaseTtlMs: rt.config.KEY_LEASE_TTL_MS }),
    plans: rt.config.TERSE_PLANS,
    logger: createLogger({ service: "control-plane-admin", level: "warn" }),
    clock: () => new Date(),
  });
}

const COMMANDS: Record<
  string,
  (rt: Runtime, values: Record<string, string | boolean | undefined>) => Promise<unknown>
> = {
  async "accounts:create"(rt, values) {
    const accounts = new AccountService({ store: new AccountStore(rt.db) });
    const email = option(values, "email");
    const password = option(values, "password");
    const plan = planOption(values);
    try {
      return accountView(await accounts.create(email, password, plan));
    } catch (err) {
      if (err instanceof InvalidAccountError) throw new UsageError(`--${err.message}`);
      if (err instanceof DuplicateEmailError) throw new UsageError(`an account with email ${email} already exists`);
      throw err;
    }
  },

  async "accounts:set-plan"(rt, values) {
    const email = option(values, "email");
    const account = await changePlan(
      { db: rt.db, accounts: new AccountStore(rt.db), keys: keyService(rt) },
      email,
      planOption(values),
    );
    if (!account) throw new UsageError(`no account with email ${email}`);
    // An upgrade (or a higher limit) lifts this month's quota mark at once; a downgrade may set it.
    await reevaluateQuota({ db: rt.db, redis: rt.redis, plans: rt.config.TERSE_PLANS }, account.id);
    return accountView(account);
  },

  async "cache:resync"(rt) {
    const cache = new KeyCache(rt.redis, { leaseTtlMs: rt.config.KEY_LEASE_TTL_MS });
    return resyncKeyCache({ db: rt.db, store: new KeyStore(rt.db), cache });
  },

  async "usage:failed"(rt) {
    return failedUsage(rt.redis);
  },

  async "usage:retry"(rt) {
    return retryFailedBatches(rt.redis);
  },
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const run = command === undefined ? undefined : COMMANDS[command];
  if (!run) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  let rt: Runtime | undefined;
  try {
    const { values } = parseArgs({
      args: rest,
      options: { email: { type: "string" }, password: { type: "string" }, plan: { type: "string" } },
      strict: true,
    });
    const config = loadConfig(controlPlaneAdminEnv, adminEnvironment());
    rt = { config, db: createDb(config.DATABASE_URL, { poolSize: 4 }), redis: createRedis(config.REDIS_URL) };
    if (command !== "accounts:create") await rt.redis.connect();
    process.stdout.write(`${JSON.stringify(await run(rt, values), null, 2)}\n`);
    return 0;
  } catch (err) {
    const known =
      err instanceof UsageError ||
      err instanceof ConfigError ||
      (err as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION";
    process.stderr.write(`${command}: ${err instanceof Error ? err.message : String(err)}\n`);
    return known ? 2 : 1;
  } finally {
    await rt?.db.$disconnect();
    rt?.redis.disconnect();
  }
}

process.exitCode = await main(process.argv.slice(2));
