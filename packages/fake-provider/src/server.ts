import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { modelList, tokenCountBody } from "./catalogue.ts";
import { replyTo, type ScriptedToolCall } from "./reply.ts";
import { responsesJsonBody, responsesSseEvents } from "./responses-wire.ts";
import { type Endpoint, isGeneration, keyOf, type Provider, routeOf } from "./routes.ts";
import { errorBody, geminiRefusal, jsonBody, sseEvents, type Usage } from "./wire.ts";

/** What the fake upstream received, for assertions. */
export interface ReceivedRequest {
  provider: Provider;
  endpoint: Endpoint;
  method: string;
  /** Path and query as received (the Gemini key is in the query). */
  url: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingMessage["headers"];
  /** `{}` for a request with no body (the model lists). */
  body: Record<string, unknown>;
}

/** A request to a path the fake does not serve (answered 404): what a client called that no provider has. */
export interface UnroutedRequest {
  method: string;
  url: string;
}

export interface FakeBehaviour {
  /** Status to answer with; >= 400 gives the provider's error envelope echoing the key. */
  status: number;
  usage: Usage;
  text: string;
  /** Delay between SSE events, ms. */
  chunkDelayMs: number;
  /** Delay before anything of the answer is written (a model slow to start), ms. */
  firstByteDelayMs: number;
  /** Write nothing of the answer until this settles (a test releases it once it saw what happens meanwhile). */
  holdUntil: Promise<unknown> | null;
  /** Accept the request and never answer (timeouts, aborts). */
  hang: boolean;
  /** Cut the response after this many SSE events, or halfway through a JSON body. */
  cut: Cut | null;
  /** An agent exchange: a tool call first, then `answer` once its result comes back (see ScriptedToolCall). */
  toolCall: ScriptedToolCall | null;
  /**
   * Behaviour for single generation requests, by number (1 for the first one since the
   * start or the last reset): the second call of a loop failing, cut or slow while the
   * first is answered as usual. A fault header still applies on top.
   */
  nth: Record<number, Partial<NthBehaviour>>;
}

/** What can differ for one generation request (see FakeBehaviour.nth). */
export type NthBehaviour = Pick<
  FakeBehaviour,
  "status" | "hang" | "cut" | "chunkDelayMs" | "firstByteDelayMs" | "holdUntil"
>;

/**
 * How a response is cut: a TCP reset (a crash), a clean close of the connection in the
 * middle of the body (a restart behind a load balancer), or silence (a stuck upstream).
 */
export interface Cut {
  afterEvents: number;
  how: "reset" | "close" | "stall";
}

/**
 * A request can pick its own fault with this header (it passes through the proxy like
 * any caller header), so one load run can mix faults: `status:NNN`, `hang`, and
 * `reset-after:N`, `close-after:N`, `stall-after:N` (see Cut).
 */
export const FAULT_HEADER = "x-fake-fault";

function faultOf(req: IncomingMessage): Partial<FakeBehaviour> {
  const fault = req.headers[FAULT_HEADER];
  if (typeof fault !== "string") return {};
  const [kind, arg] = fault.split(":");
  if (kind === "hang") return { hang: true };
  if (kind === "status") return { status: Number(arg) };
  const cut = kind?.match(/^(reset|close|stall)-after$/)?.[1] as Cut["how"] | undefined;
  if (cut) return { cut: { afterEvents: Number(arg), how: cut } };
  return {};
}

const CUT_AFTER_WRITE_MS = 20;

/** Counters that stay small however long the fake runs (see `record`). */
export interface FakeStats {
  requests: number;
  /** Of requests, the generation ones (what FakeBehaviour.nth counts). */
  generations: number;
  /** Responses the other side closed before they were finished (not the fake's own cuts). */
  closedByPeer: number;
  /** Responses the fake cut on purpose. */
  cuts: number;
}

const DEFAULTS: FakeBehaviour = {
  status: 200,
  usage: { input: 11, output: 7 },
  text: "Hello from the fake.",
  chunkDelayMs: 0,
  firstByteDelayMs: 0,
  holdUntil: null,
  hang: false,
  cut: null,
  toolCall: null,
  nth: {},
};

const freshStats = (): FakeStats => ({ requests: 0, generations: 0, closedByPeer: 0, cuts: 0 });

export interface FakeProvider {
  url: string;
  server: Server;
  /** Every request, unless started with `record: false` (long runs). */
  received: ReceivedRequest[];
  /** Requests to paths no provider serves, answered 404 (recorded unless `record: false`). */
  unrouted: UnroutedRequest[];
  stats: FakeStats;
  behaviour: FakeBehaviour;
  /** Resolves when a response the fake was writing got closed by the other side. */
  aborted: Promise<void>;
  set(overrides: Partial<FakeBehaviour>): void;
  reset(): void;
  close(): Promise<void>;
}

/**
 * A fake upstream for all three providers on one port, answering in their exact wire
 * formats (JSON and SSE with usage) and recording every request it receives: OpenAI's
 * chat completions and Responses API, Anthropic's messages and count_tokens, Gemini's
 * generateContent, streamGenerateContent and countTokens, and the model lists.
 */
