import { request } from "node:http";
import { connect } from "node:net";
import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import { type Harness, logLines, PROVIDER_KEY, startHarness } from "./harness.ts";

// Streaming without buffering, client aborts, dead and silent upstreams, and upstream
// errors with the provider key redacted.

/**
 * The silent-upstream test waits this long for its 504; the streams below pause a tenth
 * of it or less between events. Closer, a busy machine that runs an upstream's timer late
 * makes the proxy cut a live stream as idle.
 */
const IDLE_TIMEOUT_MS = 2_000;

describe("data plane: streams, aborts and upstream failures", () => {
  let h: Harness;
  let auth: Record<string, string>;

  before(async () => {
    h = await startHarness({ UPSTREAM_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS) });
    auth = {
      authorization: `Bearer ${(await h.addKey()).rawKey}`,
      "x-provider-key": PROVIDER_KEY,
      "content-type": "application/json",
    };
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  const chat = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "Tell me a story" }],
      stream: true,
      ...extra,
    });

  it("relays each SSE chunk before the upstream sends the next (200 ms apart)", async () => {
    const pauseMs = 200;
    h.fake.set({ chunkDelayMs: pauseMs, text: "one two three four " });
    const res = await fetch(`${h.url}/v1/chat/completions`, { method: "POST", headers: auth, body: chat() });
    expect(res.headers.get("content-type")).to.match(/text\/event-stream/);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const arrivals: number[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const events = new TextDecoder().decode(value).split("\n\n").filter(Boolean).length;
      for (let i = 0; i < events; i++) arrivals.push(Date.now());
    }
    // role chunk, 4 text chunks, finish chunk, [DONE] (the usage chunk was removed).
    expect(arrivals.length).to.equal(7);
    const gaps = arrivals.slice(1).map((t, i) => t - (arrivals[i] ?? t));
    // Chunks arrive spread out as the upstream sent them, not all at once at the end. A
    // moment the machine gives this process no CPU delays one arrival and shortens the
    // gap after it, so most gaps, not all, must be at least half the upstream's pause.
    expect(gaps.filter((g) => g >= pauseMs / 2).length, `gaps ${gaps.join(", ")} ms`).to.be.at.least(4);
  });

  it("aborts the upstream when the caller hangs up, and still meters with estimated tokens", async () => {
    h.fake.set({ chunkDelayMs: 300, text: "alpha beta gamma delta epsilon zeta eta theta " });
    const controller = new AbortController();
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: auth,
      body: chat(),
      signal: controller.signal,
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await reader.read();
    controller.abort();
    await h.fake.aborted; // the upstream saw its connection closed
    const event = await waitFor(async () => (await h.events()).find((e) => e.estimated && e.streamed));
    expect(event.output_tokens).to.be.greaterThan(0);
    expect(event.input_tokens).to.be.greaterThan(0);
  });

  for (const how of ["reset", "close", "stall"] as const) {
    it(`ends the caller's stream, cut short, when the upstream ${how}s it midway, and meters it once`, async () => {
      h.fake.set({ cut: { afterEvents: 2, how }, text: "one two three four " });
      const seen = await new Promise<{ status: number; complete: boolean; body: string; id: string }>(
        (resolve, reject) => {
          const req = request(`${h.url}/v1/chat/completions`, { method: "POST", headers: auth }, (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (c: string) => {
              body += c;
            });
            const id = String(res.headers["x-terse-request-id"]);
            res.on("close", () => resolve({ status: res.statusCode ?? 0, complete: res.complete, body, id }));
          });
          req.on("error", reject);
          req.end(chat());
        },
      );
      // The stream had begun: the caller sees its status and the events so far, then an
      // end that cannot pass for a whole response (no [DONE], an unfinished chunked body).
      expect(seen).to.include({ status: 200, complete: false });
      expect(seen.body).to.include('"content":"one "').and.not.to.include("[DONE]");
      const events = await waitFor(async () => {
        const mine = (await h.events()).filter((e) => e.event_id === seen.id);
        return mine.length > 0 ? mine : undefined;
      });
      expect(events).to.have.length(1);
      expect(events[0]).to.include({ status: 200, streamed: true, estimated: true });
    });
  }

  it("forwards nothing for a caller that hangs up the moment its request is sent", async () => {
    h.fake.set({ chunkDelayMs: 50, text: "one two three four five six " });
    const body = chat();
    const target = new URL(h.url);
    for (let i = 0; i < 20; i++) {
      // The body and the caller's FIN arrive in one read: the connection is closed
      // before the proxy has even looked at the body.
      const socket = connect(Number(target.port), target.hostname);
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      const head = Object.entries({ ...auth, "content-length": String(Buffer.byteLength(body)) })
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("");
      socket.end(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n${head}\r\n${body}`);
      socket.resume();
      await new Promise<void>((resolve) => socket.once("close", () => resolve()));
    }
    // Whatever reached the upstream was aborted, not streamed to no one: a stream left
    // running ends by itself (six events, 50 ms apart) and is never counted as cut.
    await waitFor(
      () => {
        const { requests, closedByPeer } = h.fake.stats;
        if (closedByPeer !== requests) throw new Error(`${requests} reached the upstream, ${closedByPeer} cut`);
        return true;
      },
      { what: "every upstream request aborted" },
    );
  });

  it("answers 504 upstream timeout when the upstream stays silent past the idle timeout", async () => {
    h.fake.set({ hang: true });
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: auth,
      body: chat({ stream: false }),
    });
    expect(res.status).to.equal(504);
    expect(((await res.json()) as { error: { message: string } }).error.message).to.equal("upstream timeout");
    // terse's own answer to a forwarded request carries what every proxied answer does.
    expect(res.headers.get("server-timing")).to.match(/^auth;dur=/);
    expect(res.headers.get("x-ratelimit-limit")).to.match(/^\d+$/);
  });

  for (const [provider, path, body] of [
    ["openai", "/v1/chat/completions", { model: "gpt-4o-mini", messages: [] }],
    ["anthropic", "/v1/messages", { model: "claude-test", max_tokens: 5, messages: [] }],
    ["gemini", "/v1/generateContent", { model: "gemini-2.5-flash", contents: [] }],
  ] as const) {
    it(`passes a ${provider} upstream error through with its status, the provider key redacted`, async () => {
      h.fake.set({ status: 401 });
      const res = await fetch(`${h.url}${path}`, { method: "POST", headers: auth, body: JSON.stringify(body) });
      expect(res.status).to.equal(401);
      const text = await res.text();
      expect(text).to.include("[REDACTED]");
      expect(text).not.to.include(PROVIDER_KEY);
      expect(text).not.to.include(PROVIDER_KEY.slice(-4));
    });
  }

  // A stream whose text all arrived but whose final count did not (the upstream reset, or
  // the caller hung up just before the end) is metered by what was relayed, as estimated:
  // Anthropic's message_start says output_tokens 1, and Gemini's chunks count so far.
  const WORDS = Array.from({ length: 300 }, (_, i) => `word${i} `).join("");
  for (const [provider, path, body, textEvents, lastRelayed] of [
    // message_start, content_block_start, a delta per word, content_block_stop; then message_delta.
    [
      "anthropic",
      "/v1/messages",
      { model: "claude-test", max_tokens: 1000, messages: [], stream: true },
      303,
      "word299",
    ],
    // A chunk per word, the last one (its word, finishReason and the total) cut.
    ["gemini", "/v1/generateContent", { model: "gemini-2.5-flash", contents: [], stream: true }, 299, "word298"],
  ] as const) {
    it(`meters a ${provider} stream cut before its final count by the text relayed, as estimated, not as the first count`, async () => {
      h.fake.set({ text: WORDS, usage: { input: 11, output: 400 } });
      const send = async (fault?: string) => {
        const res = await fetch(`${h.url}${path}`, {
          method: "POST",
          headers: { ...auth, ...(fault ? { "x-fake-fault": fault } : {}) },
          body: JSON.stringify(body),
        });
        // Read as it comes: a stream cut short rejects at the end, after what was relayed.
        let text = "";
        const reader = (res.body as ReadableStream<Uint8Array>).getReader();
        const decoder = new TextDecoder();
        for (;;) {
          const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
          if (next.done) break;
          text += decoder.decode(next.value, { stream: true });
        }
        const id = res.headers.get("x-terse-request-id");
        return { text, event: await waitFor(async () => (await h.events()).find((e) => e.event_id === id)) };
      };
      const whole = await send();
      expect(whole.event).to.include({ input_tokens: 11, output_tokens: 400, estimated: false });
      const cut = await send(`reset-after:${textEvents}`);
      expect(cut.text, "the words before the cut were relayed").to.include(lastRelayed);
      expect(cut.event).to.include({ input_tokens: 11, estimated: true });
      // The tokenizer's count of 300 words, about what the whole answer was billed.
      expect(cut.event?.output_tokens).to.be.within(200, 1_200);
    });
  }

  it("never logs the service key, the provider key or the Gemini upstream URL", async () => {
    await fetch(`${h.url}/v1/generateContent`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ model: "gemini-2.5-flash", contents: [] }),
    });
    const logs = logLines.join("\n");
    expect(logs).to.include("proxied");
    expect(logs).not.to.include(PROVIDER_KEY);
    expect(logs).not.to.include(auth.authorization?.slice(7));
    expect(logs).not.to.include("key=");
  });

  it("closes the stream cleanly for a caller using raw HTTP/1.1 with keep-alive", async () => {
    const body = chat({ stream: false });
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${h.url}/v1/chat/completions`,
        { method: "POST", headers: { ...auth, "content-length": Buffer.byteLength(body) } },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
    expect(status).to.equal(200);
  });
});

// Its own harness: harnesses share the area's Redis db, so they must not overlap.
describe("data plane: a dead upstream", () => {
  it("answers 502 upstream unavailable quickly when nothing listens upstream", async () => {
    const dead = await startHarness({ OPENAI_BASE_URL: "http://127.0.0.1:1" });
    try {
      const key = await dead.addKey();
      const auth = { "x-provider-key": PROVIDER_KEY, "content-type": "application/json" };
      const started = Date.now();
      const res = await fetch(`${dead.url}/v1/chat/completions`, {
        method: "POST",
        headers: { ...auth, authorization: `Bearer ${key.rawKey}` },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [] }),
      });
      expect(res.status).to.equal(502);
      expect(((await res.json()) as { error: { message: string } }).error.message).to.equal("upstream unavailable");
      // On the refusal, not after a connect timeout or a retry.
      expect(Date.now() - started).to.be.lessThan(dead.config.UPSTREAM_CONNECT_TIMEOUT_MS);
    } finally {
      await dead.close();
    }
  });
});
