// One session replayed turn by turn in one provider's format at one level: every
// request compressed as the data plane would, measured against the request as sent.

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import {
  type CompressionSettings,
  type ContextCompressLevel,
  compressRequest,
  countInputTokens,
  forgetRemembered,
  type Provider,
  pairingProblems,
} from "@terse/compression";
import { ADAPTERS, ObservationReader } from "../../packages/wire-formats/src/index.ts";
import type { Session } from "./corpus.ts";
import { partsOf, toProvider, withoutInstruction } from "./formats.ts";
import { cachedCost, partCounts, sharedParts, sumOf } from "./metrics.ts";
import { reference } from "./reference.ts";

export interface Replay {
  session: string;
  reductions: number[];
  tokensBefore: number[];
  tokensAfter: number[];
  costBefore: number;
  costAfter: number;
  pairs: number;
  stablePairs: number;
  times: number[];
  /** Milliseconds per 100 KB of body, for requests of at least 100 KB. */
  timesPer100k: number[];
  /** The same in CPU time of the process: on a shared machine, wall time also counts the waits for a core. */
  cpuPer100k: number[];
  pairingChecks: number;
  pairingFailures: number;
  assistantChecks: number;
  assistantChanged: number;
  /** The part of costAfter that is the terse_recall declaration (recallDeclaration). */
  toolCost: number;
  /** |estimated - exact| / exact of input_tokens_before. */
  estimateErrors: number[];
  retained: number;
  needed: number;
  /** A sample of the names lost. */
  lost?: string[];
}

const settings = (level: ContextCompressLevel): CompressionSettings => ({
  intensity: "full",
  auto_compress_input: false,
  smart_detect_enabled: false,
  context_compress: true,
  context_compress_level: level,
  // As the product runs it: with context compression on, every cut names its recall handle.
  recall: true,
});

type Json = Record<string, unknown>;

/**
 * The terse_recall tool's declaration in the provider's format. The data plane adds it to
 * every request of a key with context compression on, from a session's first request on
 * (docs/recall.md), so it is part of what the user pays for: one part before the messages,
 * the same in every request, so cached after the first like the rest of the prefix.
 */
const recallDeclaration = (provider: Provider): string => JSON.stringify(ADAPTERS[provider].recall.withTool({}).tools);

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/**
 * A full collection whose sweep is done before it returns. After a collection V8 sweeps
 * the heap's pages on a helper thread, and with the benchmark's heap (the whole corpus,
 * hundreds of MB) that sweep was still running during the next timed call, which it
 * slowed by up to half on the 2 cores (the first request of a large generated session,
 * 550 KB: 7.3 ms alone, 12-15 ms right after a collection, 7.5 ms after a 200 ms pause).
 * The data plane forces no collection, and its heap is small.
 */
function collectGarbage(): void {
  setFlagsFromString("--no-concurrent-sweeping");
  gc();
  setFlagsFromString("--concurrent-sweeping");
}

/** Timed passes over each session; each request's figure is its fastest. */
const TIMED_PASSES = 3;

/**
 * Each request of the session compressed and timed, and nothing else: the measurements of
 * `replay` tokenize whole bodies exactly, garbage the data plane never makes, and their
 * collections would land in the timed calls. The token memory starts empty, as in a fresh
 * process, and fills turn by turn as it does serving one session.
 *
 * The session is timed TIMED_PASSES times, each from an empty memory, and each request
 * counts its fastest pass (wall and CPU apart): on the shared 2-core machine a call often
 * waits for a core or meets a collection of the benchmark's own heap (the whole corpus),
 * which one pass times as compression; the work is the same in every pass.
 */
export function timeSession(provider: Provider, session: Session, level: ContextCompressLevel) {
  const ps = toProvider(provider, session);
  // Each request's end (in messages); its text is made again in each pass, as holding a
  // session's requests at once would take hundreds of MB for the generated ones.
  const ends = session.messages.flatMap((m, i) => (m.role === "user" ? [i + 1] : []));
  const wireOf = (end: number) => JSON.stringify(ps.body(ps.perMessage.slice(0, end).flat()));
  const sizes = ends.map(() => 0);
  const wall = ends.map(() => Number.POSITIVE_INFINITY);
  const cpu = ends.map(() => Number.POSITIVE_INFINITY);
  // The benchmark holds the whole corpus in its heap (hundreds of MB the data plane never
  // holds); a full collection of it landing in a timed call would be timed as compression.
  // So the heap is collected before each pass over a session whose requests reach 100 KB.
  const large = JSON.stringify(ps.perMessage).length >= 100_000;
  for (let pass = 0; pass < TIMED_PASSES; pass++) {
    forgetRemembered();
    if (large) collectGarbage();
    for (const [k, end] of ends.entries()) {
      const wire = wireOf(end);
      sizes[k] = wire.length;
      // Parsed afresh, as the data plane parses each request: no string is shared with the
      // previous turn's request, so nothing is found by identity that would not be in production.
      const body = JSON.parse(wire) as Json;
      const cpu0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      compressRequest(provider, body, settings(level));
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const used = process.cpuUsage(cpu0);
      wall[k] = Math.min(wall[k] as number, ms);
      cpu[k] = Math.min(cpu[k] as number, (used.user + used.system) / 1000);
    }
  }
  const per100k = (xs: number[]) =>
    sizes.flatMap((size, k) => (size >= 100_000 ? [(xs[k] as number) / (size / 100_000)] : []));
  return { times: wall, timesPer100k: per100k(wall), cpuPer100k: per100k(cpu) };
}

