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
}

const DEFAULTS: FakeBehaviour = {
  status: 200,
  usage: { input: 11, output: 7 },
  text: "Hello from the fake.",
  chunkDelayMs: 0,
  hang: false,
};

export interface FakeProvider {
  url: string;
  server: Server;
  received: ReceivedRequest[];
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
export async function startFakeProvider(): Promise<FakeProvider> {
  const received: ReceivedRequest[] = [];
  let markAborted: () => void = () => undefined;
  const fake: FakeProvider = {
    url: "",
    server: createServer((req, res) => void handle(req, res)),
    received,
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
    received.push({ provider, method: req.method ?? "", url, headers: req.headers, body });
    const b = fake.behaviour;
    res.on("close", () => {
      if (!res.writableFinished) markAborted();
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
      res
        .writeHead(200, { "content-type": "application/json", "x-request-id": "req_fake" })
        .end(JSON.stringify(jsonBody(provider, model, b.text, b.usage)));
      return;
    }
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    const pieces = b.text.split(/(?<= )/);
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "x-request-id": "req_fake",
    });
    for (const event of sseEvents(provider, model, pieces, b.usage, includeUsage)) {
      if (res.destroyed) return;
      res.write(event);
      if (b.chunkDelayMs > 0) await new Promise((r) => setTimeout(r, b.chunkDelayMs));
    }
    res.end();
  }

  await new Promise<void>((resolve) => fake.server.listen(0, "127.0.0.1", () => resolve()));
  fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
  return fake;
}
