import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { parse as parseUrl, type UrlWithStringQuery } from "node:url";
import { type CompressionResult, compressionSettings, compressRequest, unchangedCounts } from "@terse/compression";
import type { DataPlaneConfig } from "@terse/config";
import { ApiError } from "@terse/errors";
import type { Logger } from "@terse/logger";
import type { UsageEvent } from "@terse/usage-events";
import {
  addUsage,
  type Operation,
  type RecallFormat,
  type ReportedUsage,
  type Resolved,
  SseSplitter,
  type UpstreamRequest,
  type WireFormatAdapter,
} from "@terse/wire-formats";
import httpProxy from "http-proxy";
import { type Admitted, AuthCacheDown, type Authenticator, setRateLimitHeaders } from "../domain/authenticate.ts";
import { setInputTokenHeaders } from "../domain/input-token-headers.ts";
import { requireModel } from "../domain/model-name.ts";
import { recallToolTokens } from "../domain/recall-tool.ts";
import { redactProviderKey } from "../domain/redact.ts";
import { estimateTokens, requestText } from "../domain/token-estimate.ts";
import { UsageTap } from "../domain/usage-tap.ts";
import { newestTurnTokens, withoutTerse } from "../domain/without-terse.ts";
import type { RecallStore } from "../infra/recall-store.ts";
import type { UsagePublisher } from "../infra/usage-publisher.ts";
import { CallerGone, readJsonObject } from "./body.ts";
import { decodedStream, undoCodings } from "./content-coding.ts";
import { isUpstreamRefusal, responseHeaders, upstreamRequestHeaders } from "./headers.ts";
import type { ProxyMetrics } from "./metrics.ts";
import { type RecallHost, relayJsonWithRecall, relaySseWithRecall } from "./recall-relay.ts";
import { expiryOf, UpstreamDeadlines } from "./upstream-deadlines.ts";
import { CLIENT_CLOSED_REQUEST, newRequestId, sendError, writeChunk } from "./respond.ts";

export interface ProxyDeps {
  config: DataPlaneConfig;
  authenticator: Authenticator;
  publisher: UsagePublisher;
  logger: Logger;
  metrics: ProxyMetrics;
  recallStore: RecallStore;
}

/** Milliseconds spent in each stage before the upstream answered (Server-Timing). */
interface Timing {
  /** Authentication, rpm and quota: the key cache round trip(s), or none for a key answered from the process's copy. */
  auth: number;
  /** Reading (and decoding) the request body. */
  body: number;
  /** compressRequest alone. */
  compression: number;
  /** From sending upstream to the response head. */
  ttfb?: number;
}

/** One request admitted to the proxy, from the upstream call to its usage event. */
interface Exchange {
  id: string;
  startedAt: number;
  start: number;
  method: string;
  path: string;
  adapter: WireFormatAdapter;
  op: Operation;
  admitted: Admitted;
  model: string | undefined;
  providerKey: string;
  upstream: UpstreamRequest;
  payload: Buffer | undefined;
  compression: CompressionResult | undefined;
  timing: Timing;
  /** Usage of the current upstream round (the only one, unless the model recalled). */
  tap: UsageTap;
  /** Recall on for this request: the model's terse_recall calls are answered here. */
  recall: RecallFormat | undefined;
  /** Recall rounds so far, and the usage of the rounds before the current one. */
  rounds: number;
  prior?: { usage: ReportedUsage; estimated: boolean };
  /** The first round's usage, once a recall round started: without terse's cuts it would have been the only one. */
  firstRound?: { usage: ReportedUsage; estimated: boolean };
  /** Tokens of the newest turn of the request as the caller sent it, when compression saw it (domain/without-terse.ts). */
  newestTurn: number | undefined;
  /** What the current round sent upstream: its body and headers (a recall round sends them again, with more). */
  sentBody: Record<string, unknown> | undefined;
  upstreamHeaders?: IncomingHttpHeaders;
  proxyReq?: ClientRequest;
  proxyRes?: IncomingMessage;
  finished: boolean;
}

