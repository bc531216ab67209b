import { KEY_LAST_USED_KEY, KEY_USE_NOTE_MS } from "@terse/keys";
import type { Redis } from "ioredis";

/** Keys remembered at most; past it the memory starts over (a key is then written once more). */
const MAX_REMEMBERED = 100_000;

/**
 * Notes that a key passed authentication, for its `last_used_at` (DESIGN.md section 7:
 * every proxy request that passed authentication, metered or not). One Redis write per
 * key per KEY_USE_NOTE_MS from this process, off the request path; the control plane
 * carries the notes to Postgres. A lost write costs a timestamp a few seconds old.
 */
export class KeyUseNotes {
  /** When this process last wrote each key's note, ms. */
  private readonly written = new Map<string, number>();

  constructor(private readonly redis: Redis) {}

  note(keyId: string, nowMs: number): void {
    const last = this.written.get(keyId);
    if (last !== undefined && nowMs - last < KEY_USE_NOTE_MS) return;
    if (this.written.size >= MAX_REMEMBERED) this.written.clear();
    this.written.set(keyId, nowMs);
    this.redis.hset(KEY_LAST_USED_KEY, keyId, String(nowMs)).catch(() => undefined);
  }
}
