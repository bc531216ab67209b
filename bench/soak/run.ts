// Soak (issue 8): `npx tsx bench/soak/run.ts [--minutes 10] [--rate 200]`.
// The whole system as processes (a Redis of its own, a scratch database, the fake
// upstream answering at once) under a steady rate of proxy calls, half of them streams,
// while keys are created, used, rotated and revoked beside them. Every 30 s it prints
// the window's calls, unexpected answers, p50/p99 and each service's RSS; at the end,
// first window against last, and whether every call was metered.
import { parseArgs } from "node:util";
import {
  type Account,
  type CreatedKey,
  callProxy,
  percentile,
  processFigures,
  type Sample,
  type System,
  startLoad,
  startRig,
  statusCounts,
} from "@terse/reliability";
import { waitFor } from "@terse/testkit";

const { values: args } = parseArgs({
  options: { minutes: { type: "string", default: "10" }, rate: { type: "string", default: "200" } },
});
const MINUTES = Number(args.minutes);
const RATE = Number(args.rate);
const WINDOW_MS = 30_000;
/** A key is created, used, rotated and revoked this often. */
const CHURN_MS = 1_000;
const STEADY_KEYS = 4;

interface Window {
  t: number;
  calls: number;
  /** Answers other than 200, by status (0: the connection failed). */
  unexpected: Record<number, number>;
  p50: number;
  p99: number;
  rssMb: Record<string, number>;
}

async function rssOf(system: System): Promise<Record<string, number>> {
  const urls = {
    "data plane": `${system.dataPlaneUrl}/metrics`,
    "control plane": `${system.controlPlaneUrl}/metrics`,
    worker: `${system.workerMetricsUrl}/metrics`,
  };
  const out: Record<string, number> = {};
  for (const [name, url] of Object.entries(urls))
    out[name] = Math.round((await processFigures(url)).rssBytes / 2 ** 20);
  return out;
}

/** One key's life beside the traffic: created, used, rotated (old 401, new 200), revoked (401). Returns whether each step went as it must, and the two key ids. */
async function churnOnce(system: System, account: Account, n: number): Promise<{ ok: boolean; ids: string[] }> {
  const key = await system.createKey(account, `churn-${n}`);
  const used = await callProxy(system.dataPlaneUrl, key.raw_key);
  const rotated = await system.rotateKey(account, key.id);
  const successor = (await rotated.json()) as CreatedKey;
  const oldAfterRotate = await callProxy(system.dataPlaneUrl, key.raw_key);
  const newAfterRotate = await callProxy(system.dataPlaneUrl, successor.raw_key);
  const revoked = await system.revokeKey(account, successor.id);
  const newAfterRevoke = await callProxy(system.dataPlaneUrl, successor.raw_key);
  const ok =
    used === 200 &&
    rotated.status === 201 &&
    oldAfterRotate === 401 &&
    newAfterRotate === 200 &&
    revoked.status === 200 &&
    newAfterRevoke === 401;
  return { ok, ids: [key.id, successor.id] };
}

function windowOf(samples: Sample[], from: number, to: number): Sample[] {
  return samples.filter((s) => s.end > from && s.end <= to);
}

async function main(): Promise<void> {
  const rig = await startRig("soak");
  const { system } = rig;
  try {
    const account = await system.createAccount("soak@example.com");
    const keys: CreatedKey[] = [];
    for (let i = 0; i < STEADY_KEYS; i++) keys.push(await system.createKey(account, `steady-${i}`));
    const churnAccount = await system.createAccount("soak-churn@example.com");

    const load = startLoad(
      (n) => callProxy(system.dataPlaneUrl, (keys[n % STEADY_KEYS] as CreatedKey).raw_key, { stream: n % 2 === 1 }),
      { concurrency: 64, ratePerSecond: RATE },
    );
    let churned = 0;
    let churnDone = 0;
    let churnFailures = 0;
    const churnKeyIds: string[] = [];
    const churn = setInterval(() => {
      const n = churned++;
      churnOnce(system, churnAccount, n)
        .then((r) => {
          churnKeyIds.push(...r.ids);
          if (!r.ok) churnFailures++;
        })
        .catch(() => churnFailures++)
        .finally(() => churnDone++);
    }, CHURN_MS);

    const began = performance.now();
    const windows: Window[] = [];
    console.log(`soak: ${MINUTES} min at ${RATE} calls/s, a key created/rotated/revoked every ${CHURN_MS} ms`);
    console.log("| t (s) | calls | unexpected | p50 (ms) | p99 (ms) | RSS data plane / control plane / worker (MB) |");
    console.log("|---|---|---|---|---|---|");
    for (let w = 1; w * WINDOW_MS <= MINUTES * 60_000; w++) {
      await new Promise((r) => setTimeout(r, began + w * WINDOW_MS - performance.now()));
      const inWindow = windowOf(load.samples, began + (w - 1) * WINDOW_MS, began + w * WINDOW_MS);
      const latencies = inWindow.map((s) => s.end - s.start);
      const win: Window = {
        t: (w * WINDOW_MS) / 1000,
        calls: inWindow.length,
        unexpected: statusCounts(inWindow.filter((s) => s.status !== 200)),
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        rssMb: await rssOf(system),
      };
      windows.push(win);
      const rss = Object.values(win.rssMb).join(" / ");
      const unexpected = Object.entries(win.unexpected).map(([status, n]) => `${n} × ${status}`);
      const cells = [win.t, win.calls, unexpected.join(", ") || "0", win.p50.toFixed(2), win.p99.toFixed(2), rss];
      console.log(`| ${cells.join(" | ")} |`);
    }
    clearInterval(churn);
    const samples = await load.stop();
    await waitFor(() => churnDone === churned, { timeoutMs: 30_000, what: "the last churn" });

    // Every call that reached the upstream (steady and churn) is metered, once.
    const reachedUpstream = rig.fake.stats.requests;
    await waitFor(() => system.usageQueueIdle(), { timeoutMs: 120_000, what: "the usage queue drained" });
    const recorded = await waitFor(
      async () => {
        const r = await system.recorded([...keys.map((k) => k.id), ...churnKeyIds]);
        return r.events >= reachedUpstream ? r : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500, what: "every call metered" },
    ).catch(() => system.recorded([...keys.map((k) => k.id), ...churnKeyIds]));
    const first = windows[0] as Window;
    const last = windows[windows.length - 1] as Window;
    const errorRate = samples.filter((s) => s.status !== 200).length / samples.length;
    const unexpected = statusCounts(samples.filter((s) => s.status !== 200));
    console.log("");
    console.log(
      `calls: ${samples.length} (${(samples.length / (MINUTES * 60)).toFixed(1)}/s), unexpected answers: ${(errorRate * 100).toFixed(3)}% ${JSON.stringify(unexpected)}`,
    );
    console.log(`keys churned: ${churned}, churn steps not as expected: ${churnFailures}`);
    console.log(`p99 first window ${first.p99.toFixed(2)} ms, last ${last.p99.toFixed(2)} ms`);
    console.log(
      `RSS first -> last window: ${Object.keys(first.rssMb)
        .map((s) => `${s} ${first.rssMb[s]} -> ${last.rssMb[s]} MB`)
        .join(", ")}`,
    );
    const verdict = recorded.events === reachedUpstream ? "every one, once" : "MISMATCH";
    console.log(
      `metered: ${recorded.events} events for ${reachedUpstream} calls that reached the upstream (${verdict})`,
    );
  } finally {
    await rig.close();
  }
}

await main();
