import { compressRequest, countContentTokens, countInputTokens } from "@terse/compression";
import { seededRandom } from "@terse/testkit";
import { ADAPTERS, type Operation, type ReportedUsage, type WireFormat } from "@terse/wire-formats";
import { expect } from "chai";
import { newestTurnTokens, type WithoutTerse, withoutTerse } from "../src/domain/without-terse.ts";
import { type InputPrice, inputCost, ProviderCache, type SimulatedFormat } from "./prompt-cache-sim.ts";

// The estimate of what a request would have cost without terse, checked over whole agent
// sessions against the truth: the same session sent uncompressed through the same
// simulated provider cache. A compression that keeps the prefix must show its true saving;
// one that breaks the provider's cache must show as costing more than no compression,
// which the old same-share estimate could not see.

const OP: Record<"anthropic" | "openai", Operation> = {
  anthropic: { kind: "generate", method: "POST", path: "/v1/messages" },
  openai: { kind: "generate", method: "POST", path: "/v1/chat/completions" },
};
const MODEL = { anthropic: "claude-sonnet-4-5", openai: "gpt-4.1" };
const TURNS = 10;

type Body = Record<string, unknown>;

/** A command's output: 400 log lines of varied shape, a few of them errors. */
function commandOutput(turn: number): string {
  const random = seededRandom(turn + 1);
  return Array.from({ length: 400 }, (_, i) => {
    const level = random() < 0.02 ? "ERROR" : "INFO";
    return `2026-11-24T07:${String(i % 60).padStart(2, "0")}:00 ${level} job-${turn}-${i} worker ${Math.floor(random() * 9)} handled ${Math.floor(random() * 1e6)} records`;
  }).join("\n");
}

const SYSTEM = Array.from(
  { length: 120 },
  (_, i) => `Rule ${i}: keep the repository's tests green and explain each change.`,
).join("\n");

