import { request } from "node:http";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { CACHE_GENERATION_KEY, KEY_LAST_USED_KEY } from "@terse/keys";
import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import { type Harness, PROVIDER_KEY, startHarness } from "./harness.ts";

// Spec section 7's proxy table and DESIGN.md section 4's order of checks, plus bad
// input: each a clear answer in the one envelope, and none reaches the upstream.

describe("data plane: checks before the upstream", () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  async function call(
    headers: Record<string, string>,
    body: unknown = { model: "gpt-4o-mini", messages: [] },
    path = "/v1/chat/completions",
  ) {
    const res = await fetch(`${h.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    const json = (await res.json()) as { error: { message: string; type: string; code: string } };
    return { res, status: res.status, error: json.error };
  }

  async function expectRefused(
    p: Promise<{ status: number; error: { message: string }; res: Response }>,
    status: number,
    message: string,
  ) {
    const { status: got, error, res } = await p;
    expect(got).to.equal(status);
    expect(error.message).to.equal(message);
    expect(res.headers.get("x-request-id")).to.match(/^req_/);
    expect(res.headers.get("request-id")).to.equal(res.headers.get("x-request-id"));
    expect(h.fake.received).to.have.length(0);
    return res;
  }

  it("401 Missing API key without Authorization: Bearer (none, another scheme, a bare Bearer), on every endpoint", async () => {
    const paths = ["/v1/chat/completions", "/v1/messages", "/v1/generateContent", "/v1beta/models/m:generateContent"];
    for (const path of paths) {
      for (const authorization of [undefined, "Basic dXNlcjpwYXNz", "Token abc", "Bearer", "Bearer   ", ""]) {
        const headers: Record<string, string> = { "x-provider-key": PROVIDER_KEY };
        if (authorization !== undefined) headers.authorization = authorization;
        await expectRefused(call(headers, { model: "m", messages: [] }, path), 401, "Missing API key");
      }
    }
  });

  it("401 Invalid API key for a wrong format, a bad checksum, an unknown key and a revoked key", async () => {
    const { rawKey } = await h.addKey();
    await expectRefused(
      call({ authorization: "Bearer sk-not-ours", "x-provider-key": PROVIDER_KEY }),
      401,
      "Invalid API key",
    );
    await expectRefused(
      call({ authorization: "bearer sk-not-ours", "x-provider-key": PROVIDER_KEY }),
      401,
      "Invalid API key",
    );
    await expectRefused(
      call({ authorization: `Bearer ${rawKey} extra`, "x-provider-key": PROVIDER_KEY }),
      401,
      "Invalid API key",
    );
    const typo = `${rawKey.slice(0, 20)}${rawKey[20] === "a" ? "b" : "a"}${rawKey.slice(21)}`;
    await expectRefused(
      call({ authorization: `Bearer ${typo}`, "x-provider-key": PROVIDER_KEY }),
      401,
      "Invalid API key",
    );
    const unknown = (await h.addKey()).rawKey;
    await h.revoke(unknown);
    await expectRefused(
      call({ authorization: `Bearer ${unknown}`, "x-provider-key": PROVIDER_KEY }),
      401,
      "Invalid API key",
    );
  });

  it("400 Missing X-Provider-Key header once authenticated, and it does not count against the rpm", async () => {
    const { rawKey } = await h.addKey({ rate_limit_rpm: 1 });
    await expectRefused(call({ authorization: `Bearer ${rawKey}` }), 400, "Missing X-Provider-Key header");
    const ok = await call({ authorization: `Bearer ${rawKey}`, "x-provider-key": PROVIDER_KEY });
    expect(ok.status).to.equal(200);
  });

  it("429 rate limit exceeded past rate_limit_rpm, with Retry-After and X-RateLimit-*", async () => {
    const { rawKey } = await h.addKey({ rate_limit_rpm: 3 });
    const auth = { authorization: `Bearer ${rawKey}`, "x-provider-key": PROVIDER_KEY };
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call(auth);
      expect(r.status).to.equal(200);
      remaining.push(r.res.headers.get("x-ratelimit-remaining") ?? "");
    }
    expect(remaining).to.deep.equal(["2", "1", "0"]);
    h.fake.reset();
    const res = await expectRefused(call(auth), 429, "rate limit exceeded");
    expect(res.headers.get("x-ratelimit-limit")).to.equal("3");
    expect(res.headers.get("x-ratelimit-remaining")).to.equal("0");
    const retry = Number(res.headers.get("retry-after"));
    expect(retry).to.be.within(1, 60);
    expect(res.headers.get("x-ratelimit-reset")).to.equal(String(retry));
  });

  it("429 token quota exceeded for an account over its monthly limit, with Retry-After to the next month", async () => {
    const { rawKey, record } = await h.addKey();
    await h.markOverQuota(record.account_id);
    const auth = { authorization: `Bearer ${rawKey}`, "x-provider-key": PROVIDER_KEY };
    const { waitFor } = await import("@terse/testkit");
    await waitFor(async () => (await call(auth)).status === 429, { what: "quota flag to reach the proxy" });
    h.fake.reset();
    const res = await expectRefused(call(auth), 429, "token quota exceeded");
    expect(Number(res.headers.get("retry-after"))).to.be.greaterThan(0);
  });

  it("503 auth cache unavailable when the cache generation stamp is gone, never 401", async () => {
    const unknown = (await h.addKey()).rawKey;
    await h.revoke(unknown);
    await h.redis.del(CACHE_GENERATION_KEY);
    try {
      await expectRefused(
        call({ authorization: `Bearer ${unknown}`, "x-provider-key": PROVIDER_KEY }),
        503,
        "auth cache unavailable",
      );
    } finally {
      await h.redis.set(CACHE_GENERATION_KEY, "1");
    }
  });

  describe("bad input (authenticated)", () => {
    let auth: Record<string, string>;
    before(async () => {
      auth = { authorization: `Bearer ${(await h.addKey()).rawKey}`, "x-provider-key": PROVIDER_KEY };
    });

    it("400 for malformed JSON and for a body that is not an object", async () => {
      await expectRefused(call(auth, "{not json"), 400, "Request body is not valid JSON");
      await expectRefused(call(auth, "[1,2]"), 400, "Request body must be a JSON object");
    });

    it("400 naming model when it is missing, on every endpoint", async () => {
      for (const path of ["/v1/chat/completions", "/v1/messages", "/v1/generateContent"]) {
        const r = await call(auth, { messages: [] }, path);
        expect(r.status, path).to.equal(400);
        expect((r.error as { param?: string }).param).to.equal("model");
      }
      expect(h.fake.received).to.have.length(0);
    });

    it("400 for a model name that could not be stored with its usage (control, invisible characters), nothing metered", async () => {
      const bad = ["gpt\u0000x", "gpt\nx", "gpt-4o\u200B", "\u202Egpt", "a\ud800"];
      for (const model of bad) {
        for (const path of ["/v1/chat/completions", "/v1/messages", "/v1/generateContent"]) {
          const r = await call(auth, { model, messages: [] }, path);
          expect(r.status, `${path} ${JSON.stringify(model)}`).to.equal(400);
          expect((r.error as { param?: string }).param).to.equal("model");
        }
      }
      // Gemini's native path carries the model in the URL.
      for (const segment of ["x%00y", "x%0Ay", "x%E2%80%8By"]) {
        const r = await call(auth, { contents: [] }, `/v1beta/models/${segment}:generateContent`);
        expect(r.status, segment).to.equal(400);
        expect(r.error.message).to.match(/^model must not contain/);
      }
      const long = await call(auth, { model: "m".repeat(257), messages: [] });
      expect(long.error.message).to.equal("model must be at most 256 characters");
      expect(h.fake.received).to.have.length(0);
      const metered = (await h.events()).map((e) => e.model);
      const refused = [...bad, "x\u0000y", "x\ny", "x\u200By", "m".repeat(257)];
      expect(metered.filter((m) => refused.includes(m))).to.deep.equal([]);
    });

    it("400 for two X-Provider-Key headers: which one counts would be a guess", async () => {
      const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(`${h.url}/v1/chat/completions`, {
          method: "POST",
          // Headers as a list, so the name can repeat (Node then adds no Host of its own).
          headers: [
            ["host", new URL(h.url).host],
            ["authorization", auth.authorization as string],
            ["x-provider-key", "sk-first"],
            ["X-Provider-Key", "sk-second"],
            ["content-type", "application/json"],
          ].flat(),
        });
        req.on("response", (r) => {
          let body = "";
          r.on("data", (c) => {
            body += c;
          });
          r.on("end", () => resolve({ status: r.statusCode ?? 0, body }));
        });
        req.on("error", reject);
        req.end(JSON.stringify({ model: "m", messages: [] }));
      });
      expect(res.status, res.body).to.equal(400);
      expect(JSON.parse(res.body).error.message).to.equal("X-Provider-Key must be sent once");
      expect(res.body).not.to.include("sk-first");
      expect(h.fake.received).to.have.length(0);
    });

    it("decodes a body the client compressed and forwards it plain, with no Content-Encoding", async () => {
      const json = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
      for (const [coding, encode] of Object.entries({ gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync })) {
        h.fake.reset();
        const res = await fetch(`${h.url}/v1/chat/completions`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json", "content-encoding": coding },
          body: encode(json),
        });
        expect(res.status, coding).to.equal(200);
        const got = h.fake.received[0];
        expect(got?.headers, coding).not.to.have.property("content-encoding");
        expect((got?.body as { messages: unknown[] } | undefined)?.messages).to.deep.include({
          role: "user",
          content: "hi",
        });
      }
    });

    it("400 for a plain body that claims an encoding, 415 for an unknown one, 413 for a bomb; nothing forwarded", async () => {
      const plain = JSON.stringify({ model: "m", messages: [] });
      const send = (coding: string, body: Buffer | string) =>
        fetch(`${h.url}/v1/chat/completions`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json", "content-encoding": coding },
          body,
        });
      for (const coding of ["gzip", "deflate", "br"]) {
        const res = await send(coding, plain);
        expect(res.status, coding).to.equal(400);
        expect(((await res.json()) as { error: { message: string } }).error.message).to.equal(
          `Request body is not valid ${coding} data`,
        );
      }
      const unknown = await send("compress", plain);
      expect(unknown.status).to.equal(415);
      expect(((await unknown.json()) as { error: { message: string } }).error.message).to.equal(
        "Unsupported content encoding",
      );
      // 33 MB of spaces inside a JSON string: some 32 kilobytes on the wire.
      const bomb = gzipSync(`{"model":"m","messages":[],"x":"${" ".repeat(33 * 1024 * 1024)}"}`);
      expect(bomb.length).to.be.lessThan(128 * 1024);
      expect((await send("gzip", bomb)).status).to.equal(413);
      expect(h.fake.received).to.have.length(0);
    });

    const sendAs = (type: string) =>
      fetch(`${h.url}/v1/chat/completions`, {
        method: "POST",
        headers: { ...auth, "content-type": type },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [] }),
      });
    const refused = ["text/plain", "application/json-seq", "application/jsonx", "application/json; charset=utf-16"];
    for (const type of refused) {
      it(`415 for the content type ${type}, nothing forwarded`, async () => {
        expect((await sendAs(type)).status).to.equal(415);
        expect(h.fake.received).to.have.length(0);
      });
    }
    const taken = [
      "application/json",
      "Application/JSON",
      "application/json; charset=UTF-8",
      'application/json;charset="utf-8"',
    ];
    for (const type of taken) {
      it(`takes the content type ${type}`, async () => {
        expect((await sendAs(type)).status).to.equal(200);
      });
    }

    it("forwards the caller's query parameters but `key`, a credential's place, to any provider", async () => {
      for (const [path, init] of [
        ["/v1/models?key=svc_live_notforupstream&after=m1", { headers: auth }],
        [
          "/v1/chat/completions?Key=sk-notforupstream&api-version=1",
          {
            method: "POST",
            headers: { ...auth, "content-type": "application/json" },
            body: JSON.stringify({ model: "gpt-4o-mini", messages: [] }),
          },
        ],
      ] as const) {
        h.fake.reset();
        const res = await fetch(`${h.url}${path}`, init);
        expect(res.status, path).to.equal(200);
        const sent = h.fake.received[0]?.url ?? "";
        expect(sent).not.to.match(/key=/i);
        expect(sent).to.match(/\?(after=m1|api-version=1)$/);
      }
    });

    it("forwards a 12 MB body (a PDF sent as base64, under Anthropic's 32 MB cap)", async () => {
      const pdf = Buffer.alloc(9 * 1024 * 1024, 1).toString("base64");
      const res = await fetch(`${h.url}/v1/messages`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({
          model: "claude-sonnet-4-5",
          max_tokens: 100,
          messages: [
            {
              role: "user",
              content: [
                { type: "document", source: { type: "base64", media_type: "application/pdf", data: pdf } },
                { type: "text", text: "Summarise it." },
              ],
            },
          ],
        }),
      });
      expect(res.status).to.equal(200);
      expect(JSON.stringify(h.fake.received[0]?.body)).to.include(pdf);
    });

    it("413 for a body over 32 MiB", async () => {
      const big = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(32 * 1024 * 1024) }] });
      const res = await fetch(`${h.url}/v1/chat/completions`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: big,
      });
      expect(res.status).to.equal(413);
      expect(((await res.json()) as { error: { message: string } }).error.message).to.equal("Request body too large");
      expect(h.fake.received).to.have.length(0);
    });

    it("405 for GET on a proxy route, saying what it allows, and 404 for an unknown path", async () => {
      const wrong = await fetch(`${h.url}/v1/chat/completions`, { headers: auth });
      expect(wrong.status).to.equal(405);
      expect(wrong.headers.get("allow")).to.equal("POST");
      expect((await fetch(`${h.url}/v1beta/models`, { method: "POST", headers: auth })).headers.get("allow")).to.equal(
        "GET",
      );
      expect((await fetch(`${h.url}/v1/nope`, { method: "POST", headers: auth })).status).to.equal(404);
    });
  });

  it("forwards a body sent with Expect: 100-continue (curl does it past 1 KB) with our credentials handling", async () => {
    const { rawKey } = await h.addKey();
    const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "x".repeat(2_000) }] });
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${h.url}/v1/chat/completions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${rawKey}`,
          "x-provider-key": PROVIDER_KEY,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          expect: "100-continue",
        },
      });
      req.on("continue", () => req.end(body));
      req.on("response", (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
    });
    expect(status).to.equal(200);
    const got = h.fake.received[0];
    expect(got?.headers.authorization).to.equal(`Bearer ${PROVIDER_KEY}`);
    expect(got?.headers).not.to.have.property("x-provider-key");
    expect(got?.headers).not.to.have.property("expect");
  });

  it("notes every key that passed authentication for its last_used_at, metered or not, and no other", async () => {
    const listed = await h.addKey();
    const noProviderKey = await h.addKey();
    const revoked = await h.addKey();
    await h.revoke(revoked.rawKey);
    const before = Date.now();
    const models = await fetch(`${h.url}/v1/models`, {
      headers: { authorization: `Bearer ${listed.rawKey}`, "x-provider-key": PROVIDER_KEY },
    });
    expect(models.status).to.equal(200);
    const refused = await fetch(`${h.url}/v1/models`, { headers: { authorization: `Bearer ${noProviderKey.rawKey}` } });
    expect(refused.status).to.equal(400);
    const gone = await fetch(`${h.url}/v1/models`, {
      headers: { authorization: `Bearer ${revoked.rawKey}`, "x-provider-key": PROVIDER_KEY },
    });
    expect(gone.status).to.equal(401);
    const notes = await waitFor(async () => {
      const all = await h.redis.hgetall(KEY_LAST_USED_KEY);
      return all[listed.record.key_id] && all[noProviderKey.record.key_id] ? all : undefined;
    });
    for (const key of [listed, noProviderKey]) {
      expect(Number(notes[key.record.key_id])).to.be.within(before, Date.now());
    }
    expect(notes).not.to.have.property(revoked.record.key_id);
  });
});
