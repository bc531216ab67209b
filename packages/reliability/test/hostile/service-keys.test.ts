import { Agent, request } from "node:http";
import { generateRawKey } from "@terse/keys";
import { expect } from "chai";
import { type Harness, PROVIDER_KEY, startHarness } from "../../../../services/data-plane/test/harness.ts";
import { expectRefusal, rawRequest } from "./helpers.ts";

// Service keys on the proxy that services/data-plane/test/checks.test.ts does not try
// (it has: no Authorization, "sk-not-ours", Basic, a one-character typo that breaks
// the checksum, a revoked key). Each must get the spec's 401 in the envelope, and
// nothing may reach the upstream.

const BODY = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });

describe("hostile: service keys on the proxy", () => {
  let h: Harness;
  let valid: string;
  before(async () => {
    h = await startHarness({}, "hostile");
    valid = (await h.addKey()).rawKey;
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  async function call(headers: Record<string, string>, path = "/v1/chat/completions") {
    const res = await fetch(`${h.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: BODY,
    });
    return { status: res.status, text: await res.text() };
  }

  function expectSpec401(res: { status: number; text: string }, message: "Missing API key" | "Invalid API key") {
    const body = expectRefusal(res.status, res.text, 401);
    expect(body.error).to.deep.equal({
      message,
      type: "authentication_error",
      code: message === "Missing API key" ? "missing_api_key" : "invalid_api_key",
    });
    expect(res.text).not.to.include(PROVIDER_KEY);
    expect(h.fake.received, "a request reached the upstream").to.have.length(0);
  }

  it("lets the valid key through (the control for every case below)", async () => {
    expect((await call({ authorization: `Bearer ${valid}`, "x-provider-key": PROVIDER_KEY })).status).to.equal(200);
  });

  const invalid: [string, () => string][] = [
    ["a key with another prefix and a valid checksum", () => `svc_test_${valid.slice(9)}`],
    ["the prefix in capitals", () => `SVC_LIVE_${valid.slice(9)}`],
    ["a valid key with a character more", () => `${valid}0`],
    ["a valid key less its last character", () => valid.slice(0, -1)],
    [
      "a valid key with its checksum swapped for another key's",
      () => `${valid.slice(0, -6)}${generateRawKey().slice(-6)}`,
    ],
    ["the bare prefix", () => "svc_live_"],
    ["a key of the right shape that was never issued", () => generateRawKey()],
    ["two keys, space-separated", () => `${valid} ${valid}`],
    ["the key between quotes", () => `"${valid}"`],
    ["the key with a Cyrillic look-alike in its prefix", () => valid.replace("c", "\u0441")],
  ];
  for (const [name, key] of invalid) {
    it(`401 Invalid API key for ${name}`, async () => {
      const value = `Bearer ${key()}`;
      // fetch sends header values as bytes of a ByteString; non-Latin-1 ones go raw.
      if (/[^\x20-\x7e]/.test(value)) {
        const res = await rawRequest(
          h.url,
          Buffer.from(
            `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n` +
              `Authorization: ${value}\r\nX-Provider-Key: ${PROVIDER_KEY}\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`,
            "utf8",
          ),
        );
        return expectSpec401({ status: res.status, text: res.body }, "Invalid API key");
      }
      expectSpec401(await call({ authorization: value, "x-provider-key": PROVIDER_KEY }), "Invalid API key");
    });
  }

  const misplaced: [string, (key: string) => { headers?: Record<string, string>; query?: string }][] = [
    ["in X-Provider-Key, as the only key", (key) => ({ headers: { "x-provider-key": key } })],
    ["in x-api-key (Anthropic's header)", (key) => ({ headers: { "x-api-key": key } })],
    ["in x-goog-api-key (Gemini's header)", (key) => ({ headers: { "x-goog-api-key": key } })],
    ["in Proxy-Authorization", (key) => ({ headers: { "proxy-authorization": `Bearer ${key}` } })],
    ["in the query string", (key) => ({ query: `?key=${key}&api_key=${key}` })],
  ];
  for (const [where, place] of misplaced) {
    it(`401 Missing API key for a valid key ${where}, on all three endpoints`, async () => {
      const { headers = {}, query = "" } = place(valid);
      for (const path of ["/v1/chat/completions", "/v1/messages", "/v1/generateContent"]) {
        const res = await call({ "x-provider-key": PROVIDER_KEY, ...headers }, `${path}${query}`);
        expectSpec401(res, "Missing API key");
      }
    });
  }

  for (const [order, first, second] of [
    ["valid first", () => valid, () => generateRawKey()],
    ["valid second", () => generateRawKey(), () => valid],
    ["the same valid key twice", () => valid, () => valid],
  ] as const) {
    it(`401 Invalid API key for two Authorization headers (${order}), sent raw`, async () => {
      const res = await rawRequest(
        h.url,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n" +
          `Authorization: Bearer ${first()}\r\nAuthorization: Bearer ${second()}\r\n` +
          `X-Provider-Key: ${PROVIDER_KEY}\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`,
      );
      expectSpec401({ status: res.status, text: res.body }, "Invalid API key");
    });
  }

  it("takes as long to refuse a revoked key as a never-issued one (no oracle for which keys existed)", async function () {
    this.timeout(60_000);
    // Both are a miss in Redis by design (revoke deletes the record). Interleaved on one
    // keep-alive connection, so drift and warm-up hit both alike.
    const revoked = (await h.addKey()).rawKey;
    await h.revoke(revoked);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const timeOne = (key: string) =>
      new Promise<number>((resolve, reject) => {
        const t0 = process.hrtime.bigint();
        const req = request(`${h.url}/v1/chat/completions`, {
          method: "POST",
          agent,
          headers: {
            authorization: `Bearer ${key}`,
            "x-provider-key": PROVIDER_KEY,
            "content-type": "application/json",
            "content-length": BODY.length,
          },
        });
        req.on("response", (res) => {
          res.resume();
          res.on("end", () => {
            if (res.statusCode !== 401) reject(new Error(`expected 401, got ${res.statusCode}`));
            else resolve(Number(process.hrtime.bigint() - t0) / 1e6);
          });
        });
        req.on("error", reject);
        req.end(BODY);
      });
    const times = { revoked: [] as number[], unknown: [] as number[] };
    try {
      for (let i = 0; i < 50; i++) await timeOne(generateRawKey()); // warm-up
      for (let i = 0; i < 400; i++) {
        const pair = i % 2 === 0 ? (["revoked", "unknown"] as const) : (["unknown", "revoked"] as const);
        for (const which of pair) times[which].push(await timeOne(which === "revoked" ? revoked : generateRawKey()));
      }
    } finally {
      agent.destroy();
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const [revokedMs, unknownMs] = [median(times.revoked), median(times.unknown)];
    // Medians of 400 interleaved refusals differ by a few hundredths from noise. A lookup
    // that told them apart (a tombstone, a second query) would add a Redis round trip to
    // one side: a good part of a refusal, which is itself about two round trips. The
    // margin is a share of the refusal measured here, so a loaded machine, which slows
    // both alike, does not fail it.
    const margin = 0.05 + 0.25 * Math.min(revokedMs, unknownMs);
    expect(
      Math.abs(revokedMs - unknownMs),
      `medians ${revokedMs.toFixed(3)} vs ${unknownMs.toFixed(3)} ms (margin ${margin.toFixed(3)})`,
    ).to.be.lessThan(margin);
  });
});
