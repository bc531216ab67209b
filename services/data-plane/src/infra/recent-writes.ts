/**
 * What this process wrote lately, by id: a write repeated every request (an agent resends
 * its history every turn; a key authenticates every call) is done once per `intervalMs`.
 * Bounded: past `max` ids the one written longest ago is forgotten (and written again
 * when next due).
 */
export class RecentWrites {
  /** When each id was last written, ms; oldest first (a Map keeps insertion order). */
  private readonly written = new Map<string, number>();

  constructor(
    private readonly intervalMs: number,
    private readonly max: number,
  ) {}

  /** Whether `id` is due a write at `now`; if so it counts as written then. */
  due(id: string, now: number): boolean {
    const at = this.written.get(id);
    if (at !== undefined && now - at < this.intervalMs) return false;
    this.written.delete(id);
    this.written.set(id, now);
    if (this.written.size > this.max) {
      const oldest = this.written.keys().next().value;
      if (oldest !== undefined) this.written.delete(oldest);
    }
    return true;
  }

  /** What was written under `id` is gone: the next request's write is due at once. */
  forget(id: string): void {
    this.written.delete(id);
  }
}
