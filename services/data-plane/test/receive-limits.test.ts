import { assertRequestTimeout, slowClient, truncatedRequest } from "@terse/testkit";
import { expect } from "chai";
import { PROVIDER_KEY, startHarness, type Harness } from "./harness.ts";

// HTTP_HEADERS_TIMEOUT_MS and HTTP_REQUEST_TIMEOUT_MS, set small, on raw connections: a
// request that never finishes arriving gets 408 and its connection closes at the
// configured limit (Node's defaults would hold it 60 to 300 s), while a response, however
// long it streams, is never cut.

const HEADERS_MS = 300;
const REQUEST_MS = 800;

describe("data plane: how long a request may take to arrive", function () {
  this.timeout(30_000);
  let h: Harness;
  let rawKey: string;

  before(async () => {
    h = await startHarness({
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
    });
    rawKey = (await h.addKey({ rate_limit_rpm: 100_000 })).rawKey;
  });
  after(() => h.close());

  it("answers a slowloris header sender 408 at the header limit and closes its connection", async () => {
    const head = "POST /v1/chat/completions HTTP/1.1\r\nHost: terse\r\n";
    const slow = await slowClient(h.url, head, { trickle: "X-Slow: 1\r\n", everyMs: 50 });
    assertRequestTimeout(slow, HEADERS_MS);
    expect(h.fake.received).to.have.length(0);
  });

  it("answers a body shorter than its Content-Length 408 at the request limit, forwarding nothing", async () => {
    const headers = {
      Authorization: `Bearer ${rawKey}`,
      "X-Provider-Key": PROVIDER_KEY,
      "Content-Type": "application/json",
    };
    const slow = await slowClient(h.url, truncatedRequest("/v1/chat/completions", headers, '{"model":"gpt-4o-mini",'));
    assertRequestTimeout(slow, REQUEST_MS);
    expect(h.fake.received).to.have.length(0);
  });

  it("never cuts a response: a stream that outlasts the request limit arrives whole", async () => {
    h.fake.set({ chunkDelayMs: 150, text: "one two three four five six seven eight" });
    const started = performance.now();
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${rawKey}`,
        "x-provider-key": PROVIDER_KEY,
        "content-type": "application/json",
      },
      body: JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "count" }] }),
    });
    const text = await res.text();
    expect(res.status).to.equal(200);
    expect(performance.now() - started).to.be.above(REQUEST_MS + HEADERS_MS);
    expect(text.trimEnd().endsWith("data: [DONE]")).to.equal(true);
    h.fake.reset();
  });
});
