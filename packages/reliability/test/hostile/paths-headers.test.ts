import { expect } from "chai";
import {
  type Harness as ControlPlane,
  createAccount,
  createKey,
  snapshot,
  startHarness as startControlPlane,
} from "../../../../services/control-plane/test/harness.ts";
import {
  type Harness as DataPlane,
  PROVIDER_KEY,
  startHarness as startDataPlane,
} from "../../../../services/data-plane/test/harness.ts";
import { expectRefusal, type RawResponse, rawRequest } from "./helpers.ts";

// Malformed paths and headers, sent raw over a socket (fetch normalises paths and
// refuses CR/LF in header values). Every answer is a 4xx without internals, never a
// 5xx, and changes nothing. services/control-plane/test/keys.security.test.ts already
// sends `' OR 1=1--`, a 300-character id and "not-an-id" to PATCH, rotate and DELETE.

const BODY = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });

interface RawCase {
  name: string;
  /** Request line target (for path cases) or extra header lines (for header cases). */
  target?: string;
  method?: string;
  headers?: string;
  /** The case sends its own Content-Length, replacing the right one. */
  ownLength?: boolean;
  statuses: number[];
}

/** Ids and paths a key route must answer 404 (400 for a request line that is no HTTP) without touching anything. */
const PATH_CASES: RawCase[] = [
  { name: "an encoded traversal", target: "/v1/auth/keys/..%2f..%2fetc%2fpasswd", statuses: [404] },
  { name: "a dot-dot traversal", target: "/v1/auth/keys/../../x", statuses: [404] },
  { name: "an encoded dot-dot traversal", target: "/v1/auth/keys/%2e%2e/%2e%2e/etc/passwd", statuses: [404] },
  { name: "a quoted SQL condition", target: "/v1/auth/keys/1'%20OR%20'1'%3D'1", statuses: [404] },
  { name: "a stacked SQL statement", target: "/v1/auth/keys/1%3BDROP%20TABLE%20service_keys%3B--", statuses: [404] },
  { name: "a NUL byte in the id", target: "/v1/auth/keys/key_%00abc", statuses: [404] },
  { name: "a broken percent escape", target: "/v1/auth/keys/%zz", statuses: [404] },
  { name: "a truncated UTF-8 escape", target: "/v1/auth/keys/%E0%A4%A", statuses: [404] },
  { name: "an escape that is not UTF-8", target: "/v1/auth/keys/%ff%fe", statuses: [404] },
  { name: "a raw space in the path", target: "/v1/auth/keys/1 DROP", statuses: [400] },
  { name: "a 100 KB id", target: `/v1/auth/keys/${"x".repeat(100_000)}`, statuses: [431] },
];

/** Header lines (each ending CRLF) that no HTTP server should take as they are. */
const HEADER_CASES: RawCase[] = [
  {
    name: "a bare CR in a header value (response splitting)",
    headers: "X-Request-Id: abc\rSet-Cookie: pwned=1\r\n",
    statuses: [400],
  },
  { name: "a bare LF in a header value", headers: "X-Request-Id: abc\nSet-Cookie: pwned=1\r\n", statuses: [400] },
  { name: "an obs-fold continuation line", headers: "X-Request-Id: abc\r\n Set-Cookie: pwned=1\r\n", statuses: [400] },
  { name: "a NUL byte in a header value", headers: "X-Request-Id: a\u0000b\r\n", statuses: [400] },
  { name: "a space before the colon", headers: "Authorization : Bearer x\r\n", statuses: [400] },
  { name: "a 100 KB header", headers: `X-Padding: ${"p".repeat(100_000)}\r\n`, statuses: [431] },
  {
    name: "Content-Length and Transfer-Encoding (smuggling)",
    headers: "Transfer-Encoding: chunked\r\n",
    statuses: [400],
  },
  { name: "two different Content-Lengths", headers: "Content-Length: 5\r\n", statuses: [400] },
  {
    name: "a Content-Length that is not a number",
    headers: "Content-Length: 12abc\r\n",
    ownLength: true,
    statuses: [400],
  },
];

