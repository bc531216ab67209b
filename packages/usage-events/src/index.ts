import { nameFault, textFault } from "@terse/identifiers";
import { INTENSITIES } from "@terse/keys/settings";
import { PROVIDERS } from "@terse/wire-formats";
import { z } from "zod";

// The contract between the data plane (producer) and the metering worker (consumer):
// one event per proxied request that passed authentication (DESIGN.md section 4).

/** The BullMQ queue the data plane writes to and the worker consumes. */
export const USAGE_QUEUE = "usage";
/** Job name: one job carries a small batch of events (each with its own id). */
export const USAGE_BATCH_JOB = "usage-batch";
/** Job name of an event the worker can never record: it fails at once, with its reason, into the failed set. */
export const REJECTED_EVENT_JOB = "usage-rejected";

export { PROVIDERS, type Provider } from "@terse/wire-formats";

/**
 * Every field must be storable as it is: one value Postgres refuses (a NUL, a count past
 * its `integer`) fails the whole statement, and with it every other event of the batch.
 */
const INT4_MAX = 2_147_483_647;
const count = z.number().int().nonnegative().max(INT4_MAX);
const tokenCount = count;
const name = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .superRefine((s, ctx) => {
      const fault = nameFault(s);
      if (fault) ctx.addIssue({ code: "custom", message: fault });
    });
const text = (max: number) =>
  z
    .string()
    .max(max)
    .superRefine((s, ctx) => {
      const fault = textFault(s);
      if (fault) ctx.addIssue({ code: "custom", message: fault });
    });

export const usageEventSchema = z
  .object({
    /** Unique per request; the control plane's primary key, so a replay counts nothing twice. */
    event_id: name(64),
    key_id: name(64),
    account_id: name(64),
    provider: z.enum(PROVIDERS),
    model: name(256),
    /** HTTP status returned to the caller (0 when the client hung up before any status). */
    status: z.number().int().min(0).max(599),
    streamed: z.boolean(),
    /** Every billed input token, cache reads and writes included. */
    input_tokens: tokenCount,
    output_tokens: tokenCount,
    /** Of input_tokens, those the provider read from its prompt cache (billed lower). Absent from an older producer: 0. */
    cache_read_tokens: tokenCount.default(0),
    /** Of input_tokens, those the provider wrote to its prompt cache (Anthropic bills them higher). */
    cache_write_tokens: tokenCount.default(0),
    /**
     * The input of the request as the caller sent it, uncompressed, in one upstream call:
     * the first call's input_tokens plus what compression saved (the tokenizer's estimate
     * of the parts it changed). Recall rounds are not in it: without terse there are none.
     */
    input_tokens_before_compression: tokenCount,
    /**
     * Estimate: of input_tokens_before_compression, the tokens the provider would have
     * read from and written to its prompt cache (docs/savings.md: the prefix the previous
     * request of the session sent counted as cached). Absent from an older producer:
     * cacheBeforeCompression() takes the compressed request's share instead.
     */
    cache_read_tokens_before_compression: tokenCount.optional(),
    cache_write_tokens_before_compression: tokenCount.optional(),
    /** True when the proxy counted tokens itself (no usage from upstream: error, abort). */
    estimated: z.boolean(),
    /** Response-compression level applied, null when none (structured output, compression off). */
    intensity: z.enum(INTENSITIES).nullable(),
    compression_reason: text(256).nullable(),
    latency_ms: count,
    /** ISO 8601. */
    started_at: z.string().datetime({ offset: true }),
    /**
     * Recall rounds (issue 18): upstream calls terse made after the first, each to answer
     * the model's terse_recall call. The token counts above are the sum over every call.
     * Absent from an older producer: 0.
     */
    recall_rounds: count.default(0),
  })
  .strict();

export type UsageEvent = z.infer<typeof usageEventSchema>;

/**
 * The prompt-cache split of the request before compression: as the producer estimated
 * it, or, from an older producer that did not, the compressed request's own share of
 * cache reads and writes (the estimate terse used before it modelled sessions).
 */
export function cacheBeforeCompression(e: UsageEvent): { read: number; write: number } {
  const before = e.input_tokens_before_compression;
  const share = (tokens: number) => (e.input_tokens > 0 ? Math.round((tokens * before) / e.input_tokens) : 0);
  const read = Math.min(before, e.cache_read_tokens_before_compression ?? share(e.cache_read_tokens));
  const write = Math.min(before - read, e.cache_write_tokens_before_compression ?? share(e.cache_write_tokens));
  return { read, write };
}

/** The events' fields, in the order a batch's columns are written. */
const USAGE_EVENT_FIELDS = Object.keys(usageEventSchema.shape) as (keyof UsageEvent)[];
/** Fields whose null is a value; in any other column a null stands for a field left out. */
const NULLABLE_FIELDS = new Set(
  USAGE_EVENT_FIELDS.filter((field) => usageEventSchema.shape[field].safeParse(null).success),
);

/**
 * The payload of one `usage-batch` job: each field's values in one array, in the events'
 * order (a field an event leaves out is null in its column). BullMQ keeps a job's data as
 * its JSON in Redis until the job is done: without a name per field and event, a batch
 * is some 60% smaller (53 KB for 250 events, 139 as objects) and cheaper to write.
 */
export interface UsageBatch {
  columns: Record<string, unknown[]>;
}

/** One job's payload for `events` (at least one). */
export function encodeUsageBatch(events: readonly UsageEvent[]): UsageBatch {
  const columns: Record<string, unknown[]> = {};
  for (const field of USAGE_EVENT_FIELDS) columns[field] = events.map((event) => event[field] ?? null);
  return { columns };
}

/**
 * The events of a job's payload, each still to be validated on its own; undefined when
 * the payload is no batch at all. Also reads the object form (`{events: [...]}`) that a
 * data plane before the columns wrote, so jobs queued across an upgrade are recorded.
 */
export function eventsOfBatch(data: unknown): unknown[] | undefined {
  if (typeof data !== "object" || data === null) return undefined;
  const { events, columns } = data as { events?: unknown; columns?: unknown };
  if (Array.isArray(events)) return events.length > 0 ? events : undefined;
  if (typeof columns !== "object" || columns === null || Array.isArray(columns)) return undefined;
  const fields = Object.entries(columns);
  const count = (fields[0]?.[1] as unknown[] | undefined)?.length;
  if (!count || !fields.every(([, values]) => Array.isArray(values) && values.length === count)) return undefined;
  // fromEntries defines each field as data, so a column named __proto__ stays a field (that the schema refuses).
  return Array.from({ length: count }, (_, i) =>
    Object.fromEntries(
      (fields as [string, unknown[]][])
        .map(([field, values]) => [field, values[i]])
        .filter(([field, value]) => value !== null || NULLABLE_FIELDS.has(field as keyof UsageEvent)),
    ),
  );
}
