/**
 * What a service exports on /metrics, read back: prom-client's process figures (on
 * outside NODE_ENV=test), which the leak checks compare before and after a run, and
 * the services' own counters.
 */
export interface ProcessFigures {
  openFds: number;
  rssBytes: number;
  heapUsedBytes: number;
}

export async function processFigures(metricsUrl: string): Promise<ProcessFigures> {
  const text = await (await fetch(metricsUrl)).text();
  const gauge = (series: string) => {
    const found = samplesOf(text, series, {});
    if (found.length === 0) throw new Error(`${series} missing from ${metricsUrl}`);
    return sum(found);
  };
  return {
    openFds: gauge("process_open_fds"),
    rssBytes: gauge("process_resident_memory_bytes"),
    heapUsedBytes: gauge("nodejs_heap_size_used_bytes"),
  };
}

/**
 * A counter summed over the samples that carry `labels` (all of them without): 0 when
 * none has been counted yet.
 */
export async function counterTotal(
  metricsUrl: string,
  series: string,
  labels: Record<string, string> = {},
): Promise<number> {
  return sum(samplesOf(await (await fetch(metricsUrl)).text(), series, labels));
}

function samplesOf(text: string, series: string, labels: Record<string, string>): string[] {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${series} `) || l.startsWith(`${series}{`))
    .filter((l) => wanted.every((w) => l.includes(w)));
}

function sum(samples: string[]): number {
  return samples.reduce((total, line) => total + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}
