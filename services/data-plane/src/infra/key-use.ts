import { KEY_LAST_USED_KEY, KEY_USE_NOTE_MS } from "@terse/keys";
import type { Redis } from "ioredis";
import { RecentWrites } from "./recent-writes.ts";

/** Keys remembered at most. */
const MAX_REMEMBERED = 100_000;

/**
 * Notes that a key passed authentication, for its `last_used_at` (DESIGN.md section 7:
 * every proxy request that passed authentication, metered or not). One Redis write per
 * key per KEY_USE_NOTE_MS from this process, off the request path; the control plane
 * carries the notes to Postgres. A lost write costs a timestamp a few seconds old.
 */
export class KeyUseNotes {
  private readonly written = new RecentWrites(KEY_USE_NOTE_MS, MAX_REMEMBERED);

  constructor(private readonly redis: Redis) {}

  note(keyId: string, nowMs: number): void {
    if (!this.written.due(keyId, nowMs)) return;
    this.redis.hset(KEY_LAST_USED_KEY, keyId, String(nowMs)).catch(() => undefined);
  }
}
