import { createHash, timingSafeEqual } from "node:crypto";
import { type ControlPlaneConfig, joinHostPort } from "@terse/config";
import type { Db } from "@terse/db";
import type { Logger } from "@terse/logger";
import {
  grpc,
  INTERNAL_TOKEN_METADATA,
  loadMetering,
  type MeteringHandlers,
  type ProtoUsageEventOutput,
  serverCredentials,
} from "@terse/metering-proto";
import type { Redis } from "ioredis";
import { reconcileQuotaMarks } from "../domain/usage-quota.ts";
import { UsageRecorder } from "../domain/usage-recorder.ts";

export interface GrpcDeps {
  config: ControlPlaneConfig;
  db: Db;
  redis: Redis;
  logger: Logger;
}

/**
 * Most events one RecordUsage call may carry. The data plane sends jobs of at most 100;
 * the cap keeps one call to one bounded SQL statement (an oversized call is
 * INVALID_ARGUMENT, never retried).
 */
export const MAX_EVENTS_PER_CALL = 1_000;

/**
 * How often the current month's over-quota marks are checked against Postgres and the
 * configured limits. Heals a mark a worker set from a read that a plan upgrade made
 * stale a moment later; a raised TERSE_PLANS limit is applied at start already.
 */
const QUOTA_RECONCILE_INTERVAL_MS = 60_000;

const sha256 = (s: string) => createHash("sha256").update(s).digest();

/** The Metering service of proto/terse/metering/v1: what the metering worker calls. */
export class MeteringService {
  private readonly tokenDigest: Buffer;

  constructor(
    private readonly recorder: UsageRecorder,
    internalToken: string,
    private readonly logger: Logger,
  ) {
    this.tokenDigest = sha256(internalToken);
  }

  addToServer(server: grpc.Server): void {
    const handlers: MeteringHandlers = {
      RecordUsage: (call, callback) => {
        if (!this.authorised(call.metadata)) {
          callback({ code: grpc.status.UNAUTHENTICATED, details: "missing or wrong internal token" });
          return;
        }
        const events = call.request.events;
        if (events.length > MAX_EVENTS_PER_CALL) {
          callback({
            code: grpc.status.INVALID_ARGUMENT,
            details: `at most ${MAX_EVENTS_PER_CALL} events per call, got ${events.length}`,
          });
          return;
        }
        this.recorder
          .record(events.map(fromProto))
          .then((out) => callback(null, out))
          .catch((err: unknown) => {
            this.logger.error({ err }, "RecordUsage failed");
            // The worker retries UNAVAILABLE with backoff; the batch is replay-safe.
            callback({ code: grpc.status.UNAVAILABLE, details: "usage store unavailable" });
          });
      },
    };
    server.addService(loadMetering().Metering.service, handlers);
  }

  /** Compares digests in constant time, so neither the token nor its length leaks through timing. */
  private authorised(metadata: grpc.Metadata): boolean {
    const sent = metadata.get(INTERNAL_TOKEN_METADATA)[0];
    return typeof sent === "string" && timingSafeEqual(sha256(sent), this.tokenDigest);
  }
}

/** proto3 has no null: empty strings stand for "none" on the wire. */
function fromProto(e: ProtoUsageEventOutput): unknown {
  return {
    ...e,
    intensity: e.intensity === "" ? null : e.intensity,
    compression_reason: e.compression_reason === "" ? null : e.compression_reason,
  };
}

/** Clears stale over-quota marks now and then every interval; failures are logged and retried next time. */
function watchQuotaMarks(deps: GrpcDeps): NodeJS.Timeout {
  const quota = { db: deps.db, redis: deps.redis, plans: deps.config.TERSE_PLANS };
  const run = () =>
    reconcileQuotaMarks(quota)
      .then((cleared) => {
        if (cleared.length > 0) deps.logger.info({ cleared }, "over-quota marks cleared");
      })
      .catch((err: unknown) => deps.logger.warn({ err }, "quota reconciliation failed"));
  void run();
  return setInterval(run, QUOTA_RECONCILE_INTERVAL_MS).unref();
}

/**
 * Starts the gRPC server on GRPC_PORT (TLS when certificates are configured), and the
 * reconciliation of this month's over-quota marks, which belongs to the same job.
 */
export async function startGrpcServer(
  deps: GrpcDeps,
): Promise<{ port: number; address: string; stop(): Promise<void> }> {
  const server = new grpc.Server();
  new MeteringService(
    new UsageRecorder(deps.db, deps.config.TERSE_PLANS),
    deps.config.INTERNAL_GRPC_TOKEN,
    deps.logger,
  ).addToServer(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      joinHostPort(deps.config.BIND_HOST, deps.config.GRPC_PORT),
      serverCredentials(deps.config),
      (err, bound) => (err ? reject(err) : resolve(bound)),
    ),
  );
  const quotaWatch = watchQuotaMarks(deps);
  const address = joinHostPort(deps.config.BIND_HOST, port);
  deps.logger.info({ address }, "gRPC metering service listening");
  return {
    port,
    address,
    stop: () =>
      new Promise<void>((resolve) => {
        clearInterval(quotaWatch);
        const force = setTimeout(() => server.forceShutdown(), 5_000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}
