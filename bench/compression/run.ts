// Compression on real agent sessions: `npx tsx bench/compression/run.ts`.
// Replays every agent session of ../shared/corpus (and grown copies with 100 KB-1 MB
// tool results) turn by turn in the OpenAI, Anthropic and Gemini formats, compresses
// every request at every context level, runs input compression over the MT-Bench
// prompts, and writes docs/compression.md.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CONTEXT_LEVELS, compressInputText, countExactTokens, type Provider, segment } from "@terse/compression";
import { REPO_ROOT } from "@terse/testkit";
import { loadMtBench, loadSessions, type Session } from "./corpus.ts";
import { partsOf, toProvider } from "./formats.ts";
import { generateLargeSessions } from "./generated.ts";
import { percentile, tokensOf } from "./metrics.ts";
import { type Replay, replay } from "./replay.ts";

const PROVIDERS: Provider[] = ["openai", "anthropic", "gemini"];
const LEVELS = Object.keys(CONTEXT_LEVELS) as (keyof typeof CONTEXT_LEVELS)[];
const pc = (x: number) => `${(x * 100).toFixed(1)}%`;
const ms = (x: number) => x.toFixed(2);

function replayAll(sessions: Session[]): Map<string, Replay[]> {
  const out = new Map<string, Replay[]>();
  for (const provider of PROVIDERS) {
    for (const level of LEVELS) {
      const t0 = Date.now();
      out.set(
        `${provider}/${level}`,
        sessions.map((s) => replay(provider, s, level)),
      );
      console.error(`${provider}/${level}: ${sessions.length} sessions in ${Date.now() - t0} ms`);
    }
  }
  return out;
}

const sum = (rs: Replay[], f: (r: Replay) => number) => rs.reduce((n, r) => n + f(r), 0);
const ratioOf = (r: Replay) => (r.needed === 0 ? 1 : r.retained / r.needed);

function levelTable(results: Map<string, Replay[]>): string[] {
  const lines = [
    "| format | level | reduction per request, median / p90 | sessions' medians, median | cached cost after / before (whole corpus) | sessions cheaper / dearer | prefix-stable pairs | retention median / worst tenth | time per request p50 / p99 | per 100 KB p50 / p99 | pairing valid (of requests valid before) | assistant turns unchanged |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const [key, rs] of results) {
    const [provider, level] = key.split("/");
    const all = rs.flatMap((r) => r.reductions);
    const medians = rs.map((r) => percentile(r.reductions, 50));
    const ret = rs.filter((r) => r.needed > 0).map(ratioOf);
    const times = rs.flatMap((r) => r.times);
    const per100 = rs.flatMap((r) => r.timesPer100k);
    const cheaper = rs.filter((r) => r.costAfter < r.costBefore).length;
    const dearer = rs.filter((r) => r.costAfter > r.costBefore).length;
    lines.push(
      `| ${provider} | ${level} | ${pc(percentile(all, 50))} / ${pc(percentile(all, 90))} | ${pc(percentile(medians, 50))} | ${(sum(rs, (r) => r.costAfter) / sum(rs, (r) => r.costBefore)).toFixed(3)} | ${cheaper} / ${dearer} of ${rs.length} | ${sum(rs, (r) => r.stablePairs)} of ${sum(rs, (r) => r.pairs)} | ${pc(percentile(ret, 50))} / ${pc(percentile(ret, 10))} | ${ms(percentile(times, 50))} / ${ms(percentile(times, 99))} ms | ${per100.length ? `${ms(percentile(per100, 50))} / ${ms(percentile(per100, 99))} ms` : "-"} | ${sum(rs, (r) => r.pairingChecks - r.pairingFailures)} of ${sum(rs, (r) => r.pairingChecks)} | ${sum(rs, (r) => r.assistantChecks - r.assistantChanged)} of ${sum(rs, (r) => r.assistantChecks)} |`,
    );
  }
  return lines;
}

