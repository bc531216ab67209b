// One session replayed turn by turn in one provider's format at one level: every
// request compressed as the data plane would, measured against the request as sent.
import {
  type CompressionSettings,
  type ContextCompressLevel,
  compressRequest,
  countInputTokens,
  forgetRemembered,
  type Provider,
  pairingProblems,
} from "@terse/compression";
import type { Session } from "./corpus.ts";
import { partsOf, toProvider, withoutInstruction } from "./formats.ts";
import { cachedCost, neededSpans, retention, sharedParts, stringsOf, tokensOf } from "./metrics.ts";

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
  pairingChecks: number;
  pairingFailures: number;
  assistantChecks: number;
  assistantChanged: number;
  /** |estimated - exact| / exact of input_tokens_before. */
  estimateErrors: number[];
  retained: number;
  needed: number;
}

const settings = (level: ContextCompressLevel): CompressionSettings => ({
  intensity: "full",
  auto_compress_input: false,
  smart_detect_enabled: false,
  context_compress: true,
  context_compress_level: level,
});

type Json = Record<string, unknown>;

/**
 * Each request of the session compressed and timed, and nothing else: the measurements of
 * `replay` tokenize whole bodies exactly, garbage the data plane never makes, and their
 * collections would land in the timed calls. The token memory starts empty, as in a fresh
 * process, and fills turn by turn as it does serving one session.
 */
export function timeSession(provider: Provider, session: Session, level: ContextCompressLevel) {
  forgetRemembered();
  const ps = toProvider(provider, session);
  const times: number[] = [];
  const timesPer100k: number[] = [];
  for (const [i, m] of session.messages.entries()) {
    if (m.role !== "user") continue;
    const wire = JSON.stringify(ps.body(ps.perMessage.slice(0, i + 1).flat()));
    // Parsed afresh, as the data plane parses each request: no string is shared with the
    // previous turn's request, so nothing is found by identity that would not be in production.
    const body = JSON.parse(wire) as Json;
    const t0 = process.hrtime.bigint();
    compressRequest(provider, body, settings(level));
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    times.push(ms);
    if (wire.length >= 100_000) timesPer100k.push(ms / (wire.length / 100_000));
  }
  return { times, timesPer100k };
}

export function replay(provider: Provider, session: Session, level: ContextCompressLevel): Replay {
  const { times, timesPer100k } = timeSession(provider, session, level);
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
    times,
    timesPer100k,
    pairingChecks: 0,
    pairingFailures: 0,
    assistantChecks: 0,
    assistantChanged: 0,
    estimateErrors: [],
    retained: 0,
    needed: 0,
  };
  let prevBefore: string[] = [];
  let prevAfter: string[] = [];
  let last: Json | undefined;
  for (const [i, m] of session.messages.entries()) {
    if (m.role !== "user") continue;
    const body = JSON.parse(JSON.stringify(ps.body(ps.perMessage.slice(0, i + 1).flat()))) as Json;
    const out = compressRequest(provider, body, settings(level));
    const compressed = withoutInstruction(provider, out.body as Json, body);
    const before = partsOf(provider, body);
    const after = partsOf(provider, compressed);
    const beforeText = before.map((p) => JSON.stringify(p));
    const afterText = after.map((p) => JSON.stringify(p));
    const tb = tokensOf(before);
    const ta = tokensOf(after);
    r.tokensBefore.push(tb);
    r.tokensAfter.push(ta);
    r.reductions.push(tb === 0 ? 0 : 1 - ta / tb);
    r.estimateErrors.push(tb === 0 ? 0 : Math.abs(countInputTokens(provider, body) - tb) / tb);
    const sharedBefore = sharedParts(prevBefore, beforeText);
    const sharedAfter = sharedParts(prevAfter, afterText);
    r.costBefore += cachedCost(before, sharedBefore);
    r.costAfter += cachedCost(after, sharedAfter);
    if (prevBefore.length > 0) {
      r.pairs++;
      if (sharedAfter >= sharedBefore) r.stablePairs++;
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
  }
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
    const textOf = (i: number) => stringsOf(out.slice(sys + (offsets[i] ?? 0), sys + (offsets[i + 1] ?? 0)));
    const kept = retention(neededSpans(session), textOf);
    r.retained = kept.kept;
    r.needed = kept.total;
  }
  return r;
}
