import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import {
  isRecord,
  type RecallCall,
  type RecallFormat,
  type RecallResult,
  type ReportedUsage,
  SseSplitter,
  type StreamFilter,
} from "@terse/wire-formats";
import { LAST_RECALL_NOTE, readRecallCall, recallAnswer } from "../domain/recall-answer.ts";
import type { RecallStore } from "../infra/recall-store.ts";
import { decodedStream, undoCodings } from "./content-coding.ts";
import { isUpstreamRefusal } from "./headers.ts";
import { writeChunk } from "./respond.ts";

// Recall's loop (issue 18, docs/compression.md): when the model calls terse_recall,
// terse answers the call itself, appends call and answer to the conversation, calls the
// upstream again and gives the client the continuation as one response. The wire
// format's side (where calls are, how a stream continues) is its adapter's RecallFormat;
// what is here is the same for every format: rounds, limits, keep-alives, faults.

/** What the proxy lends the loop: the exchange's upstream, its usage, its end. */
export interface RecallHost {
  format: RecallFormat;
  accountId: string;
  store: RecallStore;
  maxRounds: number;
  maxChars: number;
  /** A JSON answer is read whole up to this many bytes; past them it goes to the client unread. */
  maxAnswerBytes: number;
  keepAliveMs: number;
  /** The request as the upstream received it in the first round. */
  request: Record<string, unknown>;
  /** One more upstream call with `body`: its response head, or a rejection (connect error, timeout). */
  send(body: Record<string, unknown>): Promise<IncomingMessage>;
  /**
   * A round's answer is in: its usage is folded into the request's, and `body` is what
   * the next round sends. Returns the usage of the rounds so far (the one just ended included).
   */
  startRound(body: Record<string, unknown>): ReportedUsage;
  /** Usage in one JSON answer or SSE event of the current round. */
  observe(data: unknown): void;
  /** Every round's usage so far, the current one's as reported or estimated. */
  usageSoFar(): ReportedUsage;
  /** The request is over: metered and logged once. */
  finish(status: number): void;
  /** The upstream failed (connection, cut, timeout): an error envelope, or a stream ended short. */
  fail(): void;
  /** The upstream answered a round with an error status: relayed as the proxy relays any. */
  relayError(proxyRes: IncomingMessage, status: number): void;
  /** The client went away or the request was finished otherwise: stop. */
  over(): boolean;
}

/**
 * A JSON answer: read whole, since whether it goes to the client depends on what it
 * says. Without a recall call the upstream's bytes go out as they came.
 */
export async function relayJsonWithRecall(
  host: RecallHost,
  first: IncomingMessage,
  res: ServerResponse,
  headers: OutgoingHttpHeaders,
): Promise<void> {
  const earlier: Record<string, unknown>[] = [];
  let request = host.request;
  let upstream = first;
  for (let round = 0; ; round++) {
    const read = await readUpTo(upstream, host.maxAnswerBytes).catch(() => undefined);
    if (read === undefined) return host.over() ? undefined : host.fail();
    // Too large to read whole: relayed as it comes, memory bounded, nothing answered in it.
    if (!Buffer.isBuffer(read)) return relayUnread(host, read, res, codedAs(headers, upstream));
    const raw = read;
    // A gateway may compress the answer in spite of `accept-encoding: identity`: read decoded.
    const answer = parseObject(await plainOf(raw, upstream, host.maxAnswerBytes));
    host.observe(answer);
    // Not JSON (or in a coding terse cannot undo): nothing to answer in it, relayed as it came.
    if (!answer) return send(res, 200, codedAs(headers, upstream), raw, host);
    const calls = host.format.calls(answer);
    if (calls.length === 0 || round >= host.maxRounds) {
      if (round === 0 && calls.length === 0) return send(res, 200, codedAs(headers, upstream), raw, host);
      const last = calls.length > 0 ? host.format.withoutRecall(answer) : answer;
      const merged = earlier.length > 0 ? host.format.merge(earlier, last, host.usageSoFar()) : last;
      return send(res, 200, codedAs(headers, undefined), Buffer.from(JSON.stringify(merged)), host);
    }
    const results = await answerCalls(host, calls, round);
    if (host.over()) return;
    request = host.format.continueWith(request, answer, results);
    earlier.push(answer);
    host.startRound(request);
    const next = await host.send(request).catch(() => undefined);
    if (!next) return host.over() ? undefined : host.fail();
    upstream = next;
    const status = upstream.statusCode ?? 502;
    if (isUpstreamRefusal(status)) return host.relayError(upstream, status);
  }
}

