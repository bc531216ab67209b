import { slowClient } from "@terse/testkit";
import { expect } from "chai";
import { type Harness, startHarness } from "./harness.ts";

// HTTP_HEADERS_TIMEOUT_MS and HTTP_REQUEST_TIMEOUT_MS, set small, on raw connections: a
// request that never finishes arriving gets 408 in the envelope and its connection
// closes at the configured limit (Node's defaults would hold it 60 to 300 s).

const HEADERS_MS = 300;
const REQUEST_MS = 800;
/** Far below Node's default limits and their 30 s check, far above these on a busy machine. */
const WELL_WITHIN_MS = 10_000;

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
    expect(slow.status, slow.response).to.equal(408);
    expect(JSON.parse(slow.body).error.code).to.equal("request_timeout");
    expect(slow.closedAfterMs)
      .to.be.at.least(HEADERS_MS - 10)
      .and.below(WELL_WITHIN_MS);
  });

  it("answers a login body shorter than its Content-Length 408 at the request limit", async () => {
    const body = '{"email":"someone@example.com",';
    const head = [
      "POST /v1/auth/login HTTP/1.1",
      "Host: terse",
      "Content-Type: application/json",
      `Content-Length: ${body.length + 100}`,
      "",
      body,
    ].join("\r\n");
    const slow = await slowClient(h.url, head);
    expect(slow.status, slow.response).to.equal(408);
    expect(JSON.parse(slow.body).error.code).to.equal("request_timeout");
    expect(slow.closedAfterMs)
      .to.be.at.least(REQUEST_MS - 10)
      .and.below(WELL_WITHIN_MS);
  });
});
