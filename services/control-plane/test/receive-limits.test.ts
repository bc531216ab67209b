import { assertRequestTimeout, slowClient, truncatedRequest } from "@terse/testkit";
import { type Harness, startHarness } from "./harness.ts";

// HTTP_HEADERS_TIMEOUT_MS and HTTP_REQUEST_TIMEOUT_MS, set small, on raw connections: a
// request that never finishes arriving gets 408 in the envelope and its connection
// closes at the configured limit (Node's defaults would hold it 60 to 300 s).

const HEADERS_MS = 300;
const REQUEST_MS = 800;

describe("control plane: how long a request may take to arrive", function () {
  this.timeout(30_000);
  let h: Harness;

  before(async () => {
    h = await startHarness("limits", {
      env: { HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS), HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS) },
    });
  });
  after(() => h.stop());

  it("answers a slowloris header sender 408 at the header limit and closes its connection", async () => {
    const head = "POST /v1/auth/login HTTP/1.1\r\nHost: terse\r\n";
    const slow = await slowClient(h.url, head, { trickle: "X-Slow: 1\r\n", everyMs: 50 });
    assertRequestTimeout(slow, HEADERS_MS);
  });

  it("answers a login body shorter than its Content-Length 408 at the request limit", async () => {
    const body = '{"email":"someone@example.com",';
    const slow = await slowClient(
      h.url,
      truncatedRequest("/v1/auth/login", { "Content-Type": "application/json" }, body),
    );
    assertRequestTimeout(slow, REQUEST_MS);
  });
});
