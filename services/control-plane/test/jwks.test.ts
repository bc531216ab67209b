import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { createServer, type Server } from "node:http";
import { close, listen } from "@terse/testkit";
import { expect } from "chai";
import jwt from "jsonwebtoken";
import { api, createAccount, type ErrorBody, type Harness, startHarness } from "./harness.ts";

// RS256 tokens of an external identity provider (JWT_JWKS_URL), against a JWKS server
// of the test's own on 127.0.0.1.

const ISSUER = "https://idp.test.local/";
const AUDIENCE = "terse-external";
const KID = "test-key-1";

function rsaKey(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync("rsa", { modulusLength: 2048 });
}

describe("external identity provider tokens (RS256, JWKS)", () => {
  let h: Harness;
  let jwksServer: Server;
  let jwksHits = 0;
  let jwksDown = false;
  const idp = rsaKey();
  const stranger = rsaKey();

  /** An IdP token; `noExp` leaves expiresIn out (for tokens with their own exp, or none). */
  const sign = (claims: object, options: jwt.SignOptions = {}, key: KeyObject = idp.privateKey, noExp = false) =>
    jwt.sign(claims, key, {
      algorithm: "RS256",
      keyid: KID,
      issuer: ISSUER,
      audience: AUDIENCE,
      ...(noExp ? {} : { expiresIn: 300 }),
      ...options,
    });

  before(async () => {
    jwksServer = createServer((req, res) => {
      jwksHits += 1;
      if (jwksDown) {
        res.writeHead(503).end();
        return;
      }
      if (req.url !== "/.well-known/jwks.json") {
        res.writeHead(404).end();
        return;
      }
      const jwk = { ...idp.publicKey.export({ format: "jwk" }), kid: KID, alg: "RS256", use: "sig" };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] }));
    });
    const jwksUrl = `${await listen(jwksServer)}/.well-known/jwks.json`;
    h = await startHarness("jwks", {
      env: { JWT_JWKS_URL: jwksUrl, JWT_JWKS_ISSUER: ISSUER, JWT_JWKS_AUDIENCE: AUDIENCE },
    });
  });
  after(async () => {
    await h.stop();
    await close(jwksServer);
  });

  it("accepts a valid token, creating the account for (iss, sub) on first sight", async () => {
    const token = sign({}, { subject: "user-42" });
    const res = await api(h, "GET", "/v1/auth/keys", { token });
    expect(res.status).to.equal(200);
    expect(jwksHits).to.be.greaterThan(0);
    const rows = await h.db.query("SELECT * FROM accounts WHERE external_iss = $1 AND external_sub = $2", [
      ISSUER,
      "user-42",
    ]);
    expect(rows.rows).to.have.length(1);
    expect(rows.rows[0]).to.include({ plan: "free", email: null, password_hash: null });
  });

  it("finds the same account again, also under concurrent first requests", async () => {
    const token = sign({}, { subject: "user-concurrent" });
    const results = await Promise.all(Array.from({ length: 5 }, () => api(h, "GET", "/v1/auth/keys", { token })));
    expect(results.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200]);
    const rows = await h.db.query("SELECT id FROM accounts WHERE external_sub = 'user-concurrent'");
    expect(rows.rows).to.have.length(1);
  });

  it("manages keys with it: created keys belong to the external account", async () => {
    const token = sign({}, { subject: "user-42" });
    const created = await api<{ id: string }>(h, "POST", "/v1/auth/keys", { token, body: { name: "from-idp" } });
    expect(created.status).to.equal(201);
    const list = await api<{ id: string }[]>(h, "GET", "/v1/auth/keys", { token });
    expect(list.body.map((k) => k.id)).to.deep.equal([created.body.id]);
  });

  it("still accepts our own HS256 tokens", async () => {
    const local = await createAccount(h, "free");
    expect((await api(h, "GET", "/v1/auth/keys", { token: local.token })).status).to.equal(200);
  });

  it("answers 503, not 401, while the provider's key set cannot be fetched, creating no account", async () => {
    // A kid not cached yet makes the client fetch the key set again.
    const token = sign({}, { subject: "user-during-outage", keyid: "rotated-kid" });
    jwksDown = true;
    try {
      const res = await api<ErrorBody>(h, "GET", "/v1/auth/keys", { token });
      expect(res.status).to.equal(503);
      expect(res.body.error.code).to.equal("service_unavailable");
    } finally {
      jwksDown = false;
    }
    const rows = await h.db.query("SELECT id FROM accounts WHERE external_sub = 'user-during-outage'");
    expect(rows.rows).to.have.length(0);
  });

  const refused: [string, () => string][] = [
    ["a token of another issuer", () => sign({}, { subject: "u", issuer: "https://evil.example/" })],
    ["a token for another audience", () => sign({}, { subject: "u", audience: "someone-else" })],
    [
      "an expired token",
      () => sign({ exp: Math.floor(Date.now() / 1000) - 60 }, { subject: "u" }, idp.privateKey, true),
    ],
    ["a token without exp", () => sign({}, { subject: "u" }, idp.privateKey, true)],
    ["a token without sub", () => sign({})],
    ["a token signed by a key the provider does not publish", () => sign({}, { subject: "u" }, stranger.privateKey)],
    ["a token with an unknown kid", () => sign({}, { subject: "u", keyid: "unknown-kid" })],
    [
      "an HS256 token signed with the provider's public key (algorithm confusion)",
      () =>
        jwt.sign(
          { sub: "u", iss: ISSUER, aud: AUDIENCE },
          idp.publicKey.export({ format: "pem", type: "spki" }).toString(),
          {
            algorithm: "HS256",
            expiresIn: 300,
          },
        ),
    ],
  ];
  for (const [name, token] of refused) {
    it(`answers 401 to ${name}, creating no account`, async () => {
      const before = await h.db.query("SELECT count(*)::int AS n FROM accounts");
      const res = await api<ErrorBody>(h, "GET", "/v1/auth/keys", { token: token() });
      expect(res.status).to.equal(401);
      expect(res.body.error.code).to.equal("invalid_access_token");
      const after = await h.db.query("SELECT count(*)::int AS n FROM accounts");
      expect(after.rows[0]?.n).to.equal(before.rows[0]?.n);
    });
  }
});

describe("external tokens without JWT_JWKS_URL", () => {
  let h: Harness;
  before(async () => {
    h = await startHarness("nojwks");
  });
  after(() => h.stop());

  it("refuses RS256 tokens with 401", async () => {
    const { privateKey } = rsaKey();
    const token = jwt.sign({}, privateKey, {
      algorithm: "RS256",
      subject: "u",
      issuer: h.config.JWT_ISSUER,
      audience: h.config.JWT_AUDIENCE,
      expiresIn: 300,
    });
    const res = await api<ErrorBody>(h, "GET", "/v1/auth/keys", { token });
    expect(res.status).to.equal(401);
  });
});