/**
 * A streamed answer: relayed event by event through the format's RecallStream (which
 * holds tool-call events to the end of each round), continued in the same stream after
 * each recall round, with keep-alives while terse waits.
 */
export async function relaySseWithRecall(
  host: RecallHost,
  first: IncomingMessage,
  firstEvents: Readable,
  res: ServerResponse,
  filter: StreamFilter | undefined,
): Promise<void> {
  const stream = host.format.stream();
  const out = (text: string) => write(res, filter ? filter.push(text) : text);
  let request = host.request;
  let upstream = first;
  let events: Readable | undefined = firstEvents;
  for (let round = 0; ; round++) {
    // A later round's answer in a coding terse cannot undo: nothing of it can be relayed as events.
    if (!events) {
      upstream.destroy();
      return host.fail();
    }
    const whole = await pumpEvents(upstream, events, res, (raw, data) => {
      host.observe(data);
      out(stream.push(raw, data));
    });
    if (!whole) return host.over() ? undefined : host.fail();
    const { calls, answer, release } = stream.end();
    if (calls.length === 0 || round >= host.maxRounds) {
      out(release);
      if (filter) write(res, filter.flush());
      res.end();
      return host.finish(200);
    }
    // Keep-alives go straight to the client: the usage filter has nothing to do with them.
    write(res, stream.keepAlive);
    const beat = setInterval(() => write(res, stream.keepAlive), host.keepAliveMs);
    let next: IncomingMessage | undefined;
    try {
      const results = await answerCalls(host, calls, round);
      if (host.over()) return;
      request = host.format.continueWith(request, answer, results);
      stream.nextRound(host.startRound(request));
      next = await host.send(request).catch(() => undefined);
    } finally {
      clearInterval(beat);
    }
    if (!next) return host.over() ? undefined : host.fail();
    upstream = next;
    const status = upstream.statusCode ?? 502;
    if (isUpstreamRefusal(status)) {
      upstream.resume();
      return host.fail();
    }
    events = decodedStream(upstream, upstream.headers["content-encoding"]);
  }
}

/**
 * Answers the calls of `round` (0 the first answer) from the store (a call that cannot be
 * answered gets a tool result saying why). In the last round the request may make, each
 * result says so: a model that called again would have its call dropped and leave the
 * client an empty answer.
 */
async function answerCalls(host: RecallHost, calls: readonly RecallCall[], round: number): Promise<RecallResult[]> {
  const answers = await Promise.all(calls.map((call) => answerCall(host, call)));
  if (round + 1 < host.maxRounds) return answers;
  return answers.map(({ call, text }) => ({ call, text: `${text}${LAST_RECALL_NOTE}` }));
}

async function answerCall(host: RecallHost, call: RecallCall): Promise<RecallResult> {
  const ask = readRecallCall(call);
  if (typeof ask === "string") return { call, text: ask };
  const original = await host.store.fetch(host.accountId, ask.handle).catch(() => undefined);
  if (original === undefined) {
    return {
      call,
      text: "terse_recall: the kept text could not be read just now; try again, or read it again at its source.",
    };
  }
  return { call, text: recallAnswer(ask, original, host.maxChars) };
}

/**
 * Relays one upstream stream's events (`events`: its body decoded, or `upstream` itself)
 * to `onEvent`, pausing it while the client cannot take more; resolves true when it
 * ended whole, false when it was cut (the connection, or a decoder's error: bytes that
 * are not what their coding says). The decoder ends only with a whole body, so the cut is
 * watched on the response itself.
 */
