import { createServer, request, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { expect } from "chai";
import { type Harness, PROVIDER_KEY, sdkClients, startHarness } from "./harness.ts";

// An upstream that streams a few events and then drops its TCP connection: every event
// it sent must reach the caller before the caller's stream ends (cut short). One event
// used to be held back and lost, whichever way the caller read the stream.

const EVENTS = 3;

/** The data line of event i. */
function dataLine(i: number): string {
  const data = {
    id: "chatcmpl-drop",
    object: "chat.completion.chunk",
    created: 1,
    model: "gpt-4o-mini",
    choices: [
      { index: 0, delta: i === 0 ? { role: "assistant", content: "e0 " } : { content: `e${i} ` }, finish_reason: null },
    ],
  };
  return `data: ${JSON.stringify(data)}`;
}

/**
 * How an upstream frames its events: each followed by its blank line, or (as some
 * servers write) the blank line sent first with the next event, so the last event before
 * a drop never gets one.
 */
type Framing = "blank line after" | "blank line before the next";

function frame(i: number, framing: Framing): string {
  if (framing === "blank line after") return `${dataLine(i)}\n\n`;
  return `${i === 0 ? "" : "\n"}${dataLine(i)}\n`;
}

/**
 * Sends EVENTS events `gapMs` apart and destroys the socket as soon as the last one is
 * written (the event and the drop reach the proxy together): no last chunk, no [DONE].
 */
async function startDroppingUpstream(gapMs: number): Promise<{ url: string; server: Server; framing: Framing }> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      let i = 0;
      const next = () => {
        const last = ++i === EVENTS;
        // The last event is on the wire (its write callback) before the socket goes.
        res.write(frame(i - 1, upstream.framing), () => {
          if (last) res.socket?.destroy();
        });
        if (!last) setTimeout(next, gapMs);
      };
      next();
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  const upstream = { url: "", server, framing: "blank line after" as Framing };
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return upstream;
}

describe("data plane: an upstream that drops the connection mid-stream", () => {
  let h: Harness;
  let upstream: { url: string; server: Server; framing: Framing };
  let rawKey: string;

  before(async () => {
    upstream = await startDroppingUpstream(50);
    h = await startHarness({ OPENAI_BASE_URL: upstream.url });
    rawKey = (await h.addKey()).rawKey;
  });
  after(async () => {
    await h.close();
    upstream.server.closeAllConnections();
    await new Promise((r) => upstream.server.close(r));
  });

  for (const [includeUsage, framing] of [
    [false, "blank line after"],
    [true, "blank line after"],
    [false, "blank line before the next"],
    [true, "blank line before the next"],
  ] as const) {
    it(`relays every event sent before the drop, raw HTTP (include_usage ${includeUsage}, ${framing})`, async () => {
      upstream.framing = framing;
      const body = JSON.stringify({
        model: "gpt-4o-mini",
        stream: true,
        messages: [{ role: "user", content: "hi" }],
        ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
      });
      const seen = await new Promise<{ body: string; complete: boolean }>((resolve, reject) => {
        const req = request(
          `${h.url}/v1/chat/completions`,
          {
            method: "POST",
            headers: {
              authorization: `Bearer ${rawKey}`,
              "x-provider-key": PROVIDER_KEY,
              "content-type": "application/json",
            },
          },
          (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (c: string) => {
              text += c;
            });
            res.on("close", () => resolve({ body: text, complete: res.complete }));
          },
        );
        req.on("error", reject);
        req.end(body);
      });
      const lines = seen.body.split("\n").filter((l) => l.startsWith("data: "));
      expect(lines).to.deep.equal(Array.from({ length: EVENTS }, (_, i) => dataLine(i)));
      expect(seen.complete).to.equal(false);
    });
  }

  it("relays every event sent before the drop to the official SDK, then fails its stream", async () => {
    upstream.framing = "blank line after";
    const client = sdkClients(h.url, rawKey).openai();
    const stream = await client.chat.completions.create({
      model: "gpt-4o-mini",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    const texts: string[] = [];
    let failed: unknown;
    try {
      for await (const c of stream) texts.push(c.choices[0]?.delta?.content ?? "");
    } catch (err) {
      failed = err;
    }
    expect(texts).to.deep.equal(["e0 ", "e1 ", "e2 "]);
    expect(failed).to.be.instanceOf(Error);
  });
});
