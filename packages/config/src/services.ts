import { z } from "zod";
import { bool, hostPort, logLevel, nonNegativeInt, optionalString, port, positiveInt, url } from "./fields.ts";
import { plansFromEnv } from "./plans.ts";
import { pricesFromEnv } from "./prices.ts";

// Every variable any terse service reads, in one place (.env.example documents them).
// Nothing outside this package reads process.env.

const common = {
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  LOG_LEVEL: logLevel,
  REDIS_URL: url("redis://127.0.0.1:6379"),
  TERSE_PLANS: plansFromEnv,
  /**
   * How long a proxy process may answer from its own copies of key records between two
   * renewals of its lease (docs/operations.md, "Key leases"). A key's change waits for
   * every process to drop its copy: at most half of this for an acknowledgement, then one
   * lease for a process that gave none. The same value on the control and data planes.
   */
  KEY_LEASE_TTL_MS: positiveInt(3_000),
};

/** Shutdown of the HTTP services, in order: readiness off, drain delay, close, grace. */
const httpShutdown = {
  /**
   * After SIGTERM, /readyz answers 503 for this long while requests are still served, so
   * load balancers (Kubernetes endpoints) stop sending new ones before the listener
   * closes. 0 on one machine; a few seconds behind a load balancer.
   */
  SHUTDOWN_DRAIN_DELAY_MS: nonNegativeInt(0),
  /** Then the listener closes, and requests and streams in flight get this long to finish. */
  SHUTDOWN_GRACE_MS: positiveInt(25_000),
};

/**
 * The interface the services listen on. 127.0.0.1 (this machine only) unless set: a
 * container sets 0.0.0.0 (docker-compose.yml, deploy/k8s), or its port is unreachable.
 * Not `HOST`: shells and CI runners often export that as the machine's name.
 */
const bind = {
  BIND_HOST: z.string().min(1).default("127.0.0.1"),
};

/**
 * Node's HTTP server limits on receiving a request; the response has none, since a
 * model's stream may run for many minutes. Past either, the caller gets 408 and the
 * connection closes (docs/operations.md).
 */
const httpReceive = {
  /** Until the request headers are complete: a slow sender (slowloris) is cut here. */
  HTTP_HEADERS_TIMEOUT_MS: positiveInt(10_000),
  /** Until the whole request, headers and body, is in: a body shorter than its Content-Length ends here. */
  HTTP_REQUEST_TIMEOUT_MS: positiveInt(60_000),
};

/** Node refuses a header timeout longer than the request timeout; say so by name at start. */
function headersWithinRequest(c: { HTTP_HEADERS_TIMEOUT_MS: number; HTTP_REQUEST_TIMEOUT_MS: number }): boolean {
  return c.HTTP_HEADERS_TIMEOUT_MS <= c.HTTP_REQUEST_TIMEOUT_MS;
}
const HEADERS_WITHIN_REQUEST = {
  message: "must not exceed HTTP_REQUEST_TIMEOUT_MS",
  path: ["HTTP_HEADERS_TIMEOUT_MS"],
};

/** Recall (docs/compression.md): the model can fetch back what context compression cut. */
const recall = {
  /** Off for the whole deployment: no terse_recall tool, plain cut markers, nothing kept. */
  RECALL_ENABLED: bool(true),
  /** How long a cut original is kept after it was last sent or read. */
  RECALL_TTL_SECONDS: positiveInt(3_600),
  /** Recall calls terse answers per request; past them the answer goes to the client as it is. */
  RECALL_MAX_ROUNDS: positiveInt(3),
  /** The most characters one recall answer returns; a longer part comes in pages (the answer says which lines follow). */
  RECALL_MAX_CHARS: positiveInt(40_000),
  /**
   * A non-streamed answer is read whole (a recall call may be anywhere in it) up to this
   * many bytes; a larger one goes to the client as it comes, unread, and holds no more memory.
   */
  RECALL_MAX_ANSWER_BYTES: positiveInt(32 * 1024 * 1024),
  /** While terse waits on a recall round, a streamed answer gets a keep-alive this often. */
  RECALL_KEEPALIVE_MS: positiveInt(5_000),
};

const grpcTls = {
  /** PEM paths. With all set, the gRPC channel is TLS; without, plaintext on a private network. */
  GRPC_TLS_CERT: optionalString(),
  GRPC_TLS_KEY: optionalString(),
  GRPC_TLS_CA: optionalString(),
};

