import { grpc } from "@terse/metering-proto";

// A batch the control plane cannot take now is no failed batch. BullMQ gives a job a
// fixed number of attempts (the data plane's 10, backing off from 1 s: about nine minutes
// in all); spent on a control plane or a Postgres that is away for longer, they would set
// every batch of the outage aside in the failed set, recorded by no one. So a job whose
// call failed this way waits (delayed, no attempt spent) and is tried again until the
// control plane takes it; attempts are left to what no waiting mends.

/** The codes by which a call was refused for now: the control plane or its store away, slow or not yet configured alike. */
const NOT_NOW: ReadonlySet<number> = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.ABORTED,
  // A token the two sides disagree on is a deployment's mistake: its batches wait for the fix.
  grpc.status.UNAUTHENTICATED,
]);

/** Whether `err` says the control plane could not take the call now, and may later. */
export function isNotNow(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "number" && NOT_NOW.has(code);
}

/**
 * How long a job waits before its next try: doubling from `firstMs` with every call in a
 * row that found the control plane away, up to `maxMs`. Counted by call, not by job (one
 * call carries many jobs' events), and shared by the worker's jobs: an outage is the
 * control plane's, not a job's.
 */
export class OutageBackoff {
  private refusals = 0;

  constructor(
    private readonly firstMs = 1_000,
    private readonly maxMs = 30_000,
  ) {}

  /** One more call refused for now; answers whether it is the first of an outage. */
  refused(): boolean {
    return ++this.refusals === 1;
  }

  /** A call got through; answers whether an outage just ended. */
  tookCall(): boolean {
    const ended = this.refusals > 0;
    this.refusals = 0;
    return ended;
  }

  /** The wait before a refused job's next try. */
  get waitMs(): number {
    return Math.min(this.maxMs, this.firstMs * 2 ** Math.min(Math.max(this.refusals - 1, 0), 30));
  }
}
