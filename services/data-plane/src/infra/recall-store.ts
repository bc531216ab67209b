import { recallKeyFor } from "@terse/keys";
import type { Logger } from "@terse/logger";
import type { Redis } from "ioredis";
import { RecentWrites } from "./recent-writes.ts";

// The originals context compression cut, kept where the model can fetch them back
// (recall, docs/compression.md). They are the caller's content, treated like the provider
// key: in Redis under the account, for a limited time, and nowhere else (never logged,
// never in a metric). Content-addressed: the same output is stored once, however many
// turns resend it.

/** Originals this process wrote lately; bounded, oldest forgotten first. */
const REMEMBERED_WRITES = 10_000;

export class RecallStore {
  /** The originals (account:handle) this process wrote within half their lifetime: an agent resends its history every turn. */
  private readonly written: RecentWrites;

  constructor(
    private readonly redis: Redis,
    private readonly ttlSeconds: number,
    private readonly logger: Logger,
  ) {
    this.written = new RecentWrites((ttlSeconds * 1000) / 2, REMEMBERED_WRITES);
  }

  /**
   * Keeps the originals of a request's cuts. Each is written at most once per half
   * lifetime by this process (its lifetime renewed then), off the request path: the
   * model can only ask for one after the upstream has answered, and by then the write,
   * ahead of the read on the same connection, has been applied.
   */
  keep(accountId: string, cuts: ReadonlyMap<string, string>, now = Date.now()): void {
    let pipeline: ReturnType<Redis["pipeline"]> | undefined;
    for (const [handle, text] of cuts) {
      if (!this.written.due(`${accountId}:${handle}`, now)) continue;
      pipeline ??= this.redis.pipeline();
      pipeline.set(recallKeyFor(accountId, handle), text, "EX", this.ttlSeconds);
    }
    pipeline?.exec().catch((err: unknown) => {
      // A lost write costs a recall that answers "expired"; never the request.
      this.logger.warn({ err: errorName(err) }, "recall: keeping cut originals failed");
    });
  }

  /**
   * The original under `handle` in the account, its lifetime renewed; null when unknown
   * or expired. The account scopes the key (@terse/keys): another account's handle finds nothing.
   */
  async fetch(accountId: string, handle: string): Promise<string | null> {
    const original = await this.redis.getex(recallKeyFor(accountId, handle), "EX", this.ttlSeconds);
    // Gone though this process wrote it lately (Redis evicted or lost it): the next
    // request that resends the output writes it again, instead of half a lifetime later.
    if (original === null) this.written.forget(`${accountId}:${handle}`);
    return original;
  }
}

/** An error's name and message only: a Redis error never carries the caller's text, but say so by construction. */
function errorName(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message.slice(0, 200)}` : "unknown error";
}
