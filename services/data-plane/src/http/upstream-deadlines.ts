import type { ClientRequest } from "node:http";
import type { Socket } from "node:net";

/** Why an upstream request was given up. */
export type Expiry = "connect" | "idle";

export interface DeadlineLimits {
  /** From the request's start while its socket is not connected yet. */
  connectMs: number;
  /** No byte either way for this long (models can think for minutes). */
  idleMs: number;
}

/** What the sweep knows of a socket's current request; times are counted in sweeps. */
interface SocketWatch {
  req: ClientRequest | null;
  since: number;
  /** The socket's bytes read and written when last looked at (-1: not yet), and since which sweep they stood still. */
  activity: number;
  quietSince: number;
}

const WATCH = Symbol("terse.upstreamWatch");
const EXPIRED = Symbol("terse.upstreamExpired");
type WatchedSocket = Socket & { [WATCH]?: SocketWatch; _httpMessage?: ClientRequest | null };
type ExpiredRequest = ClientRequest & { [EXPIRED]?: Expiry };

/** Why `req` was given up by its deadlines, if it was. */
export const expiryOf = (req: ClientRequest | undefined): Expiry | undefined =>
  (req as ExpiredRequest | undefined)?.[EXPIRED];

/**
 * The connect and idle deadlines of every upstream request in flight, kept by one sweep
 * over the upstream sockets instead of a timer per request (as undici's fast timers and
 * Node's own server timeouts do). A socket timeout per request was armed and disarmed on
 * every request (the agent clears a freed socket's timeout) and re-armed by every read
 * and write. Here a socket is watched once, when it first carries a request; the sweep
 * finds each socket's current request (`_httpMessage`, what Node's agent itself uses)
 * and its byte counters, so a request costs nothing (a first cut kept an entry per
 * request in a Set, and the proxy's garbage collection grew by two thirds:
 * docs/benchmarks.md). A deadline fires between its limit and two sweep periods later;
 * a period is a tenth of the shorter limit, at most a second.
 */
export class UpstreamDeadlines {
  private readonly sockets = new Set<WatchedSocket>();
  private timer: NodeJS.Timeout | undefined;
  /** Sweeps so far: the clock deadlines are counted in. */
  private sweeps = 0;
  readonly periodMs: number;
  private readonly connectSweeps: number;
  private readonly idleSweeps: number;

  constructor(limits: DeadlineLimits) {
    this.periodMs = Math.max(5, Math.min(1_000, Math.min(limits.connectMs, limits.idleMs) / 10));
    // A request watched just before a sweep has seen almost none of that sweep's period:
    // one sweep more, so that no connect deadline fires early. Quiet time needs none: the
    // last byte came before the sweep that first saw it.
    this.connectSweeps = Math.ceil(limits.connectMs / this.periodMs) + 1;
    this.idleSweeps = Math.ceil(limits.idleMs / this.periodMs);
  }

  /** Puts `req`, which has its socket, under the deadlines until it ends. */
  watch(req: ClientRequest): void {
    const socket = req.socket as WatchedSocket | null;
    if (!socket || socket[WATCH]) return; // a kept-alive socket: the sweep finds its new request itself
    socket[WATCH] = { req, since: this.sweeps, activity: -1, quietSince: this.sweeps };
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
    // Runs while any upstream socket is open: a sweep that finds none stops it.
    this.timer ??= setInterval(() => this.sweep(), this.periodMs).unref();
  }

  get size(): number {
    return this.sockets.size;
  }

  /** One look at every upstream socket: the timer's, every period (tests call it themselves). */
  sweep(): void {
    const now = ++this.sweeps;
    for (const socket of this.sockets) {
      const w = socket[WATCH] as SocketWatch;
      const req = socket._httpMessage;
      if (!req || req.destroyed) {
        // In the pool: nothing to time out, and the ended request (with all that its listeners
        // hold, the caller's exchange among them) is not kept until the socket's next one.
        w.req = null;
        continue;
      }
      const why = this.expiry(socket, w, req, now);
      if (!why) continue;
      (req as ExpiredRequest)[EXPIRED] = why;
      req.destroy(new Error(`upstream ${why} timeout`));
    }
    if (this.sockets.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private expiry(socket: Socket, w: SocketWatch, req: ClientRequest, now: number): Expiry | undefined {
    if (w.req !== req) {
      // A new request on a kept-alive socket since the last look.
      w.req = req;
      w.since = now;
      w.activity = -1;
      w.quietSince = now;
    }
    if (socket.connecting) return now - w.since >= this.connectSweeps ? "connect" : undefined;
    const activity = socket.bytesRead + socket.bytesWritten;
    if (activity !== w.activity) {
      w.activity = activity;
      w.quietSince = now;
      return undefined;
    }
    return now - w.quietSince >= this.idleSweeps ? "idle" : undefined;
  }
}
