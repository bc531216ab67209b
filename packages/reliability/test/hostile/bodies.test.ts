import { expect } from "chai";
import {
  type Harness as ControlPlane,
  type CreatedKey,
  createAccount,
  createKey,
  snapshot,
  startHarness as startControlPlane,
  TEST_PASSWORD,
  type TestAccount,
} from "../../../../services/control-plane/test/harness.ts";
import {
  type Harness as DataPlane,
  PROVIDER_KEY,
  startHarness as startDataPlane,
} from "../../../../services/data-plane/test/harness.ts";
import { expectRefusal, heapUsed, MB, prototypeAdditions, refusalState } from "./helpers.ts";

// Hostile bodies at the key endpoints and the proxy, beyond the bad-input matrices of
// services/control-plane/test/bad-input.ts (not JSON, truncated, arrays, wrong types,
// 40 KB) and services/data-plane/test/checks.test.ts (not JSON, not an object, a body past
// 32 MiB with its Content-Length). Each is a 4xx in the envelope that writes nothing,
// pollutes no prototype, and leaves the heap where it was.

const deepArrays = (levels: number) => "[".repeat(levels) + "]".repeat(levels);

/** Bytes that are not UTF-8, inside a JSON string: a stray continuation byte, an overlong '/', a surrogate. */
const INVALID_UTF8 = [Buffer.from([0xff, 0xfe]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80])];
const jsonWithBytes = (field: string, bad: Buffer, rest = "") =>
  Buffer.concat([Buffer.from(`{${rest}"${field}":"ab`), bad, Buffer.from('cd"}')]);

interface HostileBody {
  name: string;
  body: string | Buffer | (() => ReadableStream<Uint8Array>);
  status: number[];
  message?: string;
}

/** Sends `body` as is; a stream goes chunked, with no Content-Length. */
async function send(url: string, method: string, body: HostileBody["body"], headers: Record<string, string>) {
  const stream = typeof body === "function";
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: stream ? body() : body,
    ...(stream ? { duplex: "half" } : {}),
  } as RequestInit);
  return { status: res.status, text: await res.text() };
}

