import { createHash } from "node:crypto";
import { ApiError } from "@terse/errors";
import type { Redis } from "ioredis";

// DESIGN.md section 7: 10 failed logins per email or 100 per IP within 15 minutes lock
// that email or IP out for the rest of the window, correct password included. A fixed
// window per counter, started by its first attempt.
//
// Every attempt takes its slot BEFORE the password is checked (INCR, atomic), and a
// success gives it back. So parallel guesses cannot slip past the limit the way a
// "check, verify, then count" sequence would let them.

export const LOGIN_WINDOW_SECONDS = 15 * 60;
export const MAX_FAILURES_PER_EMAIL = 10;
export const MAX_FAILURES_PER_IP = 100;

// The email is hashed: Redis needs a counter name, not the address.
const emailCounter = (email: string) => `svc:login:fail:email:${createHash("sha256").update(email).digest("hex")}`;
const ipCounter = (ip: string) => `svc:login:fail:ip:${ip}`;

export class LoginThrottle {
  constructor(private readonly redis: Redis) {}

  /** Counts the attempt as a failure until `succeeded`; throws 429 with Retry-After past a limit. */
  async begin(email: string, ip: string): Promise<void> {
    const results = await this.guard(() =>
      this.redis
        .multi()
        .incr(emailCounter(email))
        .expire(emailCounter(email), LOGIN_WINDOW_SECONDS, "NX")
        .ttl(emailCounter(email))
        .incr(ipCounter(ip))
        .expire(ipCounter(ip), LOGIN_WINDOW_SECONDS, "NX")
        .ttl(ipCounter(ip))
        .exec(),
    );
    const [emailCount, , emailTtl, ipCount, , ipTtl] = (results ?? []).map(([, value]) => Number(value));
    const locked = [
      Number(emailCount) > MAX_FAILURES_PER_EMAIL ? Number(emailTtl) : 0,
      Number(ipCount) > MAX_FAILURES_PER_IP ? Number(ipTtl) : 0,
    ];
    const retryAfter = Math.max(...locked);
    if (retryAfter !== 0) {
      throw new ApiError("too_many_login_attempts", { headers: { "Retry-After": String(Math.max(retryAfter, 1)) } });
    }
  }

  /**
   * The attempt was not a failure: the email's count starts over, and the IP gets its
   * slot back (one success proves nothing about the IP's other attempts).
   */
  async succeeded(email: string, ip: string): Promise<void> {
    await this.guard(() => this.redis.multi().del(emailCounter(email)).decr(ipCounter(ip)).exec());
  }

  /** Without Redis the throttle cannot hold, so logins are refused rather than unthrottled. */
  private async guard<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (cause) {
      throw new ApiError("service_unavailable", { cause });
    }
  }
}
