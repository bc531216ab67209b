import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { expect } from "chai";
import jwt from "jsonwebtoken";
import { itRejectsBadInput, NOT_JSON } from "./bad-input.ts";
import {
  api,
  createAccount,
  type ErrorBody,
  type Harness,
  startHarness,
  TEST_PASSWORD,
  type TestAccount,
} from "./harness.ts";

interface LoginBody {
  access_token: string;
  token_type: string;
  expires_in: number;
}

describe("POST /v1/auth/login", () => {
  let h: Harness;
  let account: TestAccount;
  let ipCounter = 0;

  before(async () => {
    // Proxy trust on, so each test can come from an IP of its own (X-Forwarded-For).
    h = await startHarness("login", { env: { CONTROL_PLANE_TRUST_PROXY: "1" } });
    account = await createAccount(h, "free");
  });
  after(() => h.stop());

  function freshIp(): string {
    ipCounter += 1;
    return `198.51.100.${ipCounter}`;
  }

  const login = (body: unknown, ip = freshIp()) =>
    api<LoginBody & ErrorBody>(h, "POST", "/v1/auth/login", { body, headers: { "x-forwarded-for": ip } });

  describe("happy", () => {
    it("answers 200 with an HS256 access token that works on the key routes", async () => {
      const res = await login({ email: account.email, password: TEST_PASSWORD });
      expect(res.status).to.equal(200);
      expect(res.body.token_type).to.equal("Bearer");
      expect(res.body.expires_in).to.equal(3600);
      expect(res.headers.get("cache-control")).to.equal("no-store");
      const claims = jwt.verify(res.body.access_token, h.config.JWT_SECRET, {
        algorithms: ["HS256"],
      }) as jwt.JwtPayload;
      expect(claims).to.include({ sub: account.id, iss: "terse", aud: "terse-api" });
      expect(Number(claims.exp) - Number(claims.iat)).to.equal(3600);
      const keys = await api(h, "GET", "/v1/auth/keys", { token: res.body.access_token });
      expect(keys.status).to.equal(200);
    });

    it("reads a body the client really compressed (gzip, deflate, br)", async () => {
      const json = JSON.stringify({ email: account.email, password: TEST_PASSWORD });
      const codings = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync };
      for (const [coding, encode] of Object.entries(codings)) {
        const res = await fetch(`${h.url}/v1/auth/login`, {
          method: "POST",
          headers: { "content-type": "application/json", "content-encoding": coding, "x-forwarded-for": freshIp() },
          body: encode(json),
        });
        expect(res.status, coding).to.equal(200);
      }
    });

    it("matches the email case-insensitively", async () => {
      const res = await login({ email: account.email.toUpperCase(), password: TEST_PASSWORD });
      expect(res.status).to.equal(200);
    });
  });

  describe("errors", () => {
    it("answers the same 401 Invalid credentials for a wrong password and an unknown email", async () => {
      const wrong = await login({ email: account.email, password: "wrong password" });
      const unknown = await login({ email: "nobody@example.com", password: TEST_PASSWORD });
      for (const res of [wrong, unknown]) {
        expect(res.status).to.equal(401);
        expect(res.body).to.deep.equal({
          error: { message: "Invalid credentials", type: "authentication_error", code: "invalid_credentials" },
        });
      }
      expect([...wrong.headers.keys()].sort()).to.deep.equal([...unknown.headers.keys()].sort());
    });

    it("takes about as long for an unknown email as for a wrong password (argon2 runs either way)", async () => {
      const times = { known: [] as number[], unknown: [] as number[] };
      // Taken in turns, so a change in the machine's load weighs on both alike. Five of
      // each: the known email locks at ten failures.
      for (let i = 0; i < 5; i++) {
        for (const [which, email] of [
          ["known", account.email],
          ["unknown", "ghost@example.com"],
        ] as const) {
          const t0 = performance.now();
          await login({ email, password: "not the password" });
          times[which].push(performance.now() - t0);
        }
      }
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[2] ?? 0;
      const known = median(times.known);
      const unknown = median(times.unknown);
      // Without the dummy verification the unknown email answers in ~1 ms against tens.
      const medians = `medians: unknown ${unknown.toFixed(1)} ms, known ${known.toFixed(1)} ms`;
      expect(unknown, medians).to.be.greaterThan(known * 0.5);
      expect(unknown, medians).to.be.lessThan(known * 2);
    });

    it("locks an email out after 10 failures, correct password included, with Retry-After", async () => {
      const victim = await createAccount(h, "free");
      for (let i = 0; i < 10; i++) {
        expect((await login({ email: victim.email, password: `guess-${i}` })).status).to.equal(401);
      }
      const res = await login({ email: victim.email, password: TEST_PASSWORD });
      expect(res.status).to.equal(429);
      expect(res.body.error).to.deep.equal({
        message: "Too many login attempts",
        type: "rate_limit_error",
        code: "too_many_login_attempts",
      });
      const retryAfter = Number(res.headers.get("retry-after"));
      expect(retryAfter).to.be.within(1, 15 * 60);
      // Other accounts are not affected.
      expect((await login({ email: account.email, password: TEST_PASSWORD })).status).to.equal(200);
    });

    it("does not lock an email out after 9 failures, and a success clears its count", async () => {
      const user = await createAccount(h, "free");
      for (let i = 0; i < 9; i++) await login({ email: user.email, password: "nope" });
      expect((await login({ email: user.email, password: TEST_PASSWORD })).status).to.equal(200);
      for (let i = 0; i < 9; i++) await login({ email: user.email, password: "nope" });
      expect((await login({ email: user.email, password: TEST_PASSWORD })).status).to.equal(200);
    });

    it("holds the email limit against parallel guesses: of 20 at once, at most 10 are checked", async () => {
      const victim = await createAccount(h, "free");
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => login({ email: victim.email, password: `parallel-${i}` })),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 401)).to.have.length(10);
      expect(statuses.filter((s) => s === 429)).to.have.length(10);
    });

    it("locks an IP out after 100 failures, whatever the email, with Retry-After", async function () {
      this.timeout(120_000);
      const ip = freshIp();
      // Ten at a time: argon2 runs on libuv's thread pool, so this takes half as long.
      for (let batch = 0; batch < 10; batch++) {
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => login({ email: `spray-${batch}-${i}@example.com`, password: "x" }, ip)),
        );
        expect(results.map((r) => r.status)).to.deep.equal(Array(10).fill(401));
      }
      const res = await login({ email: account.email, password: TEST_PASSWORD }, ip);
      expect(res.status).to.equal(429);
      expect(Number(res.headers.get("retry-after"))).to.be.within(1, 15 * 60);
      expect((await login({ email: account.email, password: TEST_PASSWORD })).status).to.equal(200);
    });
  });

  describe("bad input", () => {
    itRejectsBadInput(
      () => h,
      () => ({ method: "POST", path: "/v1/auth/login" }),
      [
        ...NOT_JSON,
        { name: "an empty object", body: {}, status: 400, param: "email" },
        { name: "a missing password", body: { email: "a@b.c" }, status: 400, param: "password" },
        { name: "email of the wrong type", body: { email: 1, password: "x" }, status: 400, param: "email" },
        {
          name: "password of the wrong type",
          body: { email: "a@b.c", password: ["x"] },
          status: 400,
          param: "password",
        },
        {
          name: "an unknown field",
          body: { email: "a@b.c", password: "x", remember: true },
          status: 400,
          param: "remember",
        },
      ],
    );
  });
});