function pumpEvents(
  upstream: IncomingMessage,
  events: Readable,
  res: ServerResponse,
  onEvent: (raw: string, data: unknown) => void,
): Promise<boolean> {
  return new Promise((resolve) => {
    const splitter = new SseSplitter(onEvent);
    events.setEncoding("utf8");
    events.on("data", (chunk: string) => {
      splitter.push(chunk);
      if (res.writableNeedDrain) {
        events.pause();
        res.once("drain", () => events.resume());
      }
    });
    events.once("end", () => {
      splitter.flush();
      resolve(true);
    });
    upstream.once("close", () => {
      if (!upstream.complete) resolve(false);
    });
    upstream.once("error", () => resolve(false));
    if (events !== upstream) events.on("error", () => resolve(false));
  });
}

/** An answer past the read limit: what was read of it, and the rest still coming (paused). */
interface Unread {
  head: Buffer[];
  rest: IncomingMessage;
}

/** The whole answer, or, once it passes `limit` bytes, what was read so far (the rest waits, paused). */
function readUpTo(upstream: IncomingMessage, limit: number): Promise<Buffer | Unread> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      chunks.push(c);
      size += c.length;
      if (size <= limit) return;
      upstream.pause();
      stop();
      resolve({ head: chunks, rest: upstream });
    };
    const onEnd = () => resolve(Buffer.concat(chunks));
    const onClose = () => {
      if (!upstream.complete) reject(new Error("upstream body cut"));
    };
    const stop = () => {
      upstream.off("data", onData).off("end", onEnd).off("close", onClose).off("error", reject);
    };
    upstream.on("data", onData).once("end", onEnd).once("close", onClose).once("error", reject);
  });
}

/** Relays an answer too large to read whole as it comes, holding no more of it than the client has yet to take. */
function relayUnread(
  host: RecallHost,
  { head, rest }: Unread,
  res: ServerResponse,
  headers: OutgoingHttpHeaders,
): void {
  if (res.destroyed) return void rest.destroy();
  res.writeHead(200, headers);
  rest.on("data", (chunk: Buffer) => writeChunk(res, rest, chunk));
  rest.once("end", () => {
    res.end();
    host.finish(200);
  });
  rest.once("close", () => {
    if (!rest.complete && !host.over()) host.fail();
  });
  // `rest` was paused when the limit was passed: it goes on now, or once the caller took the head.
  for (const chunk of head) writeChunk(res, rest, chunk);
  if (!res.writableNeedDrain) rest.resume();
}

function send(res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: Buffer, host: RecallHost): void {
  if (res.destroyed) return;
  headers["content-length"] = String(body.length);
  res.writeHead(status, headers);
  res.end(body);
  host.finish(status);
}

function write(res: ServerResponse, text: string): void {
  if (text.length > 0 && !res.destroyed) res.write(text);
}

/**
 * An answer's bytes with the codings its Content-Encoding lists undone; undefined for a
 * coding terse cannot undo or bytes that are not what it says (then nothing is read of it).
 */
async function plainOf(raw: Buffer, upstream: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  const coding = upstream.headers["content-encoding"];
  if (coding === undefined) return raw;
  return undoCodings(raw, coding, maxBytes).catch(() => undefined);
}

/**
 * The headers for a body coded as `upstream`'s answer was (its bytes relayed as they came),
 * or, without one, for a plain body terse wrote: a later round's answer may be coded
 * otherwise than the first, whose headers these are.
 */
function codedAs(headers: OutgoingHttpHeaders, upstream: IncomingMessage | undefined): OutgoingHttpHeaders {
  const coding = upstream?.headers["content-encoding"];
  if (coding === undefined) delete headers["content-encoding"];
  else headers["content-encoding"] = coding;
  return headers;
}

function parseObject(raw: Buffer | undefined): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(raw.toString("utf8"));
    return isRecord(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