/**
 * The exchange rides on its request, which http-proxy's events hand back. Not a WeakMap:
 * V8 traces a WeakMap's entries apart in every young-generation collection, and with one
 * short-lived entry per request that alone cost about a fifth of the proxy's CPU
 * (docs/benchmarks.md).
 */
const EXCHANGE = Symbol("terse.exchange");
type CarriesExchange = IncomingMessage & { [EXCHANGE]?: Exchange };
const exchangeOf = (req: IncomingMessage): Exchange | undefined => (req as CarriesExchange)[EXCHANGE];

/** Error bodies are small; past this an upstream error body is cut before redaction. */
const MAX_ERROR_BODY = 1024 * 1024;
/** Non-streamed bodies are relayed as they come; this much is kept on the side to read usage. */
const MAX_TAPPED_BODY = 32 * 1024 * 1024;

/** Milliseconds since `start` (a `performance.now()`): a double, where hrtime.bigint() allocated a BigInt per reading. */
const msSince = (start: number) => performance.now() - start;

/**
 * The hot path, top to bottom: authenticate, limit, read, compress, forward, meter. What
 * differs between wire formats is asked of the request's adapter. http-proxy with
 * keep-alive agents does the forwarding; the response is handled here
 * (selfHandleResponse) so it can be relayed chunk by chunk while usage is read on the side.
 */
