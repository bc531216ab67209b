import { QUOTA_CHANNEL, quotaExceededKeyFor, quotaMonth } from "@terse/keys";
import type { Logger } from "@terse/logger";
import type { Redis } from "ioredis";

/**
 * The accounts over their monthly token limit, held in memory so the per-request quota
 * check costs no Redis call (DESIGN.md section 2). Updated when the worker announces a
 * change, and reloaded every `reloadMs` to heal a missed announcement; the set is per
 * month, so a new month starts empty.
 */
export class QuotaView {
  /** The loaded month's bounds in ms (UTC): a request's time is compared, not formatted. */
  private monthStart = 0;
  private monthEnd = 0;
  private exceeded = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly logger: Logger,
    private readonly reloadMs = 2_000,
  ) {}

  async start(): Promise<void> {
    this.subscriber.on("message", (channel: string) => {
      if (channel === QUOTA_CHANNEL) void this.reload();
    });
    await this.subscriber.subscribe(QUOTA_CHANNEL);
    await this.reload();
    this.timer = setInterval(() => void this.reload(), this.reloadMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  isExceeded(accountId: string, nowMs: number): boolean {
    if (nowMs < this.monthStart || nowMs >= this.monthEnd) return false;
    return this.exceeded.has(accountId);
  }

  async reload(): Promise<void> {
    const month = quotaMonth();
    try {
      const members = await this.redis.smembers(quotaExceededKeyFor(month));
      this.exceeded = new Set(members);
      const year = Number(month.slice(0, 4));
      const monthIndex = Number(month.slice(4)) - 1;
      this.monthStart = Date.UTC(year, monthIndex, 1);
      this.monthEnd = Date.UTC(year, monthIndex + 1, 1);
    } catch (err) {
      // Keep the last known set: quota state may lag by seconds, never fail requests.
      this.logger.warn({ err: (err as Error).message }, "quota set reload failed");
    }
  }
}