function perSessionTable(results: Map<string, Replay[]>, provider: Provider): string[] {
  const lines = [
    `| session | requests | ${LEVELS.map((l) => `${l} median / p90`).join(" | ")} | ${LEVELS.map((l) => `${l} cost ratio`).join(" | ")} | ${LEVELS.map((l) => `${l} retention`).join(" | ")} |`,
    `|---|---|${LEVELS.map(() => "---|").join("")}${LEVELS.map(() => "---|").join("")}${LEVELS.map(() => "---|").join("")}`,
  ];
  const byLevel = LEVELS.map((l) => results.get(`${provider}/${l}`) ?? []);
  for (const [i, r] of (byLevel[0] ?? []).entries()) {
    const at = byLevel.map((rs) => rs[i] as Replay);
    lines.push(
      `| ${r.session} | ${r.times.length} | ${at.map((x) => `${pc(percentile(x.reductions, 50))} / ${pc(percentile(x.reductions, 90))}`).join(" | ")} | ${at.map((x) => (x.costAfter / x.costBefore).toFixed(3)).join(" | ")} | ${at.map((x) => (x.needed ? `${pc(ratioOf(x))} of ${x.needed}` : "-")).join(" | ")} |`,
    );
  }
  return lines;
}

/**
 * For scale, each a rule applied to every tool result: the naive rule of the issue; the
 * most `conservative` could save (every result it may touch, those of 16,000 characters
 * or more, deleted outright); and the most any level could save (every result deleted).
 */
const REFERENCE_RULES: { label: string; rule: (text: string) => string }[] = [
  {
    label: "naive rule (results over 16,000 characters cut to first and last 4,000)",
    rule: (text) => (text.length > 16_000 ? text.slice(0, 4_000) + text.slice(-4_000) : text),
  },
  {
    label: "ceiling with results under 16,000 characters untouched (every longer one deleted)",
    rule: (text) => (text.length >= 16_000 ? "" : text),
  },
  { label: "ceiling (every tool result deleted)", rule: () => "" },
];

function references(sessions: Session[]): string[] {
  const reductions = REFERENCE_RULES.map((): number[] => []);
  for (const s of sessions) {
    const ps = toProvider("anthropic", s);
    const variants = REFERENCE_RULES.map(({ rule }) =>
      toProvider("anthropic", {
        ...s,
        messages: s.messages.map((m) => ({
          role: m.role,
          content: m.content.map((b) => (b.type === "tool_result" ? { ...b, content: rule(b.content) } : b)),
        })),
      }),
    );
    for (const [i, m] of s.messages.entries()) {
      if (m.role !== "user") continue;
      const tb = tokensOf(partsOf("anthropic", ps.body(ps.perMessage.slice(0, i + 1).flat())));
      for (const [r, v] of variants.entries()) {
        reductions[r]?.push(1 - tokensOf(partsOf("anthropic", v.body(v.perMessage.slice(0, i + 1).flat()))) / tb);
      }
    }
  }
  return REFERENCE_RULES.map(
    ({ label }, r) =>
      `| ${label} | ${pc(percentile(reductions[r] ?? [], 50))} / ${pc(percentile(reductions[r] ?? [], 90))} |`,
  );
}

function mtBench(): string[] {
  let before = 0;
  let after = 0;
  let prose = 0;
  let spans = 0;
  let changed = 0;
  const times: number[] = [];
  const turns = loadMtBench();
  for (const turn of turns) {
    const t0 = process.hrtime.bigint();
    const out = compressInputText(turn);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    before += countExactTokens(turn);
    after += countExactTokens(out);
    let at = 0;
    for (const s of segment(turn)) {
      if (!s.protected) {
        prose += countExactTokens(s.text);
        continue;
      }
      spans++;
      const found = out.indexOf(s.text, at);
      if (found < 0) changed++;
      else at = found + s.text.length;
    }
  }
  return [
    "| turns | tokens before | tokens after | reduction (whole prompt) | reduction of the prose tokens | protected spans | changed | time per prompt p99 |",
    "|---|---|---|---|---|---|---|---|",
    `| ${turns.length} | ${before} | ${after} | ${pc(1 - after / before)} | ${pc((before - after) / prose)} | ${spans} | ${changed} | ${ms(percentile(times, 99))} ms |`,
  ];
}

function estimateLine(results: Map<string, Replay[]>): string {
  const errors = [...results.values()].flat().flatMap((r) => r.estimateErrors);
  return `Token-count estimate of \`compressRequest\` (each text exact up to 3,000 characters and sampled above, JSON punctuation estimated per field) against exact counts: median error ${pc(percentile(errors, 50))}, p99 ${pc(percentile(errors, 99))}.`;
}