/** `megabytes` MB in 64 KB chunks, made as they are read. */
function chunkedBody(prefix: string, megabytes: number): () => ReadableStream<Uint8Array> {
  return () => {
    let sent = 0;
    const chunk = new Uint8Array(64 * 1024).fill(0x78);
    return new ReadableStream({
      pull(controller) {
        if (sent === 0) controller.enqueue(new TextEncoder().encode(prefix));
        if (sent >= megabytes * MB) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
  };
}

describe("hostile: request bodies", () => {
  describe("at the key endpoints and login", () => {
    let h: ControlPlane;
    let account: TestAccount;
    let key: CreatedKey;
    before(async () => {
      h = await startControlPlane("hostile_bodies", { redisArea: "hostile" });
      account = await createAccount(h, "pro");
      key = await createKey(h, account, { name: "existing" });
    });
    after(() => h.stop());

    /** `rest`: the other fields of a body that would be accepted (login needs a password). */
    const cases = (field: string, rest: string): HostileBody[] => [
      { name: "100,000 levels of [", body: deepArrays(100_000), status: [413] },
      {
        name: `8,000 levels of [ under ${field} (inside the size limit)`,
        body: `{"${field}":${deepArrays(8_000)}}`,
        status: [400],
      },
      { name: "a 20 MB body", body: `{"${field}":"${"x".repeat(20 * MB)}"}`, status: [413] },
      { name: "a 20 MB body, chunked", body: chunkedBody(`{"${field}":"`, 20), status: [413] },
      ...INVALID_UTF8.map((bad) => ({
        name: `the bytes ${bad.toString("hex")} (not UTF-8) in ${field}`,
        body: jsonWithBytes(field, bad, rest),
        status: [400],
        message: "Request body is not valid UTF-8",
      })),
      {
        name: `a NUL character (\\u0000) in ${field}`,
        body: `{${rest}"${field}":"a\\u0000b@example.com"}`,
        status: [400],
        message: `${field} must not contain control characters`,
      },
      {
        name: "a __proto__ key",
        body: `{${rest}"${field}":"ok","__proto__":{"polluted":true,"is_active":false}}`,
        status: [400],
      },
      {
        name: "constructor.prototype",
        body: `{${rest}"${field}":"ok","constructor":{"prototype":{"polluted":true}}}`,
        status: [400],
      },
      { name: `a 1 MB ${field}`, body: JSON.stringify({ [field]: "n".repeat(MB) }), status: [413] },
    ];

    const endpoints = [
      {
        label: "POST /v1/auth/keys",
        method: "POST",
        path: () => "/v1/auth/keys",
        field: "name",
        rest: "",
        authed: true,
      },
      {
        label: "PATCH /v1/auth/keys/{id}",
        method: "PATCH",
        path: () => `/v1/auth/keys/${key.id}`,
        field: "name",
        rest: "",
        authed: true,
      },
      {
        label: "POST /v1/auth/login",
        method: "POST",
        path: () => "/v1/auth/login",
        field: "email",
        rest: `"password":"${TEST_PASSWORD}",`,
        authed: false,
      },
    ];
    const headersFor = (e: { authed: boolean }): Record<string, string> =>
      e.authed ? { authorization: `Bearer ${account.token}` } : {};

    /** Postgres rows, the key cache, and every Redis key (login counters included). */
    const state = async () => `${await snapshot(h)}${JSON.stringify((await h.redis.keys("*")).sort())}`;

    for (const e of endpoints) {
      for (const c of cases(e.field, e.rest)) {
        it(`${e.label}: ${c.status.join("/")} for ${c.name}, writing nothing`, async function () {
          this.timeout(20_000);
          const before = await state();
          const res = await send(`${h.url}${e.path()}`, e.method, c.body, headersFor(e));
          const refusal = expectRefusal(res.status, res.text, c.status);
          if (c.message) expect(refusal.error.message).to.equal(c.message);
          expect(await state()).to.equal(before);
          expect(prototypeAdditions()).to.deep.equal([]);
        });
      }
    }

    it("keeps its heap bounded through a burst of all of the above", async function () {
      this.timeout(60_000);
      const start = heapUsed();
      for (let round = 0; round < 3; round++) {
        for (const e of endpoints) {
          await Promise.all(
            cases(e.field, e.rest).map((c) => send(`${h.url}${e.path()}`, e.method, c.body, headersFor(e))),
          );
        }
      }
      const grown = (heapUsed() - start) / MB;
      expect(grown, `heap grew ${grown.toFixed(1)} MB`).to.be.lessThan(30);
      // Still answering, and the right way.
      const login = await send(
        `${h.url}/v1/auth/login`,
        "POST",
        JSON.stringify({ email: account.email, password: TEST_PASSWORD }),
        {},
      );
      expect(login.status).to.equal(200);
    });
  });

  describe("at the proxy", () => {
    let h: DataPlane;
    let auth: Record<string, string>;
    before(async () => {
      h = await startDataPlane({}, "hostile");
      auth = { authorization: `Bearer ${(await h.addKey()).rawKey}`, "x-provider-key": PROVIDER_KEY };
    });
    after(() => h.close());
    beforeEach(() => h.fake.reset());

    const endpoints = ["/v1/chat/completions", "/v1/messages", "/v1/generateContent"];
    const cases: HostileBody[] = [
      { name: "100,000 levels of [", body: deepArrays(100_000), status: [400] },
      {
        name: "100,000 levels of [ inside messages",
        body: `{"model":"m","messages":${deepArrays(100_000)}}`,
        status: [400],
        message: "Request body is nested more than 128 levels deep",
      },
      {
        name: "100,000 levels of { inside a message",
        body: `{"model":"m","messages":[${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}]}`,
        status: [400],
        message: "Request body is nested more than 128 levels deep",
      },
      // Past the proxy's 32 MiB (MAX_BODY_BYTES, Anthropic's own cap).
      { name: "a 40 MB body, chunked", body: chunkedBody('{"model":"m","messages":"', 40), status: [413] },
      ...INVALID_UTF8.map((bad) => ({
        name: `the bytes ${bad.toString("hex")} (not UTF-8) in a message`,
        body: jsonWithBytes("content", bad, '"model":"m","messages":[],'),
        status: [400],
        message: "Request body is not valid UTF-8",
      })),
    ];

    const state = () => refusalState(h.redis);

    for (const path of endpoints) {
      for (const c of cases) {
        it(`${path}: ${c.status.join("/")} for ${c.name}, nothing upstream`, async function () {
          this.timeout(20_000);
          const before = await state();
          const res = await send(`${h.url}${path}`, "POST", c.body, auth);
          const refusal = expectRefusal(res.status, res.text, c.status);
          if (c.message) expect(refusal.error.message).to.equal(c.message);
          expect(h.fake.received, "a request reached the upstream").to.have.length(0);
          expect(await state()).to.equal(before);
        });
      }
    }

    it("does not count refused bodies against the key's rate limit (refused calls do not count)", async () => {
      const { rawKey } = await h.addKey({ rate_limit_rpm: 2 });
      const limited = { authorization: `Bearer ${rawKey}`, "x-provider-key": PROVIDER_KEY };
      for (const c of cases)
        expect((await send(`${h.url}/v1/messages`, "POST", c.body, limited)).status).to.be.within(400, 499);
      const good = JSON.stringify({
        model: "claude-3-5-haiku",
        max_tokens: 5,
        messages: [{ role: "user", content: "hi" }],
      });
      for (let i = 0; i < 2; i++)
        expect((await send(`${h.url}/v1/messages`, "POST", good, limited)).status).to.equal(200);
      expect((await send(`${h.url}/v1/messages`, "POST", good, limited)).status).to.equal(429);
    });

    it("forwards __proto__ and constructor.prototype as plain data, polluting nothing", async () => {
      const body = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}`;
      const res = await send(`${h.url}/v1/chat/completions`, "POST", body, auth);
      expect(res.status).to.equal(200);
      expect(prototypeAdditions()).to.deep.equal([]);
      expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
      const forwarded = h.fake.received[0]?.body as Record<string, unknown>;
      expect(Object.hasOwn(forwarded, "__proto__")).to.equal(true);
    });

    it("keeps a __proto__ field where terse adds one of its own (the recall tool, the instruction, a stream's usage option)", async () => {
      // A key with context compression on: every format's body gets the recall tool, and a
      // body without a system prompt gets the instruction as a new field.
      const compressing = {
        authorization: `Bearer ${(await h.addKey({ context_compress: true })).rawKey}`,
        "x-provider-key": PROVIDER_KEY,
      };
      const hi = [{ role: "user", content: "hi" }];
      const proto = { polluted: true, stream: true, tools: ["inherited"] };
      const requests: [string, Record<string, unknown>][] = [
        ["/v1/chat/completions", { model: "gpt-4o-mini", stream: true, messages: hi }],
        ["/v1/messages", { model: "claude-sonnet-4", max_tokens: 5, messages: hi }],
        ["/v1/responses", { model: "gpt-4o-mini", input: "hi" }],
        ["/v1beta/models/gemini-2.0-flash:generateContent", { contents: [{ role: "user", parts: [{ text: "hi" }] }] }],
      ];
      for (const [path, fields] of requests) {
        h.fake.reset();
        // JSON text: a literal's __proto__ would set the prototype here, not send a field.
        const body = `${JSON.stringify(fields).slice(0, -1)},"__proto__":${JSON.stringify(proto)}}`;
        const res = await send(`${h.url}${path}`, "POST", body, compressing);
        expect(res.status, path).to.equal(200);
        const forwarded = h.fake.received[0]?.body as Record<string, unknown>;
        expect(Object.hasOwn(forwarded, "__proto__"), path).to.equal(true);
        expect(Object.getPrototypeOf(forwarded), path).to.equal(Object.prototype);
        expect(Object.getOwnPropertyDescriptor(forwarded, "__proto__")?.value, path).to.deep.equal(proto);
      }
      expect(prototypeAdditions()).to.deep.equal([]);
    });

    it("keeps its heap bounded through a burst of all of the above", async function () {
      this.timeout(60_000);
      const start = heapUsed();
      for (let round = 0; round < 3; round++) {
        for (const path of endpoints) {
          await Promise.all(cases.map((c) => send(`${h.url}${path}`, "POST", c.body, auth)));
        }
      }
      const grown = (heapUsed() - start) / MB;
      expect(grown, `heap grew ${grown.toFixed(1)} MB`).to.be.lessThan(30);
      expect(h.fake.received).to.have.length(0);
    });
  });
});
