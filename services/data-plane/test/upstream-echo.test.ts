import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { jsonBody, type Reply as ModelReply, sseEvents } from "@terse/fake-provider";
import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import OpenAI from "openai";
import { type Harness, PROVIDER_KEY, sdkClients, startHarness } from "./harness.ts";

// What an upstream sends back is relayed as sent, but never with the caller's provider key
// in it, whatever the status and wherever it sits (a header, a redirect's Location or
// body), and a stream's bytes are relayed as they came. The fake provider answers as the
// providers do; this upstream answers as a misbehaving gateway might.

type Reply = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** Headers echoing what the upstream received: the OpenAI key's header, and the URL (Gemini's key). */
const echoes = (req: IncomingMessage) => ({
  "x-echo-auth": String(req.headers.authorization ?? ""),
  "x-echo-url": String(req.url),
  "content-type": "application/json",
});

/** Chunks of an OpenAI stream whose text holds bytes that are no UTF-8 (0xFF 0xFE). */
const INVALID_UTF8_STREAM = [
  Buffer.from('data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a'),
  Buffer.from([0xff, 0xfe]),
  Buffer.from('b"}}]}\n\n'),
  Buffer.from(
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n',
  ),
  Buffer.from("data: [DONE]\n\n"),
];

describe("data plane: what a misbehaving upstream echoes", () => {
  let upstream: Server;
  let reply: Reply = (_req, res) => res.end();
  let h: Harness;
  let auth: Record<string, string>;

  before(async () => {
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => reply(req, res, Buffer.concat(chunks).toString("utf8")));
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    h = await startHarness({ OPENAI_BASE_URL: url, GEMINI_BASE_URL: url });
    auth = {
      authorization: `Bearer ${(await h.addKey()).rawKey}`,
      "x-provider-key": PROVIDER_KEY,
      "content-type": "application/json",
    };
  });
  after(async () => {
    await h.close();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  const chat = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }], ...extra });

  /** The whole response as the client saw it: status line, every header and the body, as text. */
  async function seen(path: string, body: string): Promise<{ status: number; all: string; headers: Headers }> {
    const res = await fetch(`${h.url}${path}`, { method: "POST", headers: auth, body, redirect: "manual" });
    const text = await res.text();
    return { status: res.status, headers: res.headers, all: `${[...res.headers].flat().join("\n")}\n${text}` };
  }

  for (const status of [200, 302, 401]) {
    it(`a ${status} whose headers and body echo the OpenAI key reaches the client without it`, async () => {
      reply = (req, res) => {
        const extra =
          status === 302 ? { location: `https://elsewhere.example/?auth=${req.headers.authorization}` } : {};
        res.writeHead(status, { ...echoes(req), ...extra });
        // A 2xx answer's body is the provider's answer and goes as sent (no provider echoes the key there).
        res.end(
          status === 200
            ? '{"ok":true}'
            : JSON.stringify({ error: { message: `you sent ${req.headers.authorization}` } }),
        );
      };
      const { status: got, all, headers } = await seen("/v1/chat/completions", chat());
      expect(got).to.equal(status);
      expect(headers.get("x-echo-auth")).to.equal("Bearer [REDACTED]");
      expect(all).not.to.include(PROVIDER_KEY);
      if (status !== 200) expect(all).to.include("you sent Bearer [REDACTED]");
    });
  }

  it("a redirect's Location holding Gemini's key (in the URL) reaches the client without it", async () => {
    reply = (req, res) => {
      res.writeHead(307, { ...echoes(req), location: `https://elsewhere.example${req.url}` });
      res.end(`moved: ${req.url}`);
    };
    const { status, all, headers } = await seen(
      "/v1beta/models/gemini-2.5-flash:generateContent",
      JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] }),
    );
    expect(status).to.equal(307);
    expect(headers.get("location")).to.match(/key=\[REDACTED\]/);
    expect(all).not.to.include(PROVIDER_KEY);
    expect(all).not.to.include(encodeURIComponent(PROVIDER_KEY));
  });

  it("reads the usage of a JSON answer a gateway compressed anyway, and relays it compressed as it came", async () => {
    const answer = {
      id: "c2",
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: "Hi" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
    };
    reply = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
      res.end(gzipSync(JSON.stringify(answer)));
    };
    const res = await fetch(`${h.url}/v1/chat/completions`, { method: "POST", headers: auth, body: chat() });
    expect(res.headers.get("content-encoding")).to.equal("gzip");
    expect(await res.json()).to.deep.equal(answer);
    const id = res.headers.get("x-terse-request-id");
    const event = await waitFor(async () => (await h.events()).find((e) => e.event_id === id), {
      what: "the answer's usage event",
    });
    expect(event).to.include({ input_tokens: 5, output_tokens: 3, estimated: false });
  });

  describe("a refusal a gateway compressed anyway", () => {
    const refusal = (req: IncomingMessage) => ({
      error: { message: `Rate limit reached for ${req.headers.authorization}`, type: "requests", code: "rate_limit" },
    });

    it("reaches the SDK decoded, without the key: its error class, message and retry-after as the provider sent them", async () => {
      reply = (req, res) => {
        res.writeHead(429, { "content-type": "application/json", "content-encoding": "gzip", "retry-after": "7" });
        res.end(gzipSync(JSON.stringify(refusal(req))));
      };
      const client = sdkClients(h.url, auth.authorization?.slice("Bearer ".length) ?? "").openai();
      const err = await client.chat.completions
        .create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] })
        .catch((e: unknown) => e);
      expect(err).to.be.instanceOf(OpenAI.RateLimitError);
      const refused = err as InstanceType<typeof OpenAI.RateLimitError>;
      expect(refused.message).to.equal("429 Rate limit reached for Bearer [REDACTED]");
      expect(refused.headers.get("retry-after")).to.equal("7");
      expect(refused.headers.get("content-encoding")).to.equal(null);
    });

    it("in a coding terse cannot undo: the status and headers, without the body it could not search", async () => {
      reply = (req, res) => {
        res.writeHead(429, { "content-type": "application/json", "content-encoding": "zstd", "retry-after": "7" });
        res.end(Buffer.from(JSON.stringify(refusal(req))));
      };
      const res = await fetch(`${h.url}/v1/chat/completions`, { method: "POST", headers: auth, body: chat() });
      expect(res.status).to.equal(429);
      expect(res.headers.get("retry-after")).to.equal("7");
      expect(res.headers.get("content-encoding")).to.equal(null);
      expect(await res.text()).to.equal("");
    });
  });

  /** A streamed chat completion, by default one the caller did not ask usage of (terse asks, and filters its chunk out). */
  const streamedChat = (
    body = chat({ stream: true }),
  ): Promise<{ headers: IncomingMessage["headers"]; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const req = request(`${h.url}/v1/chat/completions`, { method: "POST", headers: auth }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("close", () => res.complete || reject(new Error("the stream was cut")));
      });
      req.on("error", reject);
      req.end(body);
    });

  it("relays a stream a gateway compressed anyway decoded, filtered as any other, its usage read", async () => {
    const plain = Buffer.concat(INVALID_UTF8_STREAM.filter((_, i) => i !== 1)).toString("utf8");
    reply = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip" });
      const zipped = gzipSync(plain);
      // In pieces, as a stream comes: the decoder works as they arrive.
      for (let i = 0; i < zipped.length; i += 7) res.write(zipped.subarray(i, i + 7));
      res.end();
    };
    const { headers, body } = await streamedChat();
    expect(headers["content-encoding"]).to.equal(undefined);
    const usageChunk = plain.split("\n\n")[1] as string;
    expect(body.toString("utf8")).to.equal(plain.replace(`${usageChunk}\n\n`, ""));
    const id = headers["x-terse-request-id"];
    const event = await waitFor(async () => (await h.events()).find((e) => e.event_id === id));
    expect(event).to.include({ input_tokens: 3, output_tokens: 2, estimated: false });
  });

  it("cuts a stream whose inner coding is not what it says, and goes on serving", async () => {
    reply = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip, br" });
      res.end(Buffer.from("no brotli here, nor gzip".repeat(20)));
    };
    const cut = await streamedChat().then(
      () => false,
      () => true,
    );
    expect(cut, "the stream ended cut").to.equal(true);
    const health = await fetch(`${h.url}/healthz`);
    expect(health.status).to.equal(200);
  });

  it("relays a stream in a coding terse cannot undo as it came, unfiltered", async () => {
    const bytes = Buffer.from("\x28\xb5\x2f\xfd not really zstd\n\n", "latin1");
    reply = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "zstd, gzip" });
      res.end(bytes);
    };
    const { headers, body } = await streamedChat();
    expect(headers["content-encoding"]).to.equal("zstd, gzip");
    expect(body.equals(bytes)).to.equal(true);
  });

  it("relays a stream's bytes as the upstream sent them, bytes that are no UTF-8 included", async () => {
    reply = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const chunk of INVALID_UTF8_STREAM) res.write(chunk);
      res.end();
    };
    // The caller asks for the usage chunk itself: nothing of the stream is terse's to filter.
    const body = chat({ stream: true, stream_options: { include_usage: true } });
    const { headers, body: received } = await streamedChat(body);
    expect(received.equals(Buffer.concat(INVALID_UTF8_STREAM)), received.toString("latin1")).to.equal(true);
    // Its usage is read from the decoded text, as before.
    const id = headers["x-terse-request-id"];
    const event = await waitFor(async () => (await h.events()).find((e) => e.event_id === id), {
      what: "the stream's usage event",
    });
    expect(event).to.include({ input_tokens: 3, output_tokens: 2 });
  });
  describe("recall, when a gateway compresses the answers anyway", () => {
    /** A build log long enough for `standard` to cut, each line naming its number. */
    const LOG = Array.from(
      { length: 1_000 },
      (_, i) => `[build ${String(i + 1).padStart(4, "0")}] compiled src/m${i + 1}.c`,
    );
    const usage = { input: 40, output: 5 };
    /** The handle a request's cut marker names. */
    const handleIn = (body: string) => /recall ([0-9a-f]{12})/.exec(body)?.[1] ?? "none";
    /** The client's session: its question, the build it ran, and the log as the result. */
    const askAboutLog = {
      model: "gpt-4o-mini",
      messages: [
        { role: "user" as const, content: "The build failed. What does the log say?" },
        {
          role: "assistant" as const,
          content: null,
          tool_calls: [
            { id: "call_log", type: "function" as const, function: { name: "bash", arguments: '{"command":"make"}' } },
          ],
        },
        { role: "tool" as const, tool_call_id: "call_log", content: LOG.join("\n") },
      ],
    };

    for (const stream of [false, true]) {
      it(`${stream ? "streamed" : "JSON"}: terse answers the model's terse_recall itself and the client gets one clean answer`, async () => {
        const { rawKey, record } = await h.addKey({ context_compress: true, context_compress_level: "standard" });
        const received: Record<string, unknown>[] = [];
        reply = (_req, res, body) => {
          const request = JSON.parse(body) as Record<string, unknown>;
          received.push(request);
          // The model recalls line 500 of the cut log by the handle its marker names, then answers.
          const handle = handleIn(body);
          const answer: ModelReply =
            received.length === 1
              ? { text: "", calls: [{ id: "call_r", name: "terse_recall", arguments: { handle, lines: "500" } }] }
              : { text: "Line 500 compiled src/m500.c.", calls: [] };
          const plain = stream
            ? sseEvents("openai", "gpt-4o-mini", answer, usage, true).join("")
            : JSON.stringify(jsonBody("openai", "gpt-4o-mini", answer, usage));
          res.writeHead(200, {
            "content-type": stream ? "text/event-stream" : "application/json",
            "content-encoding": "gzip",
          });
          res.end(gzipSync(plain));
        };
        const client = sdkClients(h.url, rawKey).openai();
        const done = stream
          ? await client.chat.completions.stream(askAboutLog).finalChatCompletion()
          : await client.chat.completions.create(askAboutLog);

        expect(done.choices[0]?.message.content).to.equal("Line 500 compiled src/m500.c.");
        expect(done.choices[0]?.message.tool_calls ?? []).to.deep.equal([]);
        expect(received, "a recall round was sent upstream").to.have.length(2);
        const messages = (received[1] as { messages: { role: string; tool_call_id?: string; content: string }[] })
          .messages;
        const recalled = messages.find((m) => m.role === "tool" && m.tool_call_id === "call_r");
        expect(recalled?.content).to.include(LOG[499]);
        const event = await waitFor(
          async () => (await h.events()).find((e) => e.key_id === record.key_id && e.recall_rounds === 1),
          { what: "the request's usage event" },
        );
        expect(event).to.include({ input_tokens: 80, output_tokens: 10, estimated: false });
      });
    }

    it("streamed: a recall round answered in a coding terse cannot undo ends the client's stream cut, metered once", async () => {
      const { rawKey, record } = await h.addKey({ context_compress: true, context_compress_level: "standard" });
      let calls = 0;
      reply = (_req, res, body) => {
        calls++;
        if (calls === 1) {
          const answer: ModelReply = {
            text: "",
            calls: [{ id: "call_r", name: "terse_recall", arguments: { handle: handleIn(body) } }],
          };
          res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip" });
          res.end(gzipSync(sseEvents("openai", "gpt-4o-mini", answer, usage, true).join("")));
          return;
        }
        if (calls === 3) {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify(jsonBody("openai", "gpt-4o-mini", { text: "Later.", calls: [] }, usage)));
          return;
        }
        res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "zstd" });
        res.end(Buffer.from("\x28\xb5\x2f\xfd not really zstd\n\n", "latin1"));
      };
      const client = sdkClients(h.url, rawKey).openai();
      const outcome = await client.chat.completions
        .stream(askAboutLog)
        .finalChatCompletion()
        .then(
          () => "whole",
          () => "cut",
        );
      expect(outcome).to.equal("cut");
      expect(calls).to.equal(2);
      // A later call's event: the publisher sends in order, so the cut one's would be in by then, and any second copy.
      await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] });
      const mine = await waitFor(
        async () => {
          const events = (await h.events()).filter((e) => e.key_id === record.key_id);
          return events.some((e) => e.recall_rounds === 0) ? events : undefined;
        },
        { what: "the later call's usage event" },
      );
      expect(mine.filter((e) => e.recall_rounds === 1)).to.have.length(1);
    });
  });
});