const sessions = loadSessions();
const quick = process.argv.includes("--quick");
const large = generateLargeSessions(sessions);
const real = replayAll(sessions);
const grown = quick ? new Map<string, Replay[]>() : replayAll(large);
const requests = sum(real.get("anthropic/standard") ?? [], (r) => r.times.length);
const grownRequests = sum(grown.get("anthropic/standard") ?? [], (r) => r.times.length);
const sizes = large.flatMap((s) =>
  s.messages.flatMap((m) =>
    m.content.flatMap((b) => (b.type === "tool_result" && b.content.length >= 100_000 ? [b.content.length] : [])),
  ),
);

const doc = [
  "# Compression on real agent sessions",
  "",
  "Generated by `npx tsx bench/compression/run.ts` (a few minutes); do not edit by hand.",
  "",
  `Sessions: ${sessions.length} from \`../shared/corpus\` (claude-code-hive-mind, openhands-example, swe-agent-trajectories;`,
  `the SWE-agent runs without function calling have each observation turned into the tool result of its action),`,
  `${requests} requests each, replayed turn by turn: request t is the history up to user turn t as the agent sent it,`,
  "converted to each provider's format (OpenAI `tool_calls` / role `tool`, Anthropic `tool_use` / `tool_result`, Gemini",
  "`functionCall` / `functionResponse`), compressed with `context_compress` at each level (response instruction `full`,",
  "smart detect and input compression off). Tokens: gpt-tokenizer o200k, exact, per message (the stand-in for",
  "Anthropic's and Gemini's tokenizers, which are not published for offline use). Cached cost: each request's prefix",
  "shared with the previous request (at message granularity) billed at 10%, the rest at 100%, summed over the session.",
  "Prefix-stable: the compressed pair shares at least the prefix the uncompressed pair shared. Retention: of the paths,",
  "identifiers, numbers and hashes a tool result brought into the conversation and an assistant turn after it used,",
  "the share still present in the compressed messages up to that result (per session; median and worst tenth).",
  "Time: `compressRequest` on each request freshly parsed, in a pass of its own per session (the exact token counts",
  "of the measurements above make garbage the data plane never makes, and its collections would land in the timed",
  "calls), its token memory empty at the session's start; per 100 KB over the requests of at least 100 KB.",
  "",
  "What a level does (`packages/compression/src/context`, thresholds in `levels.ts`): a tool result identical to an earlier one",
  "becomes a reference to it; runs of lines an earlier result shows become references; a long result is shortened by its content",
  "(JSON by structure, logs to head, tail and error lines, look-alike runs to their first and last line), and the paths,",
  "identifiers and hashes of what a cut removed are listed once beside it (`[terse: the omitted part mentions: ...]`), so the",
  "agent still sees the names it may need. Each result's compressed form depends only on it and the results before it.",
  "",
  "## Real sessions",
  "",
  ...levelTable(real),
  "",
  "For scale, on the same requests (Anthropic format), reduction per request median / p90:",
  "",
  "| reference | median / p90 |",
  "|---|---|",
  ...references(sessions),
  "",
  "Per session (Anthropic format):",
  "",
  ...perSessionTable(real, "anthropic"),
  "",
  "## Generated sessions with 100 KB to 1 MB tool results",
  "",
  `${large.length} copies of the larger Claude Code sessions with ${sizes.length} results grown to ${Math.round(Math.min(...sizes) / 1000)}-${Math.round(Math.max(...sizes) / 1000)} KB`,
  `(build logs, test output and JSON dumps made of the corpus's own lines and objects; \`bench/compression/generated.ts\`),`,
  `${grownRequests} requests each. Reported apart: here the targets of issue 5 are reachable, on the real sessions they are not.`,
  "",
  ...levelTable(grown),
  "",
  ...perSessionTable(grown, "anthropic"),
  "",
  estimateLine(new Map([...real, ...grown])),
  "",
  "## Input compression on the MT-Bench prompts",
  "",
  ...mtBench(),
  "",
];
if (!quick) writeFileSync(join(REPO_ROOT, "docs", "compression.md"), doc.join("\n"));
console.log(doc.join("\n"));
