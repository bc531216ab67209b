import { FAULT_HEADER } from "@terse/fake-provider";

/** One request of a load run: its answer and when it started and ended (ms, performance.now()). */
export interface Sample {
  /** HTTP status; 0 when the connection failed. */
  status: number;
  start: number;
  end: number;
}

export interface Load {
  samples: Sample[];
  /** Resolves with every sample once `count` calls are done (never, without a count, until stopped). */
  finished: Promise<Sample[]>;
  /** Stops sending, waits for the requests in flight, returns every sample. */
  stop(): Promise<Sample[]>;
}

/**
 * `concurrency` loops, each sending one request after another until stopped or until
 * `count` calls are made. With `ratePerSecond` the loops share a steady schedule (the
 * soak), otherwise each sends as fast as its answers come back (the fault tests).
 */
export function startLoad(
  send: (n: number) => Promise<number>,
  options: { concurrency: number; ratePerSecond?: number; count?: number },
): Load {
  const samples: Sample[] = [];
  let stopped = false;
  let sent = 0;
  const began = performance.now();
  const interval = options.ratePerSecond ? 1_000 / options.ratePerSecond : 0;
  const loop = async () => {
    while (!stopped && sent < (options.count ?? Number.POSITIVE_INFINITY)) {
      const n = sent++;
      if (interval > 0) {
        const due = began + n * interval;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (stopped) return;
      }
      const start = performance.now();
      const status = await send(n).catch(() => 0);
      samples.push({ status, start, end: performance.now() });
    }
  };
  const loops = Promise.all(Array.from({ length: options.concurrency }, loop));
  const finished = loops.then(() => samples);
  return {
    samples,
    finished,
    async stop() {
      stopped = true;
      return finished;
    },
  };
}

export const PROVIDER_KEY = "sk-proj-RELIABILITYPROVIDERKEY0123456789abcdXYZ";

export interface ProxyCall {
  stream?: boolean;
  /** A fault for the fake upstream to act out (see FAULT_HEADER). */
  fault?: string;
  signal?: AbortSignal;
}

/**
 * One chat completion through the proxy, read to the end; resolves to the status.
 * A stream cut short by the upstream ends the body with an error, which still counts
 * as the status the proxy sent (the caller saw the stream start).
 */
export async function callProxy(dataPlaneUrl: string, rawKey: string, call: ProxyCall = {}): Promise<number> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${rawKey}`,
    "x-provider-key": PROVIDER_KEY,
    "content-type": "application/json",
  };
  if (call.fault) headers[FAULT_HEADER] = call.fault;
  const res = await fetch(`${dataPlaneUrl}/v1/chat/completions`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      model: "gpt-4o-mini",
      stream: call.stream === true,
      messages: [{ role: "user", content: "Say hello." }],
    }),
    signal: call.signal,
  });
  await res.arrayBuffer().catch(() => undefined);
  return res.status;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** Counts of each status among the samples. */
export function statusCounts(samples: Sample[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const s of samples) counts[s.status] = (counts[s.status] ?? 0) + 1;
  return counts;
}