export function createProxyHandler(deps: ProxyDeps) {
  const { config, logger, metrics } = deps;
  const agents = {
    "http:": new HttpAgent({ keepAlive: true, maxFreeSockets: 256, scheduling: "lifo" }),
    "https:": new HttpsAgent({ keepAlive: true, maxFreeSockets: 256, scheduling: "lifo" }),
  };
  const proxy = httpProxy.createProxyServer({});

  const deadlines = new UpstreamDeadlines({
    connectMs: config.UPSTREAM_CONNECT_TIMEOUT_MS,
    idleMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
  });

  // Headers and body are settled before http-proxy builds the upstream request (see
  // forward()); this event only puts the request under its deadlines. http-proxy skips
  // it for requests carrying `Expect`, which is why no header work may depend on it.
  proxy.on("proxyReq", (proxyReq, req) => {
    const ex = exchangeOf(req);
    if (!ex) return;
    ex.proxyReq = proxyReq;
    deadlines.watch(proxyReq);
  });

  proxy.on("proxyRes", (proxyRes, req, res) => {
    const ex = exchangeOf(req);
    if (ex) relayResponse(ex, proxyRes, res as ServerResponse);
  });

  /** Handles one request to a proxy route. Never throws. */
  return async function handle(req: IncomingMessage, res: ServerResponse, resolved: Resolved): Promise<void> {
    const id = newRequestId();
    const start = performance.now();
    const startedAt = Date.now();
    const { adapter, op } = resolved;
    const refuse = (err: unknown) => {
      // A caller that hung up mid-body is no fault of ours: no answer, no error logged.
      const status = err instanceof CallerGone ? CLIENT_CLOSED_REQUEST : sendError(res, err, id, logger);
      if (err instanceof ApiError) metrics.refusals.inc({ code: err.code });
      complete({ id, start, method: req.method, path: pathOf(req.url), provider: adapter.provider, status });
    };

    let admitted: Admitted | undefined;
    try {
      const verdict = await deps.authenticator.admit(
        soleHeader(req, "authorization"),
        soleHeader(req, "x-provider-key"),
        startedAt,
      );
      if (verdict.lookup) metrics.authLookupsOf(verdict.lookup).inc();
      if (!verdict.ok) return refuse(new ApiError(verdict.code, { headers: verdict.headers }));
      admitted = verdict.admitted;
      const auth = msSince(start);

      const body = op.method === "POST" ? (await readJsonObject(req, config.MAX_BODY_BYTES)).body : undefined;
      const bodyMs = msSince(start) - auth;
      const model = body && op.kind !== "list_models" ? requireModel(adapter.model(body, op)) : undefined;

      const recall = recallFor(adapter, admitted, req.headers, config.RECALL_ENABLED);
      const compressStart = performance.now();
      const prepared = body ? prepare(adapter, op, body, model, admitted, recall, logger, id) : undefined;
      const compression = prepared?.compression;
      const sent = (compression?.body as Record<string, unknown> | undefined) ?? body;
      // Answered in model calls; a count_tokens body carries the tool and the handles only
      // to be counted as the call will be.
      const recallHere = op.kind === "generate" ? prepared?.recall : undefined;
      if (prepared?.recall && compression?.cuts) deps.recallStore.keep(admitted.key.account_id, compression.cuts);
      const compressionMs = msSince(compressStart);

      const providerKey = req.headers["x-provider-key"] as string;
      const upstream = adapter.upstream({
        base: baseUrl(config, adapter),
        op,
        body: sent,
        providerKey,
        model,
        query: queryOf(req.url),
        callerHeaders: req.headers,
      });
      const ex: Exchange = {
        id,
        startedAt,
        start,
        method: req.method ?? "",
        path: pathOf(req.url),
        adapter,
        op,
        admitted,
        model,
        providerKey,
        upstream,
        payload: upstream.body ? Buffer.from(JSON.stringify(upstream.body)) : undefined,
        compression,
        // Only a model call is metered: the cost without terse is asked of nothing else.
        newestTurn: body && compression && op.kind === "generate" ? newestTurnTokens(adapter, op, body) : undefined,
        timing: { auth, body: bodyMs, compression: compressionMs },
        tap: new UsageTap(adapter),
        recall: recallHere,
        rounds: 0,
        sentBody: upstream.body,
        finished: false,
      };
      (req as CarriesExchange)[EXCHANGE] = ex;
      res.once("close", () => {
        // The caller hung up: stop paying for tokens nobody reads. Still metered, with the
        // status the caller saw (none yet, as while a recall round runs: 499). (A response
        // the proxy finished or cut short itself closes too: no abort of theirs.)
        if (res.writableFinished || ex.finished) return;
        ex.proxyReq?.destroy();
        ex.proxyRes?.destroy();
        metrics.clientAborts.inc();
        finish(ex, res.headersSent ? res.statusCode : CLIENT_CLOSED_REQUEST);
      });
      forward(ex, req, res);
    } catch (err) {
      // Admitted, then refused for its body: nothing was forwarded, so it does not count.
      if (admitted) deps.authenticator.release(admitted, startedAt);
      refuse(err instanceof AuthCacheDown ? new ApiError("auth_cache_unavailable") : err);
    }
  };

  /**
   * Hands the exchange to http-proxy. The caller's request object carries the upstream's
   * headers (http-proxy copies `req.headers`; the body was read already), and the new
   * body goes out with them in one write: `buffer` is what http-proxy pipes into the
   * upstream request, so a stand-in whose pipe() ends it with the payload saves a stream.
   */
  function forward(ex: Exchange, req: IncomingMessage, res: ServerResponse): void {
    req.headers = upstreamRequestHeaders(req.headers, ex.upstream.headers, ex.payload?.length);
    if (ex.recall) ex.upstreamHeaders = { ...req.headers };
    const payload = ex.payload;
    proxy.web(
      req,
      res,
      {
        target: targetOf(ex.upstream.url),
        ignorePath: true,
        changeOrigin: true,
        agent: ex.upstream.url.startsWith("https:") ? agents["https:"] : agents["http:"],
        buffer: { pipe: (upstream: ClientRequest) => upstream.end(payload) } as unknown as Readable,
        selfHandleResponse: true,
      },
      () => onProxyError(ex, res),
    );
  }

  function relayResponse(ex: Exchange, proxyRes: IncomingMessage, res: ServerResponse): void {
    ex.proxyRes = proxyRes;
    ex.timing.ttfb = msSince(ex.start) - ex.timing.auth - ex.timing.body - ex.timing.compression;
    metrics.upstreamTtfbOf(ex.adapter.provider).observe(ex.timing.ttfb / 1000);
    const status = proxyRes.statusCode ?? 502;
    const isSse = isEventStream(proxyRes.headers["content-type"]);
    const refused = isUpstreamRefusal(status);
    // A gateway may compress a stream in spite of `accept-encoding: identity`. The tap, a
    // filter and recall's loop read its text, so it is relayed decoded; in a coding terse
    // cannot undo, as it came, unfiltered, with no recall call answered (docs/recall.md).
    const events = isSse && !refused ? decodedStream(proxyRes, proxyRes.headers["content-encoding"]) : proxyRes;
    const decoded = events !== undefined && events !== proxyRes;
    const filter = isSse && !refused && events !== undefined ? ex.upstream.streamFilter?.() : undefined;
    const recalls = ex.recall !== undefined && !refused && events !== undefined;
    const rewritten = refused || filter !== undefined || recalls || decoded;
    const headers = responseHeaders(proxyRes.headers, rewritten, ex.providerKey);
    if (decoded) delete headers["content-encoding"];
    if (filter?.contentType) headers["content-type"] = filter.contentType;
    addOwnHeaders(headers, ex);
    // A refusal, and a JSON answer that may hold a recall call, are answered once read whole.
    if (!refused && !(recalls && !isSse)) res.writeHead(status, headers);
    // An upstream that dies once its headers are here (reset, closed connection) may end
    // proxyRes without an error on the request, the only thing http-proxy watches: the
    // caller's response would stay open for ever. A body cut short is cut for the caller too.
    proxyRes.once("close", () => {
      if (!proxyRes.complete) onProxyError(ex, res);
    });
    if (refused) relayError(ex, proxyRes, res, status, headers);
    else if (recalls && isSse) void relaySseWithRecall(recallHost(ex, res), proxyRes, events ?? proxyRes, res, filter);
    else if (recalls) void relayJsonWithRecall(recallHost(ex, res), proxyRes, res, headers);
    else if (isSse) relaySse(ex, events ?? proxyRes, res, filter);
    else relayJson(ex, proxyRes, res);
  }

  /**
   * The upstream's refusal, read whole to take the provider key out of it, then answered
   * with `headers`. A body a gateway compressed anyway is answered decoded; one terse
   * cannot decode (a coding it has no decoder for, bytes that are not what it says, over
   * the bound) goes without its body, which it could not search: the status and the
   * headers (retry-after) are what a client acts on.
   */
  function relayError(
    ex: Exchange,
    proxyRes: IncomingMessage,
    res: ServerResponse,
    status: number,
    headers: OutgoingHttpHeaders,
  ): void {
    const chunks: Buffer[] = [];
    let size = 0;
    proxyRes.on("data", (c: Buffer) => {
      if (size < MAX_ERROR_BODY) chunks.push(c);
      size += c.length;
    });
    proxyRes.on("end", async () => {
      const coding = proxyRes.headers["content-encoding"];
      delete headers["content-encoding"];
      const plain = await undoCodings(Buffer.concat(chunks), coding, MAX_ERROR_BODY).catch(() => Buffer.alloc(0));
      if (ex.finished || res.destroyed) return;
      res.writeHead(status, headers);
      res.end(redactProviderKey(plain.toString("utf8").slice(0, MAX_ERROR_BODY), ex.providerKey));
      finish(ex, status);
    });
  }

  /**
   * Relays the stream as it comes, through the adapter's filter when terse changed what
   * the upstream sends (never holding more than a partial line), and reads usage from
   * its events on the side.
   */
  function relaySse(
    ex: Exchange,
    proxyRes: Readable,
    res: ServerResponse,
    filter: ReturnType<NonNullable<UpstreamRequest["streamFilter"]>> | undefined,
  ): void {
    // A decoder's error: bytes that are not what their coding says. Cut, as a reset is.
    if (proxyRes !== ex.proxyRes) proxyRes.once("error", () => onProxyError(ex, res));
    const tap = new SseSplitter((_raw, data) => ex.tap.observe(data));
    // The bytes go out as they came (a stream terse does not filter is relayed byte for
    // byte, invalid UTF-8 included); their text is for the usage tap and the filter.
    const decoder = new StringDecoder("utf8");
    proxyRes.on("data", (chunk: Buffer) => {
      const text = decoder.write(chunk);
      writeChunk(res, proxyRes, filter ? filter.push(text) : chunk);
      tap.push(text);
    });
    proxyRes.on("end", () => {
      const rest = decoder.end();
      if (rest) {
        tap.push(rest);
        if (filter) writeChunk(res, proxyRes, filter.push(rest));
      }
      tap.flush();
      if (filter) writeChunk(res, proxyRes, filter.flush());
      res.end();
      finish(ex, 200);
    });
  }

  function relayJson(ex: Exchange, proxyRes: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    proxyRes.on("data", (c: Buffer) => {
      writeChunk(res, proxyRes, c);
      size += c.length;
      if (size <= MAX_TAPPED_BODY) chunks.push(c);
    });
    proxyRes.on("end", () => {
      res.end();
      const status = proxyRes.statusCode ?? 200;
      const coding = proxyRes.headers["content-encoding"];
      if (size <= MAX_TAPPED_BODY && coding !== undefined) {
        // terse asks for it uncoded; a gateway in front of the provider may compress it all
        // the same, and its usage is still the provider's count. Unreadable: estimated.
        void undoCodings(Buffer.concat(chunks), coding, MAX_TAPPED_BODY)
          .then((plain) => ex.tap.observe(safeParse(plain.toString("utf8"))))
          .catch(() => undefined)
          .finally(() => finish(ex, status));
        return;
      }
      if (size <= MAX_TAPPED_BODY) ex.tap.observe(safeParse(Buffer.concat(chunks).toString("utf8")));
      finish(ex, status);
    });
  }

  /** What recall's loop (recall-relay.ts) needs of the exchange. */
  function recallHost(ex: Exchange, res: ServerResponse): RecallHost {
    return {
      format: ex.recall as RecallFormat,
      accountId: ex.admitted.key.account_id,
      store: deps.recallStore,
      maxRounds: config.RECALL_MAX_ROUNDS,
      maxChars: config.RECALL_MAX_CHARS,
      maxAnswerBytes: config.RECALL_MAX_ANSWER_BYTES,
      keepAliveMs: config.RECALL_KEEPALIVE_MS,
      request: ex.sentBody ?? {},
      send: (body) => sendRound(ex, body),
      startRound(body) {
        const done = usageSoFar(ex);
        ex.firstRound ??= done;
        ex.prior = done;
        ex.tap = new UsageTap(ex.adapter);
        ex.sentBody = body;
        ex.rounds++;
        metrics.recallRounds.inc();
        return done.usage;
      },
      observe: (data) => ex.tap.observe(data),
      usageSoFar: () => usageSoFar(ex).usage,
      finish: (status) => finish(ex, status),
      fail: () => onProxyError(ex, res),
      relayError(proxyRes, status) {
        ex.proxyRes = proxyRes;
        const headers = responseHeaders(proxyRes.headers, true, ex.providerKey);
        addOwnHeaders(headers, ex);
        relayError(ex, proxyRes, res, status, headers);
      },
      over: () => ex.finished || res.destroyed,
    };
  }

  /**
   * One more upstream call of a recall round: the first round's URL and headers with
   * the longer body, through the same keep-alive agents and under the same timeouts.
   */
  function sendRound(ex: Exchange, body: Record<string, unknown>): Promise<IncomingMessage> {
    return new Promise<IncomingMessage>((resolve, reject) => {
      const payload = Buffer.from(JSON.stringify(body));
      const url = new URL(ex.upstream.url);
      const headers = { ...ex.upstreamHeaders, host: url.host, "content-length": String(payload.length) };
      const secure = url.protocol === "https:";
      const options = { method: "POST", headers, agent: secure ? agents["https:"] : agents["http:"] };
      const upstreamReq = (secure ? httpsRequest : httpRequest)(url, options, (upstreamRes) => {
        ex.proxyRes = upstreamRes;
        resolve(upstreamRes);
      });
      ex.proxyReq = upstreamReq;
      upstreamReq.once("socket", () => deadlines.watch(upstreamReq));
      upstreamReq.once("error", reject);
      upstreamReq.end(payload);
    });
  }

  /** terse's own headers on a relayed answer, written into the relayed ones (no copy). */
  function addOwnHeaders(h: OutgoingHttpHeaders, ex: Exchange): void {
    h["X-Terse-Request-Id"] = ex.id;
    h["Server-Timing"] = serverTiming(ex.timing);
    setRateLimitHeaders(h, ex.admitted.rateLimit);
    if (ex.compression?.intensity) h["X-Compression-Intensity"] = ex.compression.intensity;
    setInputTokenHeaders(h, ex.compression);
  }

  /** The end of a forwarded request, however it ended: metered once (model calls), logged once. */
  function finish(ex: Exchange, status: number): void {
    if (ex.finished) return;
    ex.finished = true;
    const event = ex.op.kind === "generate" ? usageEventOf(ex, status) : undefined;
    if (event) deps.publisher.publish(event);
    complete({
      id: ex.id,
      start: ex.start,
      method: ex.method,
      path: ex.path,
      provider: ex.adapter.provider,
      status,
      model: ex.model,
      keyId: ex.admitted.key.key_id,
      streamed: ex.upstream.streamed,
      event,
    });
  }

  /** Every answered request, refused or forwarded: its metrics and its one log line (never a key). */
  function complete(c: Completion): void {
    const ms = msSince(c.start);
    metrics.answered(c.provider, c.status, ms / 1000);
    // The line's object is built only for a level that writes it (LOG_LEVEL=warn skips it).
    if (!logger.isLevelEnabled("info")) return;
    logger.info(
      {
        req_id: c.id,
        method: c.method,
        path: c.path,
        status: c.status,
        ms: Math.round(ms * 10) / 10,
        provider: c.provider,
        model: c.model,
        key_id: c.keyId,
        streamed: c.streamed,
        in: c.event?.input_tokens,
        out: c.event?.output_tokens,
        estimated: c.event?.estimated,
      },
      c.keyId ? "proxied" : "refused",
    );
  }

  function usageEventOf(ex: Exchange, status: number): UsageEvent {
    const { usage: reported, estimated } = usageSoFar(ex);
    const input = reported.input;
    const output = reported.output;
    // Refused outright, the request would have been refused without terse too: it saved nothing.
    const refused = ex.rounds === 0 && isUpstreamRefusal(ex.proxyRes?.statusCode ?? 0);
    const saved =
      ex.compression && !refused ? ex.compression.input_tokens_before - ex.compression.input_tokens_after : 0;
    const first = ex.firstRound ?? { usage: reported, estimated };
    return {
      event_id: ex.id,
      key_id: ex.admitted.key.key_id,
      account_id: ex.admitted.key.account_id,
      provider: ex.adapter.provider,
      model: ex.model ?? "",
      status,
      streamed: ex.upstream.streamed,
      input_tokens: input,
      output_tokens: output,
      cache_read_tokens: reported.cacheRead,
      cache_write_tokens: reported.cacheWrite,
      ...withoutTerse(ex.adapter.view, first.usage, saved, ex.newestTurn, first.estimated),
      estimated,
      intensity: ex.compression?.intensity ?? null,
      compression_reason: ex.compression ? ex.compression.reason.slice(0, 256) : null,
      recall_rounds: ex.rounds,
      latency_ms: Math.round(msSince(ex.start)),
      started_at: isoTime(ex.startedAt),
    };
  }

  function onProxyError(ex: Exchange, res: ServerResponse): void {
    if (res.headersSent) {
      cutShort(res);
      finish(ex, res.statusCode); // what the caller saw: a later recall round's status is not
      return;
    }
    const code = expiryOf(ex.proxyReq) ? "upstream_timeout" : "upstream_unavailable";
    // A forwarded request's answer, if terse's own: its timing and limits as any other's.
    const headers: Record<string, string> = {};
    addOwnHeaders(headers, ex);
    const status = sendError(res, new ApiError(code, { headers }), ex.id, logger);
    finish(ex, status);
  }
}

