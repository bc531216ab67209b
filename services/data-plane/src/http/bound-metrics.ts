import type { Registry } from "prom-client";

// Counters and histograms for the per-request metrics, kept in plain numbers per label
// set and formatted by prom-client's registry at scrape time. prom-client's own metrics
// check and hash the label object on every call, also through a child from labels():
// with four per request that was some 9 µs of a proxied request's CPU (docs/benchmarks.md).
// Here a label set is looked up once, when its child is first asked for, and a call is
// an addition. What a scrape shows is what prom-client's Counter and Histogram show.

type Labels = Record<string, string>;

/** One label set's numbers; reset in place, so children handed out stay bound. */
interface Series {
  labels: Labels;
  value: number;
  /** Histograms: observations per bucket (not cumulative), then the sum. */
  buckets: number[];
}

/** The metric object prom-client's Registry reads (`get`) and resets (`reset`). */
abstract class BoundMetric {
  protected readonly series = new Map<string, Series>();
  readonly aggregator = "sum";

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Parameters<Registry["registerMetric"]>[0]);
  }

  protected seriesOf(values: readonly string[], buckets: number): Series {
    const key = values.join("\u0000");
    let s = this.series.get(key);
    if (s === undefined) {
      const labels: Labels = {};
      this.labelNames.forEach((name, i) => {
        labels[name] = values[i] ?? "";
      });
      s = { labels, value: 0, buckets: new Array<number>(buckets).fill(0) };
      this.series.set(key, s);
    }
    return s;
  }

  reset(): void {
    for (const s of this.series.values()) {
      s.value = 0;
      s.buckets.fill(0);
    }
  }
}

export class BoundCounter extends BoundMetric {
  readonly type = "counter";

  /** The counter of one label set (values in the order of the label names). */
  child(...values: string[]): { inc(): void } {
    const s = this.seriesOf(values, 0);
    return {
      inc: () => {
        s.value++;
      },
    };
  }

  get() {
    const values = [...this.series.values()].map((s) => ({ labels: s.labels, value: s.value }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export class BoundHistogram extends BoundMetric {
  readonly type = "histogram";

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly upperBounds: readonly number[],
    registry: Registry,
  ) {
    super(name, help, labelNames, registry);
  }

  /** The histogram of one label set; `value` in the series is the sum of what it observed. */
  child(...values: string[]): { observe(value: number): void } {
    const s = this.seriesOf(values, this.upperBounds.length + 1);
    const bounds = this.upperBounds;
    return {
      observe: (value) => {
        let i = 0;
        while (i < bounds.length && value > (bounds[i] as number)) i++;
        s.buckets[i] = (s.buckets[i] ?? 0) + 1;
        s.value += value;
      },
    };
  }

  /** prom-client's histogram layout: cumulative `_bucket`s by `le`, then `_sum` and `_count`. */
  get() {
    const values: { labels: Labels; sharedLabels: Labels; value: number; metricName: string }[] = [];
    for (const s of this.series.values()) {
      let count = 0;
      this.upperBounds.forEach((le, i) => {
        count += s.buckets[i] ?? 0;
        values.push({
          labels: { le: String(le) },
          sharedLabels: s.labels,
          value: count,
          metricName: `${this.name}_bucket`,
        });
      });
      count += s.buckets[this.upperBounds.length] ?? 0;
      values.push({ labels: { le: "+Inf" }, sharedLabels: s.labels, value: count, metricName: `${this.name}_bucket` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.value, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}
