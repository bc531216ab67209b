import { setTimeout as delay } from "node:timers/promises";
import type { MeteringWorkerConfig } from "@terse/config";
import {
  channelCredentials,
  grpc,
  INTERNAL_TOKEN_METADATA,
  loadMetering,
  type MeteringClient,
  type RecordUsageResponse__Output,
} from "@terse/metering-proto";
import { cacheBeforeCompression, type UsageEvent } from "@terse/usage-events";

/** Every call gets a deadline: a hung control plane must not hang the worker. */
const CALL_DEADLINE_MS = 10_000;
/** UNAVAILABLE (control plane restarting, store down) is retried this often, with backoff, before the job itself fails and BullMQ's retry takes over. */
const UNAVAILABLE_RETRIES = 4;

/** proto3 has no null and no absence: "none" is an empty string, and the cache split before compression is always sent. */
function toProto(e: UsageEvent) {
  const cache = cacheBeforeCompression(e);
  return {
    ...e,
    intensity: e.intensity ?? "",
    compression_reason: e.compression_reason ?? "",
    cache_read_tokens_before_compression: cache.read,
    cache_write_tokens_before_compression: cache.write,
  };
}

/** The worker's side of the Metering gRPC service. */
export class MeteringGrpcClient {
  private readonly client: MeteringClient;
  private readonly metadata = new grpc.Metadata();

  constructor(config: MeteringWorkerConfig) {
    const Metering = loadMetering().Metering;
    this.client = new Metering(config.CONTROL_PLANE_GRPC_URL, channelCredentials(config)) as unknown as MeteringClient;
    this.metadata.set(INTERNAL_TOKEN_METADATA, config.INTERNAL_GRPC_TOKEN);
  }

  async recordUsage(
    events: UsageEvent[],
    onRetry?: (err: grpc.ServiceError) => void,
  ): Promise<RecordUsageResponse__Output> {
    const request = { events: events.map(toProto) };
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.call(request);
      } catch (err) {
        const e = err as grpc.ServiceError;
        if (e.code !== grpc.status.UNAVAILABLE || attempt >= UNAVAILABLE_RETRIES) throw err;
        onRetry?.(e);
        await delay(Math.min(5_000, 200 * 2 ** attempt));
      }
    }
  }

  close(): void {
    this.client.close();
  }

  private call(request: object): Promise<RecordUsageResponse__Output> {
    return new Promise((resolve, reject) => {
      this.client.RecordUsage(request, this.metadata, { deadline: Date.now() + CALL_DEADLINE_MS }, (err, res) => {
        if (err || !res) reject(err ?? new Error("empty RecordUsage response"));
        else resolve(res);
      });
    });
  }
}
