import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { errorBody, jsonBody, type Provider, sseEvents, type Usage } from "./wire.ts";

/** What the fake upstream received, for assertions. */
export interface ReceivedRequest {
  provider: Provider;
  method: string;
  /** Path and query as received (the Gemini key is in the query). */
  url: string;
  headers: IncomingMessage["headers"];
  body: Record<string, unknown>;
}

export interface FakeBehaviour {
  /** Status to answer with; >= 400 gives the provider's error envelope echoing the key. */
  status: number;
  usage: Usage;
  text: string;
  /** Delay between SSE events, ms. */
  chunkDelayMs: number;
  /** Accept the request and never answer (timeouts, aborts). */
  hang: boolean;
  /** Cut the response after this many SSE events, or halfway through a JSON body. */
  cut: Cut | null;
}

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
  hang: false,
  cut: null,
};

export interface FakeProvider {
  url: string;
  server: Server;
  /** Every request, unless started with `record: false` (long runs). */
  received: ReceivedRequest[];
  stats: FakeStats;
  behaviour: FakeBehaviour;
  /** Resolves when a response the fake was writing got closed by the other side. */
  aborted: Promise<void>;
  set(overrides: Partial<FakeBehaviour>): void;
  reset(): void;
  close(): Promise<void>;
}

function providerOf(url: string): Provider | null {
  if (url.startsWith("/v1/chat/completions")) return "openai";
  if (url.startsWith("/v1/messages")) return "anthropic";
  if (/^\/v1beta\/models\/[^/]+:(stream)?generateContent/i.test(url)) return "gemini";
  return null;
}

function keyOf(provider: Provider, req: IncomingMessage): string | undefined {
  if (provider === "openai") return req.headers.authorization?.replace(/^Bearer /, "");
  if (provider === "anthropic") return req.headers["x-api-key"] as string | undefined;
  return new URL(req.url ?? "/", "http://x").searchParams.get("key") ?? undefined;
}

function wantsStream(provider: Provider, url: string, body: Record<string, unknown>): boolean {
  return provider === "gemini" ? url.includes(":streamGenerateContent") : body.stream === true;
}

/**
 * A fake upstream for all three providers on one port, answering in their exact wire
 * formats (JSON and SSE with usage) and recording every request it receives.
 */
export async function startFakeProvider(options: { record?: boolean } = {}): Promise<FakeProvider> {
  const record = options.record ?? true;
  const received: ReceivedRequest[] = [];
  let markAborted: () => void = () => undefined;
  const fake: FakeProvider = {
    url: "",
    server: createServer((req, res) => void handle(req, res)),
    received,
    stats: { requests: 0, closedByPeer: 0, cuts: 0 },
    behaviour: { ...DEFAULTS },
    aborted: new Promise<void>((r) => {
      markAborted = r;
    }),
    set(overrides) {
      Object.assign(fake.behaviour, overrides);
    },
    reset() {
      fake.behaviour = { ...DEFAULTS, usage: { ...DEFAULTS.usage } };
      received.length = 0;
      fake.stats = { requests: 0, closedByPeer: 0, cuts: 0 };
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
    const provider = providerOf(url);
    if (!provider) {
      res.writeHead(404).end();
      return;
    }
    const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    fake.stats.requests++;
    if (record) received.push({ provider, method: req.method ?? "", url, headers: req.headers, body });
    const b = { ...fake.behaviour, ...faultOf(req) };
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
    res.on("close", () => {
      if (res.writableFinished || cutting) return;
      fake.stats.closedByPeer++;
      markAborted();
    });
    if (b.hang) return;
    if (b.status >= 400) {
      res
        .writeHead(b.status, { "content-type": "application/json" })
        .end(JSON.stringify(errorBody(provider, b.status, keyOf(provider, req))));
      return;
    }
    const model = String(body.model ?? url.match(/models\/([^:]+)/)?.[1] ?? "fake-model");
    if (!wantsStream(provider, url, body)) {
      const json = JSON.stringify(jsonBody(provider, model, b.text, b.usage));
      res.writeHead(200, { "content-type": "application/json", "x-request-id": "req_fake" });
      if (b.cut === null) return void res.end(json);
      res.write(json.slice(0, json.length >> 1));
      return cut(b.cut.how);
    }
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    const pieces = b.text.split(/(?<= )/);
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "x-request-id": "req_fake",
    });
    let sent = 0;
    for (const event of sseEvents(provider, model, pieces, b.usage, includeUsage)) {
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