/**
 * Referenced-span retention of one compressed request, as ../shared/tools/retention.mjs
 * defines it: the names a tool result introduced whose first use is the assistant turn this
 * request produced (message `next`), still visible at or before that result. Each (result,
 * name) pair is so counted once, in the request the agent used it from. `toolForm` is the
 * session with tool calls (the reference transcript); a text-protocol replay has the same
 * messages one for one, and its units are given back the tool_result shape (same text) so the
 * reference locates its results.
 */
export class RetentionMeter {
  private readonly ref: ReturnType<typeof reference.referencedTokens>;
  private readonly tokensByText = new Map<string, Set<string>>();
  retained = 0;
  total = 0;
  /** A sample of the names lost, for looking into a low figure. */
  readonly lost: string[] = [];

  constructor(
    private readonly provider: Provider,
    private readonly toolForm: Session,
    private readonly textProtocol: boolean,
  ) {
    this.ref = reference.referencedTokens(toolForm);
  }

  measure(compressed: Json, offsets: number[], next: number): void {
    const results = this.ref.results;
    const inPrefix = results.filter((r) => r.msg < next).length;
    if (inPrefix === 0) return;
    const want = (r: number) => {
      const out: string[] = [];
      for (const [t, j] of results[r]?.refs ?? []) if (j === next) out.push(t);
      return out;
    };
    const units = this.unitsOf(compressed, offsets, next);
    // A lost name is looked for in every unit before it: each unit's tokens once per request,
    // and across requests by its text (an unchanged message is the same text every turn).
    const inRequest = new Map<number, Set<string>>();
    const unitTokens = (k: number): Set<string> => {
      let set = inRequest.get(k);
      if (set) return set;
      const key = JSON.stringify(units[k] ?? null);
      set = this.tokensByText.get(key);
      if (!set) {
        set = reference.tokensOfValue(units[k] ?? null);
        this.tokensByText.set(key, set);
      }
      inRequest.set(k, set);
      return set;
    };
    const provider = this.textProtocol ? "anthropic" : this.provider;
    const { retained, total, lost } = reference.countRetained(provider, units, results, inPrefix, want, unitTokens);
    this.retained += retained;
    this.total += total;
    if (this.lost.length < 40) this.lost.push(...lost);
  }

  private unitsOf(body: Json, offsets: number[], next: number): unknown[] {
    const list = (this.provider === "gemini" ? body.contents : body.messages) as Json[];
    if (!this.textProtocol) return list;
    const sys = list.length - (offsets[next] ?? 0);
    return this.toolForm.messages.slice(0, next).map((m, i) => {
      const unit = list[sys + (offsets[i] ?? 0)];
      const ids = m.content.flatMap((b) => (b.type === "tool_result" ? [b.tool_use_id] : []));
      if (ids.length === 0) return unit;
      return { role: "user", content: ids.map((id) => ({ type: "tool_result", tool_use_id: id, content: unit })) };
    });
  }
}

/** The blind rule: every result over 16,000 characters cut to its first and last 4,000. */
export const naiveCut = (text: string): string =>
  text.length > 16_000 ? text.slice(0, 4_000) + text.slice(-4_000) : text;

type Message = Session["messages"][number];

/**
 * The output each block of a message holds: a tool result's text, or a text-protocol
 * observation's output (a user message in one of the agents' shapes, `splitObservation`)
 * with the agent's text around it, or the text after an XML-protocol tool's heading
 * (Cline's); undefined for anything else.
 */
function outputsOf(m: Message): ({ before: string; output: string; after: string } | undefined)[] {
  const texts = new ObservationReader();
  return m.content.map((b) => {
    if (b.type === "tool_result") return { before: "", output: b.content, after: "" };
    if (b.type !== "text" || m.role !== "user") {
      texts.reset();
      return undefined;
    }
    const o = texts.read(b.text);
    return o && !o.outputFollows ? { before: o.open, output: o.output, after: o.close } : undefined;
  });
}

/** The session with the naive rule applied to every tool result (and text-protocol observation's output). */
export function naiveSession(s: Session): Session {
  return {
    ...s,
    messages: s.messages.map((m) => {
      const outputs = outputsOf(m);
      return {
        role: m.role,
        content: m.content.map((b, i) => {
          const o = outputs[i];
          if (o === undefined) return b;
          const cut = `${o.before}${naiveCut(o.output)}${o.after}`;
          return b.type === "tool_result" ? { ...b, content: cut } : { ...b, text: cut };
        }),
      };
    }),
  };
}