/** What a round the upstream refused costs: providers bill nothing for a request they answer with an error. */
const NOTHING_BILLED: ReportedUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

/**
 * The usage of every upstream round of the exchange so far: as reported; nothing for a
 * round the upstream refused (its error status: a 429 on a long prompt, retried by an
 * agent ten times, is no million tokens of cost or quota); or, for a round that reported
 * none (a cut, an abort, no answer at all), estimated with the tokenizer from what was
 * sent and what came back. A round cut after a partial count (Anthropic's input comes
 * first) keeps the input reported and counts the output relayed: hanging up before the
 * final count does not make an answer cost one token.
 */
function usageSoFar(ex: Exchange): { usage: ReportedUsage; estimated: boolean } {
  const reported = ex.tap.usage;
  const refused = isUpstreamRefusal(ex.proxyRes?.statusCode ?? 0);
  const known = refused || (reported !== undefined && reported.partial !== true);
  const current = refused
    ? NOTHING_BILLED
    : known && reported
      ? reported
      : {
          input: reported?.input ?? estimateTokens(requestText(ex.sentBody)),
          output: Math.max(reported?.output ?? 0, estimateTokens(ex.tap.text)),
          cacheRead: reported?.cacheRead ?? 0,
          cacheWrite: reported?.cacheWrite ?? 0,
        };
  if (!ex.prior) return { usage: current, estimated: !known };
  return { usage: addUsage(ex.prior.usage, current), estimated: ex.prior.estimated || !known };
}

