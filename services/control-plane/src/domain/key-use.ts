import type { Db } from "@terse/db";
import { couldBeRecordId, KEY_LAST_USED_KEY } from "@terse/keys";
import type { Redis } from "ioredis";

// `last_used_at` for every request that passed authentication (DESIGN.md section 7).
// Metered calls move it with their usage events; the data plane also notes each key it
// authenticates (KEY_LAST_USED_KEY, a few seconds apart per key), which covers the calls
// no event records (model lists, token counts, refusals after the key was known). This
// carries those notes to Postgres.

/** How far ahead of this clock a note may be (another machine's clock): later ones are taken as now. */
const CLOCK_SKEW_MS = 60_000;

/** Reads the notes and empties the hash in one step: two control planes never take the same note. */
const TAKE_NOTES = `local notes = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
return notes`;

/**
 * Moves each noted key's `last_used_at` forward to its note (never back: an older note, a
 * later event). Returns how many keys were noted. Notes that fail to reach Postgres are
 * put back for the next run.
 */
export async function recordKeyUse(deps: { db: Db; redis: Redis }, nowMs = Date.now()): Promise<number> {
  const flat = (await deps.redis.eval(TAKE_NOTES, 1, KEY_LAST_USED_KEY)) as string[];
  const ids: string[] = [];
  const times: Date[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const id = flat[i] as string;
    const ms = Number(flat[i + 1]);
    if (!couldBeRecordId(id) || !Number.isFinite(ms) || ms <= 0) continue;
    ids.push(id);
    times.push(new Date(Math.min(ms, nowMs + CLOCK_SKEW_MS)));
  }
  if (ids.length === 0) return 0;
  try {
    await deps.db.$executeRaw`
      UPDATE service_keys k SET last_used_at = GREATEST(k.last_used_at, t.at)
      FROM unnest(${ids}::text[], ${times}::timestamptz[]) AS t(id, at)
      WHERE k.id = t.id`;
  } catch (err) {
    const back = ids.flatMap((id, i) => [id, String(times[i]?.getTime())]);
    await deps.redis.hset(KEY_LAST_USED_KEY, ...back).catch(() => undefined);
    throw err;
  }
  return ids.length;
}
