import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { freePort, REPO_ROOT, type RunningProcess, startTs } from "@terse/testkit";
import { USAGE_QUEUE } from "@terse/usage-events";
import { Queue } from "bullmq";
import pg from "pg";

const run = promisify(execFile);

export type ServiceName = "controlPlane" | "dataPlane" | "worker";

const SERVICES: Record<ServiceName, { entry: string; ready: RegExp }> = {
  controlPlane: { entry: "services/control-plane/src/main.ts", ready: /control-plane listening on/ },
  dataPlane: { entry: "services/data-plane/src/main.ts", ready: /data-plane listening on/ },
  worker: { entry: "services/metering-worker/src/main.ts", ready: /metering-worker ready/ },
};

/**
 * Limits out of the way of load (raised through TERSE_PLANS as DESIGN.md section 7
 * says, never by switching a limiter off): the enterprise plan, which the fault tests
 * use, may send a million requests a minute.
 */
const PLANS = { enterprise: { rate_limit_rpm: 1_000_000, monthly_tokens: 1_000_000_000_000 } };

export interface SystemOptions {
  redisUrl: string;
  /** A database the control plane migrates on start. */
  databaseUrl: string;
  upstreamUrl: string;
  /** More environment for every service (timeouts, intervals). */
  env?: Record<string, string>;
}

export interface Account {
  email: string;
  token: string;
}

export interface CreatedKey {
  id: string;
  raw_key: string;
}