/** Request t of an agent's session, as the agent sends it: the task, then t commands and their outputs. */
function request(format: "anthropic" | "openai", t: number): Body {
  const turns = Array.from({ length: t }, (_, i) => i);
  if (format === "anthropic") {
    return {
      model: MODEL.anthropic,
      max_tokens: 1024,
      system: SYSTEM,
      messages: [
        { role: "user", content: "Find out why the nightly job fails." },
        ...turns.flatMap((i) => [
          {
            role: "assistant",
            content: [
              { type: "tool_use", id: `toolu_${i}`, name: "bash", input: { command: `tail -n 400 job-${i}.log` } },
            ],
          },
          { role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${i}`, content: commandOutput(i) }] },
        ]),
      ],
    };
  }
  return {
    model: MODEL.openai,
    messages: [
      { role: "system", content: SYSTEM },
      { role: "user", content: "Find out why the nightly job fails." },
      ...turns.flatMap((i) => [
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: `call_${i}`,
              type: "function",
              function: { name: "bash", arguments: JSON.stringify({ command: `tail -n 400 job-${i}.log` }) },
            },
          ],
        },
        { role: "tool", tool_call_id: `call_${i}`, content: commandOutput(i) },
      ]),
    ],
  };
}

/** USD per million tokens: the shipped list prices of the two models (packages/prices). */
const PRICES: Record<SimulatedFormat, InputPrice> = {
  anthropic: { input: 3, cached_input: 0.3, cache_write: 3.75 },
  openai: { input: 2, cached_input: 0.5, cache_write: 2 },
};

/** What a compression does to request t of a session; none: the proxy ran no compression. */
type Compressor = (body: Body, t: number) => { body: Body; saved: number };

/** terse's context compression, as the proxy runs it. */
const terse =
  (format: "anthropic" | "openai"): Compressor =>
  (body) => {
    const out = compressRequest(format, body, {
      intensity: "full",
      auto_compress_input: false,
      smart_detect_enabled: false,
      context_compress: true,
      context_compress_level: "standard",
    });
    return { body: out.body as Body, saved: out.input_tokens_before - out.input_tokens_after };
  };

/**
 * A compression that fits the history to a budget that moves with it: every output is cut
 * to a bit less than 60% each turn, so each new turn shortens every earlier output again
 * and the provider finds no earlier request as the prefix of the next.
 */
const budgeted =
  (format: "anthropic" | "openai"): Compressor =>
  (body, t) => {
    const cut = (text: string) => text.slice(0, Math.floor(text.length * 0.6) - 20 * t);
    const messages = (body.messages as Body[]).map((m) => {
      if (m.role === "tool") return { ...m, content: cut(String(m.content)) };
      if (m.role === "user" && Array.isArray(m.content))
        return { ...m, content: m.content.map((b: Body) => ({ ...b, content: cut(String(b.content)) })) };
      return m;
    });
    const compressed = { ...body, messages };
    return { body: compressed, saved: countInputTokens(format, body) - countInputTokens(format, compressed) };
  };

interface SessionCost {
  /** What the compressed session cost. */
  cost: number;
  /** terse's estimate of what it would have cost uncompressed. */
  estimate: number;
  /** The old same-share estimate: the compressed request's cache shares, grown with the request. */
  sameShare: number;
  /** What the uncompressed session really costs, through the same cache. */
  truth: number;
  requests: { usage: ReportedUsage; without: WithoutTerse }[];
}

function runSession(format: "anthropic" | "openai", compress: Compressor | "none", dropCacheAt?: number): SessionCost {
  const price = PRICES[format];
  const compressedCache = new ProviderCache(format);
  const uncompressedCache = new ProviderCache(format);
  const total: SessionCost = { cost: 0, estimate: 0, sameShare: 0, truth: 0, requests: [] };
  for (let t = 0; t <= TURNS; t++) {
    if (t === dropCacheAt) {
      compressedCache.forget();
      uncompressedCache.forget();
    }
    const sent = request(format, t);
    // As the proxy counts it: on the request as sent, when compression ran.
    const newest = compress === "none" ? undefined : newestTurnTokens(ADAPTERS[format], OP[format], sent);
    const { body, saved } = compress === "none" ? { body: sent, saved: 0 } : compress(sent, t);
    const usage = compressedCache.send(body);
    const without = withoutTerse(ADAPTERS[format].view, usage, saved, newest, false);
    const truth = uncompressedCache.send(sent);
    const before = without.input_tokens_before_compression;
    const grow = (n: number) => Math.round((n * before) / usage.input);
    total.cost += inputCost(price, usage.input, usage.cacheRead, usage.cacheWrite);
    total.estimate += inputCost(
      price,
      before,
      without.cache_read_tokens_before_compression,
      without.cache_write_tokens_before_compression,
    );
    total.sameShare += inputCost(price, before, grow(usage.cacheRead), grow(usage.cacheWrite));
    total.truth += inputCost(price, truth.input, truth.cacheRead, truth.cacheWrite);
    total.requests.push({ usage, without });
  }
  return total;
}

const within = (actual: number, expected: number, share: number) =>
  expect(Math.abs(actual - expected)).to.be.at.most(Math.abs(expected) * share);

describe("the cost without terse, modelled per session", () => {
  for (const format of ["anthropic", "openai"] as const) {
    describe(`${format} (${ADAPTERS[format].view.promptCache} prompt cache)`, () => {
      it("shows the true saving when compression keeps the cached prefix", () => {
        const s = runSession(format, terse(format));
        // The scenario: terse really saves, with the provider's cache working on both sides.
        expect(s.truth - s.cost).to.be.greaterThan(0.2 * s.truth);
        within(s.estimate, s.truth, 0.01);
        within(s.estimate - s.cost, s.truth - s.cost, 0.03);
      });

      it("shows a compression that breaks the provider's cache as costing more", () => {
        const s = runSession(format, budgeted(format));
        // The scenario: fewer tokens sent, a dearer session, because nothing is read from the cache.
        const sentTokens = s.requests.reduce((n, r) => n + r.usage.input, 0);
        const uncompressedTokens = s.requests.reduce((n, r) => n + r.without.input_tokens_before_compression, 0);
        expect(sentTokens).to.be.lessThan(0.7 * uncompressedTokens);
        expect(s.cost).to.be.greaterThan(s.truth);
        // The estimate sees it: negative savings, close to the true loss.
        expect(s.estimate - s.cost).to.be.lessThan(0);
        within(s.estimate, s.truth, 0.01);
        // The same-share estimate saw a saving where there was a loss.
        expect(s.sameShare - s.cost).to.be.greaterThan(0);
      });

      it("costs the same both ways for requests compression did not see, a cache drop included", () => {
        const s = runSession(format, "none", 6);
        for (const { usage, without } of s.requests) {
          expect(without).to.deep.equal({
            input_tokens_before_compression: usage.input,
            cache_read_tokens_before_compression: usage.cacheRead,
            cache_write_tokens_before_compression: usage.cacheWrite,
          });
        }
        expect(s.estimate).to.equal(s.cost);
      });
    });
  }
});

describe("withoutTerse", () => {
  const marked = { promptCache: "marked" } as const;
  const automatic = { promptCache: "automatic" } as const;
  const usage = (input: number, cacheRead: number, cacheWrite: number): ReportedUsage => ({
    input,
    output: 0,
    cacheRead,
    cacheWrite,
  });

  it("counts the request minus its newest turn as read, and the newest turn as written, where the request marks it all", () => {
    // Compression broke the prefix: the provider read nothing and wrote all 10,000.
    expect(withoutTerse(marked, usage(10_000, 0, 10_000), 5_000, 1_000, false)).to.deep.equal({
      input_tokens_before_compression: 15_000,
      cache_read_tokens_before_compression: 14_000,
      cache_write_tokens_before_compression: 1_000,
    });
  });

  it("caches no more than the request marks (a system prompt alone)", () => {
    expect(withoutTerse(marked, usage(10_000, 2_000, 0), 10_000, 1_000, false)).to.deep.equal({
      input_tokens_before_compression: 20_000,
      cache_read_tokens_before_compression: 4_000,
      cache_write_tokens_before_compression: 0,
    });
    expect(withoutTerse(marked, usage(10_000, 0, 0), 10_000, 1_000, false)).to.include({
      cache_read_tokens_before_compression: 0,
      cache_write_tokens_before_compression: 0,
    });
  });

  it("caches a prefix by itself only from 1,024 tokens where the provider caches automatically", () => {
    expect(withoutTerse(automatic, usage(1_500, 0, 0), 500, 900, false)).to.include({
      cache_read_tokens_before_compression: 1_100,
    });
    expect(withoutTerse(automatic, usage(1_400, 0, 0), 500, 1_000, false)).to.include({
      cache_read_tokens_before_compression: 0,
    });
  });

  it("never counts less read than the provider reported (a system prompt another session cached)", () => {
    expect(withoutTerse(marked, usage(8_000, 3_000, 5_000), 2_000, undefined, false)).to.deep.equal({
      input_tokens_before_compression: 10_000,
      cache_read_tokens_before_compression: 3_000,
      cache_write_tokens_before_compression: 7_000,
    });
  });

  it("keeps the compressed request's share when terse estimated the usage (no report came)", () => {
    expect(withoutTerse(automatic, usage(1_000, 0, 0), 1_000, 100, true)).to.deep.equal({
      input_tokens_before_compression: 2_000,
      cache_read_tokens_before_compression: 0,
      cache_write_tokens_before_compression: 0,
    });
  });

  it("takes a negative saving (the instruction on a short request) as a smaller request without terse", () => {
    expect(withoutTerse(automatic, usage(500, 0, 0), -40, 100, false).input_tokens_before_compression).to.equal(460);
    expect(withoutTerse(automatic, usage(30, 0, 0), -40, undefined, false).input_tokens_before_compression).to.equal(0);
  });
});

describe("newestTurnTokens", () => {
  const count = (parts: unknown[]) => parts.reduce<number>((n, p) => n + countContentTokens(p), 0);

  for (const format of ["anthropic", "openai", "gemini", "openai-responses"] as WireFormat[]) {
    it(`${format}: undefined for a session's first request and a list of models`, () => {
      const body = bodies[format]([]);
      const op: Operation = { kind: "generate", method: "POST", path: "/" };
      expect(newestTurnTokens(ADAPTERS[format], op, body)).to.equal(undefined);
      expect(newestTurnTokens(ADAPTERS[format], { kind: "list_models", method: "GET", path: "/" }, body)).to.equal(
        undefined,
      );
    });

    it(`${format}: counts the latest model turn and what follows it`, () => {
      const body = bodies[format](["first output", "second output"]);
      const op: Operation = { kind: "generate", method: "POST", path: "/" };
      const newest = ADAPTERS[format].view.newestTurn(body) as unknown[];
      expect(JSON.stringify(newest)).to.include("second output").and.not.include("first output");
      expect(newestTurnTokens(ADAPTERS[format], op, body)).to.equal(count(newest));
    });
  }

  it("openai-responses: with previous_response_id every item sent is new", () => {
    const body = {
      model: "gpt-4.1",
      previous_response_id: "resp_1",
      input: [{ type: "function_call_output", call_id: "c", output: "x" }],
    };
    expect(ADAPTERS["openai-responses"].view.newestTurn(body)).to.deep.equal(body.input);
  });

  it("openai-responses: a turn of reasoning and several tool calls is one turn", () => {
    const items = [
      { role: "user", content: "go" },
      { type: "reasoning", id: "rs_1", summary: [] },
      { type: "function_call", call_id: "a", name: "bash", arguments: "{}" },
      { type: "function_call", call_id: "b", name: "bash", arguments: "{}" },
      { type: "function_call_output", call_id: "a", output: "A" },
      { type: "function_call_output", call_id: "b", output: "B" },
    ];
    expect(ADAPTERS["openai-responses"].view.newestTurn({ model: "m", input: items })).to.deep.equal(items.slice(1));
  });
});

/** A session's request in each format with one command per output. */
const bodies: Record<WireFormat, (outputs: string[]) => Body> = {
  anthropic: (outputs) => ({
    model: "claude-sonnet-4-5",
    max_tokens: 10,
    system: "be brief",
    messages: [
      { role: "user", content: "go" },
      ...outputs.flatMap((o, i) => [
        { role: "assistant", content: [{ type: "tool_use", id: `t${i}`, name: "bash", input: { command: "ls" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: `t${i}`, content: o }] },
      ]),
    ],
  }),
  openai: (outputs) => ({
    model: "gpt-4.1",
    messages: [
      { role: "user", content: "go" },
      ...outputs.flatMap((o, i) => [
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: `c${i}`, type: "function", function: { name: "bash", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: `c${i}`, content: o },
      ]),
    ],
  }),
  gemini: (outputs) => ({
    contents: [
      { role: "user", parts: [{ text: "go" }] },
      ...outputs.flatMap((o) => [
        { role: "model", parts: [{ functionCall: { name: "bash", args: {} } }] },
        { role: "user", parts: [{ functionResponse: { name: "bash", response: { output: o } } }] },
      ]),
    ],
  }),
  "openai-responses": (outputs) => ({
    model: "gpt-4.1",
    input: [
      { role: "user", content: "go" },
      ...outputs.flatMap((o, i) => [
        { type: "function_call", call_id: `c${i}`, name: "bash", arguments: "{}" },
        { type: "function_call_output", call_id: `c${i}`, output: o },
      ]),
    ],
  }),
};
