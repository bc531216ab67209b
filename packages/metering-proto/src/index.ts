import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import type { ProtoGrpcType } from "./generated/metering.ts";

export type { MeteringClient, MeteringHandlers } from "./generated/terse/metering/v1/Metering.ts";
export type { AccountMonth__Output as AccountMonth } from "./generated/terse/metering/v1/AccountMonth.ts";
export type { EventResult, EventResult__Output } from "./generated/terse/metering/v1/EventResult.ts";
export type {
  RecordUsageRequest__Output,
  RecordUsageRequest,
} from "./generated/terse/metering/v1/RecordUsageRequest.ts";
export type {
  RecordUsageResponse,
  RecordUsageResponse__Output,
} from "./generated/terse/metering/v1/RecordUsageResponse.ts";
export type {
  UsageEvent as ProtoUsageEvent,
  UsageEvent__Output as ProtoUsageEventOutput,
} from "./generated/terse/metering/v1/UsageEvent.ts";

export const PROTO_PATH = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "..",
  "proto",
  "terse",
  "metering",
  "v1",
  "metering.proto",
);

/** Metadata key of the shared internal token: the gRPC port is not an open door. */
export const INTERNAL_TOKEN_METADATA = "x-terse-internal-token";

/** The loaded service definition; options match the generated types (src/generated, `pnpm generate`). */
export function loadMetering(): ProtoGrpcType["terse"]["metering"]["v1"] {
  const definition = loadSync(PROTO_PATH, {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return (grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType).terse.metering.v1;
}

export interface TlsFiles {
  GRPC_TLS_CERT?: string | undefined;
  GRPC_TLS_KEY?: string | undefined;
  GRPC_TLS_CA?: string | undefined;
}

/** TLS when certificate files are configured, plaintext (private network only) otherwise. */
export function serverCredentials(tls: TlsFiles): grpc.ServerCredentials {
  if (!tls.GRPC_TLS_CERT || !tls.GRPC_TLS_KEY) return grpc.ServerCredentials.createInsecure();
  const ca = tls.GRPC_TLS_CA ? readFileSync(tls.GRPC_TLS_CA) : null;
  return grpc.ServerCredentials.createSsl(
    ca,
    [{ cert_chain: readFileSync(tls.GRPC_TLS_CERT), private_key: readFileSync(tls.GRPC_TLS_KEY) }],
    false,
  );
}

export function channelCredentials(tls: TlsFiles): grpc.ChannelCredentials {
  if (!tls.GRPC_TLS_CA) return grpc.credentials.createInsecure();
  const cert = tls.GRPC_TLS_CERT ? readFileSync(tls.GRPC_TLS_CERT) : null;
  const key = tls.GRPC_TLS_KEY ? readFileSync(tls.GRPC_TLS_KEY) : null;
  return grpc.credentials.createSsl(readFileSync(tls.GRPC_TLS_CA), key, cert);
}

export { grpc };