/** The whole system as production runs it: three processes, each its service's main.ts. */
export interface System {
  controlPlaneUrl: string;
  dataPlaneUrl: string;
  workerMetricsUrl: string;
  env: Record<string, string>;
  process(name: ServiceName): RunningProcess;
  start(name: ServiceName): Promise<void>;
  stop(name: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  /** An enterprise account made with the admin CLI, signed in. */
  createAccount(email: string): Promise<Account>;
  createKey(account: Account, name: string): Promise<CreatedKey>;
  /** DELETE /v1/auth/keys/{id}; resolves when the control plane has answered. */
  revokeKey(account: Account, id: string): Promise<Response>;
  /** POST /v1/auth/keys/{id}/rotate; resolves when the control plane has answered. */
  rotateKey(account: Account, id: string): Promise<Response>;
  /** Usage events recorded in Postgres for these keys: rows, tokens, and how many were estimated. */
  recorded(keyIds: string[]): Promise<Recorded>;
  /** True when the usage queue holds no job waiting, delayed or in work. */
  usageQueueIdle(): Promise<boolean>;
  /** The usage queue's jobs by state (waiting, active, failed, ...): what a test that waited in vain says. */
  usageQueueCounts(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export interface Recorded {
  events: number;
  tokens: number;
  /** Events whose tokens the proxy counted itself (no usage from the upstream). */
  estimated: number;
  byStatus: Record<number, number>;
}

export const PASSWORD = "correct horse battery staple";

export async function startSystem(options: SystemOptions): Promise<System> {
  const [cpPort, grpcPort, dpPort, metricsPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const env: Record<string, string> = {
    // production: the services export their process metrics (open fds, RSS, heap).
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    JWT_SECRET: "reliability-jwt-secret-that-is-long-enough-0123",
    INTERNAL_GRPC_TOKEN: "reliability-internal-grpc-token-0123",
    CONTROL_PLANE_PORT: String(cpPort),
    GRPC_PORT: String(grpcPort),
    CONTROL_PLANE_GRPC_URL: `127.0.0.1:${grpcPort}`,
    DATA_PLANE_PORT: String(dpPort),
    METRICS_PORT: String(metricsPort),
    OPENAI_BASE_URL: options.upstreamUrl,
    ANTHROPIC_BASE_URL: options.upstreamUrl,
    GEMINI_BASE_URL: options.upstreamUrl,
    TERSE_PLANS: JSON.stringify(PLANS),
    SHUTDOWN_GRACE_MS: "2000",
    ...options.env,
  };
  const controlPlaneUrl = `http://127.0.0.1:${cpPort}`;
  const procs = new Map<ServiceName, RunningProcess>();
  const db = new pg.Pool({ connectionString: options.databaseUrl, max: 2 });
  db.on("error", () => undefined); // the Postgres fault stops the server under the pool
  const queue = new Queue(USAGE_QUEUE, { connection: { url: options.redisUrl, maxRetriesPerRequest: null } });
  queue.on("error", () => undefined); // the Redis faults stop the server under it

  const system: System = {
    controlPlaneUrl,
    dataPlaneUrl: `http://127.0.0.1:${dpPort}`,
    workerMetricsUrl: `http://127.0.0.1:${metricsPort}`,
    env,
    process(name) {
      const proc = procs.get(name);
      if (!proc) throw new Error(`${name} is not running`);
      return proc;
    },
    async start(name) {
      const proc = startTs(SERVICES[name].entry, env);
      procs.set(name, proc);
      await proc.waitForOutput(SERVICES[name].ready, 60_000);
    },
    async stop(name, signal = "SIGTERM") {
      await procs.get(name)?.stop(signal);
      procs.delete(name);
    },
    async createAccount(email) {
      const admin = ["services/control-plane/src/cli/admin.ts", "accounts:create"];
      const args = [...admin, "--email", email, "--password", PASSWORD, "--plan", "enterprise"];
      await run(`${REPO_ROOT}/node_modules/.bin/tsx`, args, { cwd: REPO_ROOT, env: { ...process.env, ...env } });
      const login = await postJson(`${controlPlaneUrl}/v1/auth/login`, { email, password: PASSWORD });
      if (login.status !== 200) throw new Error(`login failed: ${login.status}`);
      return { email, token: ((await login.json()) as { access_token: string }).access_token };
    },
    async createKey(account, name) {
      const res = await postJson(`${controlPlaneUrl}/v1/auth/keys`, { name }, account.token);
      if (res.status !== 201) throw new Error(`key create failed: ${res.status} ${await res.text()}`);
      return (await res.json()) as CreatedKey;
    },
    revokeKey: (account, id) =>
      fetch(`${controlPlaneUrl}/v1/auth/keys/${id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${account.token}` },
      }),
    rotateKey: (account, id) =>
      fetch(`${controlPlaneUrl}/v1/auth/keys/${id}/rotate`, {
        method: "POST",
        headers: { authorization: `Bearer ${account.token}` },
      }),
    async recorded(keyIds) {
      const { rows } = await db.query<{ status: number; n: string; tokens: string; estimated: string }>(
        `SELECT status, count(*) AS n, coalesce(sum(input_tokens + output_tokens), 0) AS tokens,
                count(*) FILTER (WHERE estimated) AS estimated
           FROM usage_events WHERE key_id = ANY($1) GROUP BY status`,
        [keyIds],
      );
      const byStatus: Record<number, number> = {};
      for (const r of rows) byStatus[r.status] = Number(r.n);
      return {
        events: rows.reduce((n, r) => n + Number(r.n), 0),
        tokens: rows.reduce((n, r) => n + Number(r.tokens), 0),
        estimated: rows.reduce((n, r) => n + Number(r.estimated), 0),
        byStatus,
      };
    },
    async usageQueueIdle() {
      const counts = await queue.getJobCounts("wait", "delayed", "active", "prioritized");
      return Object.values(counts).every((n) => n === 0);
    },
    usageQueueCounts: () => queue.getJobCounts(),
    async close() {
      await Promise.all([...procs.keys()].map((name) => system.stop(name, "SIGKILL")));
      await Promise.all([db.end(), queue.close()]);
    },
  };
  // The control plane first: it migrates the database and fills the key cache.
  await system.start("controlPlane");
  await Promise.all([system.start("dataPlane"), system.start("worker")]);
  return system;
}

function postJson(url: string, body: unknown, token?: string): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  return fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
}