export async function startFakeProvider(options: { record?: boolean } = {}): Promise<FakeProvider> {
  const record = options.record ?? true;
  const received: ReceivedRequest[] = [];
  const unrouted: UnroutedRequest[] = [];
  let markAborted: () => void = () => undefined;
  const fake: FakeProvider = {
    url: "",
    server: createServer((req, res) => void handle(req, res)),
    received,
    unrouted,
    stats: freshStats(),
    behaviour: { ...DEFAULTS, usage: { ...DEFAULTS.usage }, nth: {} },
    aborted: new Promise<void>((r) => {
      markAborted = r;
    }),
    set(overrides) {
      Object.assign(fake.behaviour, overrides);
    },
    reset() {
      fake.behaviour = { ...DEFAULTS, usage: { ...DEFAULTS.usage }, nth: {} };
      received.length = 0;
      unrouted.length = 0;
      fake.stats = freshStats();
      fake.aborted = new Promise<void>((r) => {
        markAborted = r;
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        fake.server.closeAllConnections();
        fake.server.close(() => resolve());
      }),
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const url = req.url ?? "/";
    const parsed = new URL(url, "http://fake");
    const route = routeOf(req.method ?? "", parsed.pathname, req.headers, parsed.searchParams);
    if (!route) {
      if (record) unrouted.push({ method: req.method ?? "", url });
      res.writeHead(404).end();
      return;
    }
    const body = parseBody(raw);
    if (body === null) {
      res
        .writeHead(400, { "content-type": "application/json" })
        .end(JSON.stringify({ error: { message: "not JSON" } }));
      return;
    }
    const { provider, endpoint } = route;
    fake.stats.requests++;
    if (record) {
      const query = Object.fromEntries(parsed.searchParams);
      received.push({
        provider,
        endpoint,
        method: req.method ?? "",
        url,
        path: parsed.pathname,
        query,
        headers: req.headers,
        body,
      });
    }
    /** This answer's number among the generation ones (0 for the others): what `nth` picks, and Responses item ids. */
    const n = isGeneration(endpoint) ? ++fake.stats.generations : 0;
    const nth = n > 0 ? fake.behaviour.nth[n] : undefined;
    const b = { ...fake.behaviour, ...nth, ...faultOf(req) };
    let cutting = false;
    /**
     * Cuts the response once what was written has had a moment to reach the peer (a
     * reset right after the writes makes the kernel drop them unread, which would test
     * a failed connect, not a stream cut midway).
     */
    const cut = (how: Cut["how"]) => {
      cutting = true;
      fake.stats.cuts++;
      if (how === "stall") return;
      setTimeout(() => (how === "reset" ? res.socket?.resetAndDestroy() : res.socket?.end()), CUT_AFTER_WRITE_MS);
    };
    const sendJson = (value: unknown) => {
      const json = JSON.stringify(value);
      res.writeHead(200, { "content-type": "application/json", "x-request-id": "req_fake" });
      if (b.cut === null) return void res.end(json);
      res.write(json.slice(0, json.length >> 1));
      cut(b.cut.how);
    };
    res.on("close", () => {
      if (res.writableFinished || cutting) return;
      fake.stats.closedByPeer++;
      markAborted();
    });
    if (b.hang) return;
    if (b.firstByteDelayMs > 0) await new Promise((r) => setTimeout(r, b.firstByteDelayMs));
    await b.holdUntil?.catch(() => undefined);
    if (res.destroyed) return;
    if (b.status >= 400) {
      res
        .writeHead(b.status, { "content-type": "application/json" })
        .end(JSON.stringify(errorBody(provider, b.status, keyOf(provider, req.headers, parsed.searchParams))));
      return;
    }
    if (endpoint === "models") return sendJson(modelList(provider));
    if (!isGeneration(endpoint)) return sendJson(tokenCountBody(provider, body));
    const model = String(body.model ?? route.pathModel ?? "fake-model");
    const refusal = provider === "gemini" ? geminiRefusal(body, model) : null;
    if (refusal !== null) {
      res
        .writeHead(400, { "content-type": "application/json" })
        .end(JSON.stringify({ error: { code: 400, message: refusal, status: "INVALID_ARGUMENT" } }));
      return;
    }
    const reply = replyTo(endpoint, body, b.text, b.toolCall);
    const responses = endpoint === "responses";
    if (!wantsStream(endpoint, body)) {
      return sendJson(
        responses ? responsesJsonBody(model, reply, b.usage, n) : jsonBody(provider, model, reply, b.usage),
      );
    }
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    const events = responses
      ? responsesSseEvents(model, reply, b.usage, n)
      : sseEvents(provider, model, reply, b.usage, includeUsage);
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "x-request-id": "req_fake",
    });
    let sent = 0;
    for (const event of events) {
      if (res.destroyed) return;
      if (sent++ === b.cut?.afterEvents) return cut(b.cut.how);
      res.write(event);
      if (b.chunkDelayMs > 0) await new Promise((r) => setTimeout(r, b.chunkDelayMs));
    }
    res.end();
  }

  await new Promise<void>((resolve) => fake.server.listen(0, "127.0.0.1", () => resolve()));
  fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
  return fake;
}

function parseBody(raw: string): Record<string, unknown> | null {
  if (!raw) return {};
  try {
    return JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** Gemini says so in its path; the others with `stream: true` in the body. */
function wantsStream(endpoint: Endpoint, body: Record<string, unknown>): boolean {
  if (endpoint === "streamGenerateContent") return true;
  return endpoint !== "generateContent" && body.stream === true;
}