/**
 * The request's recall format, when recall is on for it: the operator has not turned
 * it off, the key compresses context (cuts happen), and the caller did not send
 * `X-Terse-Recall: off`.
 */
function recallFor(
  adapter: WireFormatAdapter,
  admitted: Admitted,
  headers: IncomingHttpHeaders,
  enabled: boolean,
): RecallFormat | undefined {
  if (!enabled || !admitted.key.context_compress) return undefined;
  const asked = headers["x-terse-recall"];
  return typeof asked === "string" && asked.trim().toLowerCase() === "off" ? undefined : adapter.recall;
}

/** What the one log line and the metrics of a request need. */
interface Completion {
  id: string;
  start: number;
  method: string | undefined;
  path: string;
  provider: string;
  status: number;
  model?: string;
  keyId?: string;
  streamed?: boolean;
  event?: UsageEvent;
}

/**
 * Compresses what the adapter lets compression see of the request. A compression bug
 * must never cost the caller their request: it is then forwarded as sent.
 */
/** A request as terse sends it, and the recall format that answers its terse_recall calls. */
interface Prepared {
  compression: CompressionResult;
  recall: RecallFormat | undefined;
}

/**
 * The request compressed, with terse_recall declared where the model can call it: in
 * every request of a session, cut or not, so the tool list the provider caches first
 * never changes. Where the tool cannot go, the cuts name no handle either.
 */