const controlPlaneShape = z.object({
  ...common,
  ...bind,
  ...httpReceive,
  ...grpcTls,
  DATABASE_URL: url("postgresql://postgres@127.0.0.1:5432/terse"),
  CONTROL_PLANE_PORT: port(8080),
  GRPC_PORT: port(50051),
  JWT_SECRET: z.string().min(32, "must be at least 32 characters"),
  JWT_ISSUER: z.string().min(1).default("terse"),
  JWT_AUDIENCE: z.string().min(1).default("terse-api"),
  JWT_TTL_SECONDS: positiveInt(3600),
  /** When set, RS256 access tokens of this identity provider are accepted too. */
  JWT_JWKS_URL: url().optional(),
  /** Issuer required of external tokens (their `iss`); any issuer when unset. */
  JWT_JWKS_ISSUER: optionalString(),
  JWT_JWKS_AUDIENCE: optionalString(),
  INTERNAL_GRPC_TOKEN: z.string().min(16, "must be at least 16 characters"),
  ...httpShutdown,
  /**
   * Applies pending migrations at start (under an advisory lock, so replicas may race).
   * Set false where a one-shot migration job runs first (docker-compose, Kubernetes).
   */
  MIGRATE_ON_START: bool(true),
  /**
   * Proxy hops in front of the control plane whose X-Forwarded-For is trusted (express
   * `trust proxy`); the login throttle counts failures per client IP. 0 (default): none.
   */
  CONTROL_PLANE_TRUST_PROXY: z.string().regex(/^\d+$/, "expected a whole number").transform(Number).prefault("0"),
  /** Password of the demo account `npm start` seeds (demo@terse.local); default `terse-demo-password`. */
  DEMO_PASSWORD: z.string().min(8, "must be at least 8 characters").default("terse-demo-password"),
  /** Model prices for /v1/usage's money figures: JSON, or a JSON file's path, over the shipped table (prices.ts). */
  TERSE_PRICES: pricesFromEnv,
});
export const controlPlaneEnv = controlPlaneShape.refine(headersWithinRequest, HEADERS_WITHIN_REQUEST);
export type ControlPlaneConfig = z.infer<typeof controlPlaneEnv>;

/** What the control plane's admin CLI and seeding need: no JWT or gRPC secrets. */
export const controlPlaneAdminEnv = controlPlaneShape.pick({
  NODE_ENV: true,
  LOG_LEVEL: true,
  REDIS_URL: true,
  TERSE_PLANS: true,
  DATABASE_URL: true,
  DEMO_PASSWORD: true,
  KEY_LEASE_TTL_MS: true,
});
export type ControlPlaneAdminConfig = z.infer<typeof controlPlaneAdminEnv>;

export const dataPlaneEnv = z
  .object({
    ...common,
    ...bind,
    ...httpReceive,
    DATA_PLANE_PORT: port(8081),
    /** Processes serving the port (node:cluster); 0 = one per core. */
    DATA_PLANE_WORKERS: z.string().regex(/^\d+$/, "expected a whole number").transform(Number).prefault("1"),
    OPENAI_BASE_URL: url("https://api.openai.com"),
    ANTHROPIC_BASE_URL: url("https://api.anthropic.com"),
    GEMINI_BASE_URL: url("https://generativelanguage.googleapis.com"),
    UPSTREAM_CONNECT_TIMEOUT_MS: positiveInt(10_000),
    /** Models can think for minutes before the first byte. */
    UPSTREAM_IDLE_TIMEOUT_MS: positiveInt(300_000),
    /** Anthropic's own cap on a request (32 MB), the largest of the three: a PDF or images sent as base64 fit. */
    MAX_BODY_BYTES: positiveInt(32 * 1024 * 1024),
    /** Usage events held in memory while Redis is unreachable; beyond it the oldest are dropped and counted. */
    USAGE_BUFFER_MAX_EVENTS: positiveInt(100_000),
    /**
     * How far ahead rate credits are held: a process's unused credits are unavailable to
     * the others for at most this long. 0: no credits, every call is counted in Redis.
     */
    RATE_CREDIT_SECONDS: nonNegativeInt(20).refine((n) => n === 0 || n >= 5, "expected 0 (off) or at least 5"),
    /** How soon used rate credits are reported to Redis, and more asked for (ms). */
    RATE_CREDIT_SETTLE_MS: positiveInt(25),
    ...recall,
    ...httpShutdown,
  })
  .refine(headersWithinRequest, HEADERS_WITHIN_REQUEST);
export type DataPlaneConfig = z.infer<typeof dataPlaneEnv>;

const meteringWorkerShape = z
  .object({
    ...common,
    ...bind,
    ...grpcTls,
    /** The control plane's gRPC address; unset, 127.0.0.1 on GRPC_PORT (one machine: set the port once for both). */
    CONTROL_PLANE_GRPC_URL: hostPort().optional(),
    GRPC_PORT: port(50051),
    INTERNAL_GRPC_TOKEN: z.string().min(16, "must be at least 16 characters"),
    /**
     * Jobs held at once. Their events share gRPC calls (services/metering-worker/src/batcher.ts),
     * so this bounds how many small jobs one call can gather; default 64 (4 recorded jobs of 5
     * events at 1,000 events/s, docs/benchmarks.md).
     */
    WORKER_CONCURRENCY: positiveInt(64),
    /** How long a job's lock lasts, and how often stalled jobs (their worker died) are taken back. */
    WORKER_STALLED_INTERVAL_MS: positiveInt(30_000),
    METRICS_PORT: port(9464),
    SHUTDOWN_GRACE_MS: positiveInt(25_000),
  })
  .overwrite((c) => ({ ...c, CONTROL_PLANE_GRPC_URL: c.CONTROL_PLANE_GRPC_URL ?? `127.0.0.1:${c.GRPC_PORT}` }));
export type MeteringWorkerConfig = z.infer<typeof meteringWorkerShape> & { CONTROL_PLANE_GRPC_URL: string };
/** The worker's schema, typed with the address the overwrite above always fills in. */
export const meteringWorkerEnv = meteringWorkerShape as typeof meteringWorkerShape & z.ZodType<MeteringWorkerConfig>;