function build(c: RawCase, defaults: { method: string; target: string; headers: string; body: string }): string {
  const contentLength = c.ownLength ? "" : `Content-Length: ${Buffer.byteLength(defaults.body)}\r\n`;
  return (
    `${c.method ?? defaults.method} ${c.target ?? defaults.target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n` +
    `${defaults.headers}${c.headers ?? ""}${contentLength}\r\n${defaults.body}`
  );
}

/** The expected status with the one envelope (Node's parser refusals included), nothing internal. */
function expectClean(res: RawResponse, statuses: number[]): void {
  expectRefusal(res.status, res.body, statuses);
  expect(res.headers).not.to.have.property("set-cookie");
  // Every answer carries an id, the HTTP parser's refusals included.
  expect(res.headers["x-request-id"])
    .to.be.a("string")
    .and.match(/^[A-Za-z0-9._:-]{8,128}$/);
}

describe("hostile: paths and headers", () => {
  describe("control plane", () => {
    let h: ControlPlane;
    let token: string;
    let keyId: string;
    before(async () => {
      h = await startControlPlane("hostile_paths", { redisArea: "hostile" });
      const account = await createAccount(h, "pro");
      token = account.token;
      keyId = (await createKey(h, account, { name: "kept" })).id;
    });
    after(() => h.stop());

    const auth = () => `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\n`;

    for (const c of PATH_CASES) {
      for (const [method, suffix, body] of [
        ["PATCH", "", '{"name":"renamed"}'],
        ["DELETE", "", ""],
        ["POST", "/rotate", ""],
        ["GET", "", ""],
      ] as const) {
        it(`${method} ${c.name}${suffix}: ${c.statuses.join("/")}, changing nothing`, async () => {
          const before = await snapshot(h);
          const target = `${c.target}${suffix}`;
          const res = await rawRequest(
            h.url,
            build({ ...c, target, method }, { method, target, headers: auth(), body }),
          );
          // No GET of one key: 405 where the path is a key's (its PATCH and DELETE), 404 elsewhere.
          expectClean(res, method === "GET" ? [...c.statuses, 405] : c.statuses);
          expect(await snapshot(h)).to.equal(before);
        });
      }
    }

    for (const c of HEADER_CASES) {
      it(`PATCH with ${c.name}: ${c.statuses.join("/")}, changing nothing`, async () => {
        const before = await snapshot(h);
        const defaults = {
          method: "PATCH",
          target: `/v1/auth/keys/${keyId}`,
          headers: auth(),
          body: '{"name":"renamed"}',
        };
        expectClean(await rawRequest(h.url, build(c, defaults)), c.statuses);
        expect(await snapshot(h)).to.equal(before);
      });
    }

    for (const keyId of ["key_%00abc", "1'%20OR%20'1'%3D'1", "%zz"]) {
      it(`GET /v1/usage?key_id=${keyId}: 404 or 400, never a 500`, async () => {
        const res = await rawRequest(
          h.url,
          build(
            { name: "", statuses: [] },
            { method: "GET", target: `/v1/usage?key_id=${keyId}`, headers: auth(), body: "" },
          ),
        );
        expectClean(res, [400, 404]);
      });
    }

    it("401 for two Authorization headers, the valid token first or second, changing nothing", async () => {
      for (const [first, second] of [
        [token, "junk"],
        ["junk", token],
        [token, token],
      ]) {
        const before = await snapshot(h);
        const headers = `Authorization: Bearer ${first}\r\nAuthorization: Bearer ${second}\r\nContent-Type: application/json\r\n`;
        const body = '{"name":"two-tokens"}';
        const res = await rawRequest(
          h.url,
          build({ name: "", statuses: [] }, { method: "POST", target: "/v1/auth/keys", headers, body }),
        );
        expectClean(res, [401]);
        expect(JSON.parse(res.body).error.code).to.equal("invalid_access_token");
        expect(await snapshot(h)).to.equal(before);
      }
    });

    it("still serves the key it kept", async () => {
      const res = await fetch(`${h.url}/v1/auth/keys`, { headers: { authorization: `Bearer ${token}` } });
      expect(((await res.json()) as { id: string; name: string }[]).map((k) => [k.id, k.name])).to.deep.equal([
        [keyId, "kept"],
      ]);
    });
  });

  describe("data plane", () => {
    let h: DataPlane;
    let auth: string;
    before(async () => {
      h = await startDataPlane({}, "hostile");
      const { rawKey } = await h.addKey();
      auth = `Authorization: Bearer ${rawKey}\r\nX-Provider-Key: ${PROVIDER_KEY}\r\nContent-Type: application/json\r\n`;
    });
    after(() => h.close());
    beforeEach(() => h.fake.reset());

    const proxyPaths: RawCase[] = [
      ...PATH_CASES.map((c) => ({ ...c, target: c.target?.replace("/v1/auth/keys/", "/v1/chat/completions/") })),
      { name: "a traversal onto a proxy route", target: "/v1/x/../chat/completions", statuses: [404] },
      { name: "an encoded proxy path", target: "/v1/chat%2fcompletions", statuses: [404] },
      {
        name: "a Gemini model with a broken escape",
        target: "/v1beta/models/%zz:generateContent",
        statuses: [404],
      },
      { name: "a Gemini model that is not UTF-8", target: "/v1beta/models/%ff:generateContent", statuses: [404] },
    ];
    for (const c of proxyPaths) {
      it(`POST ${c.name}: ${c.statuses.join("/")}, nothing upstream`, async () => {
        const defaults = { method: "POST", target: c.target ?? "/", headers: auth, body: BODY };
        expectClean(await rawRequest(h.url, build(c, defaults)), c.statuses);
        expect(h.fake.received).to.have.length(0);
      });
    }

    // One model's entry: a name that escapes its segment never reaches the provider (the
    // caller's key rides along in the query); an ordinary one goes re-encoded.
    for (const target of [
      "/v1beta/models/..%2F..%2Fadmin",
      "/v1beta/models/%2e%2e",
      "/v1beta/models/.",
      "/v1beta/models/a%2Fb",
      "/v1beta/models/%zz",
    ]) {
      it(`GET ${target}: 404, nothing upstream`, async () => {
        expectClean(
          await rawRequest(h.url, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${auth}\r\n`),
          [404],
        );
        expect([...h.fake.received, ...h.fake.unrouted]).to.have.length(0);
      });
    }

    it("GET one Gemini model's entry: forwarded to that entry, its name re-encoded", async () => {
      const res = await rawRequest(
        h.url,
        `GET /v1beta/models/gemini%2D2.5-flash HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${auth}\r\n`,
      );
      // The fake serves no single model's entry: it answers 404 and records what was asked.
      expect(res.status).to.equal(404);
      expect(h.fake.unrouted.map((r) => r.url.split("?")[0])).to.deep.equal(["/v1beta/models/gemini-2.5-flash"]);
    });

    for (const c of HEADER_CASES) {
      it(`POST /v1/chat/completions with ${c.name}: ${c.statuses.join("/")}, nothing upstream`, async () => {
        const defaults = { method: "POST", target: "/v1/chat/completions", headers: auth, body: BODY };
        expectClean(await rawRequest(h.url, build(c, defaults)), c.statuses);
        expect(h.fake.received).to.have.length(0);
      });
    }

    it("still proxies after all of the above", async () => {
      const res = await rawRequest(
        h.url,
        build(
          { name: "ok", statuses: [] },
          { method: "POST", target: "/v1/chat/completions", headers: auth, body: BODY },
        ),
      );
      expect(res.status).to.equal(200);
      expect(h.fake.received).to.have.length(1);
    });
  });
});