function prepare(
  adapter: WireFormatAdapter,
  op: Operation,
  body: Record<string, unknown>,
  model: string | undefined,
  admitted: Admitted,
  recall: RecallFormat | undefined,
  logger: Logger,
  id: string,
): Prepared | undefined {
  const part = adapter.compressible(body, op);
  if (!part) return undefined;
  const declared = recall?.takesTool(part.body, model) ? recall : undefined;
  let result: CompressionResult;
  try {
    result = compressRequest(adapter.id, part.body, compressionSettings(admitted.key, declared !== undefined));
  } catch (err) {
    logger.error({ err, req_id: id }, "compression failed; forwarding the original body");
    result = {
      body: part.body,
      intensity: null,
      reason: "compression error",
      ...unchangedCounts(adapter.id, part.body),
    };
  }
  if (declared) {
    const withTool = declared.withTool(result.body as Record<string, unknown>);
    result = { ...result, body: withTool, input_tokens_after: result.input_tokens_after + recallToolTokens(adapter) };
  }
  return { compression: { ...result, body: part.put(result.body as Record<string, unknown>) }, recall: declared };
}

/**
 * http-proxy parses a string target on every call (url.parse); an upstream URL without a
 * query (every format's but Gemini's, which carries the key there) is one of a handful,
 * parsed once. http-proxy only reads the object.
 */
