import { compressRequest, forgetRemembered, rememberedChars } from "@terse/compression";
import { expect } from "chai";
import { Counter, Histogram, Registry } from "prom-client";
import { BoundCounter, BoundHistogram } from "../src/http/bound-metrics.ts";
import { createProxyMetrics } from "../src/http/metrics.ts";

const BUCKETS = [0.005, 0.01, 0.1, 1, 10];
const OBSERVED: [string, string, number][] = [
  ["openai", "200", 0.003],
  ["openai", "200", 0.005],
  ["openai", "200", 0.4],
  ["anthropic", "429", 0.02],
  ["openai", "502", 75],
];

describe("bound metrics: what a scrape shows", () => {
  it("is what prom-client's Counter and Histogram show for the same calls", async () => {
    const ours = new Registry();
    const counter = new BoundCounter("t_requests_total", "requests", ["provider", "status"], ours);
    const histogram = new BoundHistogram("t_duration_seconds", "duration", ["provider", "status"], BUCKETS, ours);
    const theirs = new Registry();
    const promCounter = new Counter({
      name: "t_requests_total",
      help: "requests",
      labelNames: ["provider", "status"],
      registers: [theirs],
    });
    const promHistogram = new Histogram({
      name: "t_duration_seconds",
      help: "duration",
      labelNames: ["provider", "status"],
      buckets: BUCKETS,
      registers: [theirs],
    });
    for (const [provider, status, seconds] of OBSERVED) {
      counter.child(provider, status).inc();
      histogram.child(provider, status).observe(seconds);
      promCounter.inc({ provider, status });
      promHistogram.observe({ provider, status }, seconds);
    }
    const text = await ours.metrics();
    expect(text).to.equal(await theirs.metrics());
    expect(text).to.include('t_duration_seconds_bucket{le="0.005",provider="openai",status="200"} 2');
    expect(text).to.include('t_duration_seconds_bucket{le="+Inf",provider="openai",status="502"} 1');
  });

  it("keeps a child bound across a reset", async () => {
    const registry = new Registry();
    const counter = new BoundCounter("t_hits_total", "hits", ["result"], registry);
    const hit = counter.child("hit");
    hit.inc();
    registry.resetMetrics();
    hit.inc();
    expect(await registry.metrics()).to.include('t_hits_total{result="hit"} 1');
  });
});

describe("the data plane's metrics", () => {
  it("show what compression remembers between requests, read at each scrape", async () => {
    forgetRemembered();
    const metrics = createProxyMetrics({ defaultMetrics: false });
    expect(await metrics.registry.metrics()).to.include("terse_compression_remembered_chars 0");
    const result = `${"src/app/module.py: checked in 12 ms\n".repeat(2_000)}`;
    compressRequest(
      "openai",
      {
        model: "gpt-4o",
        messages: [
          { role: "user", content: "Run the checks." },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "c1", type: "function", function: { name: "bash", arguments: "{}" } }],
          },
          { role: "tool", tool_call_id: "c1", content: result },
        ],
      },
      {
        intensity: "full",
        auto_compress_input: false,
        smart_detect_enabled: false,
        context_compress: true,
        context_compress_level: "standard",
      },
    );
    const held = rememberedChars();
    expect(held).to.be.above(result.length);
    expect(await metrics.registry.metrics()).to.include(`terse_compression_remembered_chars ${held}`);
    forgetRemembered();
  });
});
