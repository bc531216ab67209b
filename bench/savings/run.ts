// The estimate of the cost without terse (docs/savings.md) against the truth, on the
// corpus's agent sessions: each session replayed request by request, compressed as the
// data plane does, through a simulated provider prompt cache
// (services/data-plane/test/prompt-cache-sim.ts); the truth is the same session sent
// uncompressed through the same cache. Also what the earlier same-share estimate said, and
// a compression that breaks the cache (every result re-cut each turn).
//
//   npx tsx bench/savings/run.ts [--sessions n]
import { compressRequest, countInputTokens, type Provider } from "@terse/compression";
import { ADAPTERS } from "../../packages/wire-formats/src/index.ts";
import { newestTurnTokens, withoutTerse } from "../../services/data-plane/src/domain/without-terse.ts";
import {
  type InputPrice,
  inputCost,
  ProviderCache,
  type SimulatedFormat,
} from "../../services/data-plane/test/prompt-cache-sim.ts";
import { loadFolder, type Session } from "../compression/corpus.ts";
import { toProvider } from "../compression/formats.ts";
import { percentile } from "../compression/metrics.ts";

type Json = Record<string, unknown>;

/** The shipped list prices (packages/prices) of the models the replay names. */
const PRICES: Record<SimulatedFormat, InputPrice> = {
  anthropic: { input: 3, cached_input: 0.3, cache_write: 3.75 },
  openai: { input: 2.5, cached_input: 1.25, cache_write: 2.5 },
};
const OP = {
  anthropic: { kind: "generate", method: "POST", path: "/v1/messages" },
  openai: { kind: "generate", method: "POST", path: "/v1/chat/completions" },
} as const;

type Compressor = (format: Provider, body: Json, turn: number) => { body: Json; saved: number };

const terse: Compressor = (format, body) => {
  const out = compressRequest(format, body, {
    intensity: "full",
    auto_compress_input: false,
    smart_detect_enabled: false,
    context_compress: true,
    context_compress_level: "standard",
  });
  return { body: out.body as Json, saved: out.input_tokens_before - out.input_tokens_after };
};

/** Every tool result over 2,000 characters cut to 60% less 20 characters a turn: a new cut of each, every turn. */
const recutting: Compressor = (format, body, turn) => {
  const cut = (text: string) => (text.length > 2_000 ? text.slice(0, Math.floor(text.length * 0.6) - 20 * turn) : text);
  const messages = (body.messages as Json[]).map((m) => {
    if (m.role === "tool" && typeof m.content === "string") return { ...m, content: cut(m.content) };
    if (m.role === "user" && Array.isArray(m.content)) {
      const content = m.content.map((b: Json) =>
        b.type === "tool_result" && typeof b.content === "string" ? { ...b, content: cut(b.content) } : b,
      );
      return { ...m, content };
    }
    return m;
  });
  const compressed = { ...body, messages };
  return { body: compressed, saved: countInputTokens(format, body) - countInputTokens(format, compressed) };
};

interface SessionMoney {
  cost: number;
  estimate: number;
  sameShare: number;
  truth: number;
}

function replay(format: SimulatedFormat, session: Session, compress: Compressor): SessionMoney {
  const price = PRICES[format];
  const ps = toProvider(format, session);
  const compressedCache = new ProviderCache(format);
  const uncompressedCache = new ProviderCache(format);
  const m: SessionMoney = { cost: 0, estimate: 0, sameShare: 0, truth: 0 };
  let turn = 0;
  for (const [i, message] of session.messages.entries()) {
    if (message.role !== "user") continue;
    const sent = JSON.parse(JSON.stringify(ps.body(ps.perMessage.slice(0, i + 1).flat()))) as Json;
    const newest = newestTurnTokens(ADAPTERS[format], OP[format], sent);
    const { body, saved } = compress(format, sent, turn++);
    const usage = compressedCache.send(body);
    const without = withoutTerse(ADAPTERS[format].view, usage, saved, newest, false);
    const before = without.input_tokens_before_compression;
    const grow = (n: number) => (usage.input > 0 ? Math.round((n * before) / usage.input) : 0);
    const truth = uncompressedCache.send(sent);
    m.cost += inputCost(price, usage.input, usage.cacheRead, usage.cacheWrite);
    m.estimate += inputCost(
      price,
      before,
      without.cache_read_tokens_before_compression,
      without.cache_write_tokens_before_compression,
    );
    m.sameShare += inputCost(price, before, grow(usage.cacheRead), grow(usage.cacheWrite));
    m.truth += inputCost(price, truth.input, truth.cacheRead, truth.cacheWrite);
  }
  return m;
}

const limit = Number(process.argv[process.argv.indexOf("--sessions") + 1]) || Number.POSITIVE_INFINITY;
const folders = ["mini-swe-agent", "claude-code-hive-mind", "openhands-example"] as const;
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const usd = (x: number) => x.toFixed(2);

console.log(
  "| folder | format | compression | sessions | cost | without terse: true | estimate | same-share | saved: true | estimate | same-share | estimate's error per session, median / p90 | sessions dearer: true / estimate / same-share |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const folder of folders) {
  const sessions = loadFolder(folder).slice(0, limit);
  for (const format of ["anthropic", "openai"] as const) {
    for (const [name, compress] of [
      ["terse standard", terse],
      ["re-cut every turn", recutting],
    ] as const) {
      const runs = sessions.map((s) => replay(format, s, compress)).filter((r) => r.truth > 0);
      const sum = (k: keyof SessionMoney) => runs.reduce((n, r) => n + r[k], 0);
      const errors = runs.map((r) => Math.abs(r.estimate - r.truth) / r.truth);
      const dearer = (k: keyof SessionMoney) => runs.filter((r) => r.cost > r[k]).length;
      console.log(
        `| ${folder} | ${format} | ${name} | ${runs.length} | ${usd(sum("cost"))} | ${usd(sum("truth"))} | ${usd(sum("estimate"))} | ${usd(sum("sameShare"))} | ${usd(sum("truth") - sum("cost"))} | ${usd(sum("estimate") - sum("cost"))} | ${usd(sum("sameShare") - sum("cost"))} | ${pct(percentile(errors, 50))} / ${pct(percentile(errors, 90))} | ${dearer("truth")} / ${dearer("estimate")} / ${dearer("sameShare")} |`,
      );
    }
  }
}