const parsedTargets = new Map<string, UrlWithStringQuery>();
function targetOf(url: string): string | UrlWithStringQuery {
  if (url.includes("?")) return url;
  let parsed = parsedTargets.get(url);
  if (!parsed) {
    parsed = parseUrl(url);
    if (parsedTargets.size < 64) parsedTargets.set(url, parsed);
  }
  return parsed;
}

function baseUrl(config: DataPlaneConfig, adapter: WireFormatAdapter): string {
  const url = config[adapter.baseUrl];
  return url.endsWith("/") ? url.slice(0, -1) : url;
}

function serverTiming(t: Timing): string {
  const head = `auth;dur=${ms(t.auth)}, body;desc="request body read";dur=${ms(t.body)}, compression;dur=${ms(t.compression)}`;
  return t.ttfb === undefined ? head : `${head}, upstream;desc="time to first byte";dur=${ms(t.ttfb)}`;
}

/** Milliseconds to the hundredth, as `toFixed(2)` writes them, from integers (formatting a fraction costs more, on every answer). */
function ms(x: number): string {
  const hundredths = Math.max(0, Math.round(x * 100));
  const rest = hundredths % 100;
  return `${(hundredths - rest) / 100}.${rest < 10 ? "0" : ""}${rest}`;
}

/**
 * `Date.toISOString()` of a time in ms, its second's part built once per second: every
 * usage event carries one.
 */
