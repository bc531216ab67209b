import { timingSafeEqual } from "node:crypto";
import type { ControlPlaneConfig } from "@terse/config";
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
import { UsageRecorder } from "../domain/usage-recorder.ts";

export interface GrpcDeps {
  config: ControlPlaneConfig;
  db: Db;
  redis: Redis;
  logger: Logger;
}

/** The Metering service of proto/terse/metering/v1: what the metering worker calls. */
export class MeteringService {
  constructor(
    private readonly recorder: UsageRecorder,
    private readonly internalToken: string,
    private readonly logger: Logger,
  ) {}

  addToServer(server: grpc.Server): void {
    const handlers: MeteringHandlers = {
      RecordUsage: (call, callback) => {
        if (!this.authorised(call.metadata)) {
          callback({ code: grpc.status.UNAUTHENTICATED, details: "missing or wrong internal token" });
          return;
        }
        this.recorder
          .record(call.request.events.map(fromProto))
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

  /** Constant-time comparison of the shared internal token. */
  private authorised(metadata: grpc.Metadata): boolean {
    const sent = metadata.get(INTERNAL_TOKEN_METADATA)[0];
    if (typeof sent !== "string") return false;
    const a = Buffer.from(sent);
    const b = Buffer.from(this.internalToken);
    return a.length === b.length && timingSafeEqual(a, b);
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

/** Starts the gRPC server on GRPC_PORT (TLS when certificates are configured). */
export async function startGrpcServer(deps: GrpcDeps): Promise<{ port: number; stop(): Promise<void> }> {
  const server = new grpc.Server();
  new MeteringService(
    new UsageRecorder(deps.db, deps.config.TERSE_PLANS),
    deps.config.INTERNAL_GRPC_TOKEN,
    deps.logger,
  ).addToServer(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`0.0.0.0:${deps.config.GRPC_PORT}`, serverCredentials(deps.config), (err, bound) =>
      err ? reject(err) : resolve(bound),
    ),
  );
  deps.logger.info({ port }, "gRPC metering service listening");
  return {
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.forceShutdown(), 5_000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}