/** Whether the naive rule cuts anything in the session. */
export const naiveCuts = (s: Session): boolean =>
  s.messages.some((m) => outputsOf(m).some((o) => (o?.output.length ?? 0) > 16_000));

export function replay(
  provider: Provider,
  session: Session,
  level: ContextCompressLevel | "naive",
  toolForm: Session = session,
): Replay {
  const naive = level === "naive" ? toProvider(provider, naiveSession(session)) : undefined;
  forgetRemembered();
  const ps = toProvider(provider, session);
  const offsets = [0];
  for (const m of ps.perMessage) offsets.push((offsets.at(-1) ?? 0) + m.length);
  const r: Replay = {
    session: session.name,
    reductions: [],
    tokensBefore: [],
    tokensAfter: [],
    costBefore: 0,
    costAfter: 0,
    pairs: 0,
    stablePairs: 0,
    // Timed apart, by timeSession, once every replay is done.
    times: [],
    timesPer100k: [],
    cpuPer100k: [],
    pairingChecks: 0,
    pairingFailures: 0,
    assistantChecks: 0,
    assistantChanged: 0,
    estimateErrors: [],
    toolCost: 0,
    retained: 0,
    needed: 0,
  };
  let prevBefore: string[] = [];
  let prevAfter: string[] = [];
  let countsBefore: number[] = [];
  let countsAfter: number[] = [];
  let last: Json | undefined;
  const meter = new RetentionMeter(provider, toolForm, toolForm !== session);
  const declared = level === "naive" ? [] : [recallDeclaration(provider)];
  for (const [i, m] of session.messages.entries()) {
    if (m.role !== "user") continue;
    const body = JSON.parse(JSON.stringify(ps.body(ps.perMessage.slice(0, i + 1).flat()))) as Json;
    const compressed =
      level === "naive"
        ? (naive?.body(naive.perMessage.slice(0, i + 1).flat()) as Json)
        : withoutInstruction(provider, compressRequest(provider, body, settings(level)).body as Json, body);
    const before = partsOf(provider, body);
    const after = partsOf(provider, compressed);
    const beforeText = before.map((p) => JSON.stringify(p));
    const afterText = [...declared, ...after.map((p) => JSON.stringify(p))];
    const sharedBefore = sharedParts(prevBefore, beforeText);
    const sharedAfter = sharedParts(prevAfter, afterText);
    // A part shared with the previous request is the same text: its count is carried over.
    countsBefore = partCounts(beforeText, sharedBefore, countsBefore);
    countsAfter = partCounts(afterText, sharedAfter, countsAfter);
    const tb = sumOf(countsBefore);
    const ta = sumOf(countsAfter);
    r.tokensBefore.push(tb);
    r.tokensAfter.push(ta);
    r.reductions.push(tb === 0 ? 0 : 1 - ta / tb);
    r.estimateErrors.push(tb === 0 ? 0 : Math.abs(countInputTokens(provider, body) - tb) / tb);
    r.costBefore += cachedCost(countsBefore, sharedBefore);
    r.costAfter += cachedCost(countsAfter, sharedAfter);
    // The declaration, when there is one, is the first part after (cached once a pair shares anything).
    if (declared.length > 0) r.toolCost += (sharedAfter > 0 ? 0.1 : 1) * (countsAfter[0] as number);
    if (prevBefore.length > 0) {
      r.pairs++;
      if (sharedAfter - declared.length >= sharedBefore) r.stablePairs++;
    }
    prevBefore = beforeText;
    prevAfter = afterText;
    // Only requests the provider would accept count: a compressor cannot repair the agent's
    // own history (a replay cut right after a tool call, say).
    if (pairingProblems[provider](body).length === 0) {
      r.pairingChecks++;
      if (pairingProblems[provider](compressed).length > 0) r.pairingFailures++;
    }
    last = compressed;
    if (session.messages[i + 1]?.role === "assistant") meter.measure(compressed, offsets, i + 1);
  }
  r.retained = meter.retained;
  r.needed = meter.total;
  r.lost = meter.lost;
  if (last) {
    const final = last;
    // Assistant turns (their text and tool calls) must come through byte-identical.
    const messagesOf = (b: Json): unknown[] =>
      provider === "gemini" ? (b.contents as unknown[]) : (b.messages as unknown[]);
    const sys = provider === "openai" && session.system ? 1 : 0;
    const original = ps.perMessage.flat();
    const out = messagesOf(final);
    for (const [k, m] of original.entries()) {
      // Only what the last request held: a session may end on the assistant's answer.
      if (k + sys >= out.length || (m.role !== "assistant" && m.role !== "model")) continue;
      r.assistantChecks++;
      if (JSON.stringify(out[k + sys]) !== JSON.stringify(m)) r.assistantChanged++;
    }
  }
  return r;
}