let isoSecond = Number.NaN;
let isoPrefix = "";
function isoTime(at: number): string {
  const second = Math.floor(at / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 20); // 2026-11-24T05:20:33.
  }
  return `${isoPrefix}${String(at - second * 1000).padStart(3, "0")}Z`;
}

/** `text/event-stream`, any case, with or without parameters. */
function isEventStream(type: string | undefined): boolean {
  return type !== undefined && type.length >= 17 && type.slice(0, 17).toLowerCase() === "text/event-stream";
}

/**
 * Ends a response its upstream cut short: what was already written still reaches the
 * caller (destroying the socket at once would drop writes not yet flushed), then the
 * connection closes with the body unfinished, so the caller cannot take it for whole.
 */
function cutShort(res: ServerResponse): void {
  const socket = res.socket;
  if (socket && !socket.destroyed) socket.destroySoon();
  else res.destroy();
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * A header that must come once: its value, or all its values when it came more often
 * (Node's `req.headers` keeps the first of a repeated Authorization and joins others).
 */
function soleHeader(req: IncomingMessage, name: string): string | string[] | undefined {
  const values: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]?.length === name.length && raw[i]?.toLowerCase() === name) values.push(raw[i + 1] ?? "");
  }
  return values.length > 1 ? values : values[0];
}

/** The request's path, its query left out. */
export function pathOf(url: string | undefined): string {
  const i = url?.indexOf("?") ?? -1;
  return i >= 0 && url ? url.slice(0, i) : (url ?? "/");
}

/**
 * The caller's query string as forwarded, without `key`: that is where Gemini's clients put
 * a credential (a provider key, or a service key sent the Gemini way), and no credential of
 * the caller's goes upstream but the provider key, where the provider wants it.
 */
function queryOf(url: string | undefined): string {
  const i = url?.indexOf("?") ?? -1;
  if (i < 0 || !url) return "";
  const query = url.slice(i);
  if (!/[?&]key=/i.test(query)) return query;
  const params = new URLSearchParams(query.slice(1));
  for (const name of [...params.keys()]) if (name.toLowerCase() === "key") params.delete(name);
  const rest = params.toString();
  return rest ? `?${rest}` : "";
}
