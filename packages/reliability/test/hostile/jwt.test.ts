import { createHmac, createSign, generateKeyPairSync, type KeyObject } from "node:crypto";
import { createServer, type Server } from "node:http";
import { close, listen } from "@terse/testkit";
import { expect } from "chai";
import {
  api,
  createAccount,
  type ErrorBody,
  type Harness,
  startHarness,
  TEST_JWT_SECRET,
  type TestAccount,
} from "../../../../services/control-plane/test/harness.ts";
import { expectNoInternals } from "./helpers.ts";

// Forged access tokens that services/control-plane/test/auth-checks.ts (alg none, expired,
// no exp, wrong secret, tampered signature, issuer, audience, unknown account) and
// jwks.test.ts (HS256 with the PEM public key) do not try. Built by hand, not with
// jsonwebtoken, so nothing in them is normalised on the way out.

const ISSUER = "https://idp.hostile.test/";
const AUDIENCE = "terse-hostile";
const KID = "idp-key-1";

const b64 = (v: object | string) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");

function hmacToken(header: object, claims: object, secret: string | Buffer, digest = "sha256"): string {
  const data = `${b64(header)}.${b64(claims)}`;
  return `${data}.${createHmac(digest, secret).update(data).digest("base64url")}`;
}

function rsaToken(header: object, claims: object, key: KeyObject): string {
  const data = `${b64({ alg: "RS256", typ: "JWT", ...header })}.${b64(claims)}`;
  return `${data}.${createSign("RSA-SHA256").update(data).sign(key, "base64url")}`;
}

describe("hostile: access tokens", () => {
  let h: Harness;
  let jwksServer: Server;
  let attackerServer: Server;
  let attackerUrl: string;
  let attackerHits = 0;
  let account: TestAccount;
  const idp = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const attacker = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const now = () => Math.floor(Date.now() / 1000);

  before(async () => {
    const jwk = { ...idp.publicKey.export({ format: "jwk" }), kid: KID, alg: "RS256", use: "sig" };
    jwksServer = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] }));
    });
    // A key set of the attacker's own, which a token may point at (jku, x5u): it must never be asked.
    attackerServer = createServer((_req, res) => {
      attackerHits += 1;
      const key = { ...attacker.publicKey.export({ format: "jwk" }), kid: KID, alg: "RS256", use: "sig" };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [key] }));
    });
    const jwksUrl = `${await listen(jwksServer)}/jwks.json`;
    attackerUrl = `${await listen(attackerServer)}/jwks.json`;
    h = await startHarness("hostile_jwt", {
      redisArea: "hostile",
      env: { JWT_JWKS_URL: jwksUrl, JWT_JWKS_ISSUER: ISSUER, JWT_JWKS_AUDIENCE: AUDIENCE },
    });
    account = await createAccount(h, "free");
  });
  after(async () => {
    await h.stop();
    await close(jwksServer);
    await close(attackerServer);
  });

  const local = () => ({ sub: account.id, iss: h.config.JWT_ISSUER, aud: h.config.JWT_AUDIENCE, exp: now() + 600 });
  const external = () => ({ sub: "idp-user", iss: ISSUER, aud: AUDIENCE, exp: now() + 600 });
  const publicPem = (type: "spki" | "pkcs1") => idp.publicKey.export({ format: "pem", type }).toString();

  it("accepts the well-formed tokens the forgeries below are made from (the control for every case)", async () => {
    const ours = hmacToken({ alg: "HS256", typ: "JWT" }, local(), TEST_JWT_SECRET);
    const theirs = rsaToken({ kid: KID }, external(), idp.privateKey);
    for (const token of [ours, theirs]) expect((await api(h, "GET", "/v1/auth/keys", { token })).status).to.equal(200);
  });

  const forgeries: [string, () => string][] = [
    [
      "a token not valid before a time in the future (nbf)",
      () => hmacToken({ alg: "HS256", typ: "JWT" }, { ...local(), nbf: now() + 600 }, TEST_JWT_SECRET),
    ],
    [
      "an IdP token not valid before a time in the future (nbf)",
      () => rsaToken({ kid: KID }, { ...external(), nbf: now() + 600 }, idp.privateKey),
    ],
    ...["None", "NONE", "nOnE"].map((alg): [string, () => string] => [
      `alg "${alg}" with no signature`,
      () => `${b64({ alg, typ: "JWT" })}.${b64(local())}.`,
    ]),
    [
      'alg "none" carrying a signature made with the real secret',
      () => `${hmacToken({ alg: "none" }, local(), TEST_JWT_SECRET)}`,
    ],
    ...["sha384", "sha512"].map((digest): [string, () => string] => [
      `HS${digest.slice(3)} signed with the real secret (the algorithm is pinned, not taken from the token)`,
      () => hmacToken({ alg: `HS${digest.slice(3)}`, typ: "JWT" }, local(), TEST_JWT_SECRET, digest),
    ]),
    // HS/RS confusion: the provider's public key as the HMAC secret, in every encoding a
    // careless verifier might hand to HMAC.
    ...(
      [
        ["PEM (PKCS#1)", () => publicPem("pkcs1")],
        ["PEM (SPKI) without its final newline", () => publicPem("spki").trimEnd()],
        ["JWK JSON", () => JSON.stringify(idp.publicKey.export({ format: "jwk" }))],
        ["DER", () => idp.publicKey.export({ format: "der", type: "spki" }).toString("latin1")],
      ] as const
    ).flatMap(([encoding, secret]): [string, () => string][] => [
      [
        `HS256 with the IdP's kid, signed with its public key as ${encoding}`,
        () => hmacToken({ alg: "HS256", typ: "JWT", kid: KID }, external(), secret()),
      ],
      [
        `HS256 with our own claims, signed with the IdP's public key as ${encoding}`,
        () => hmacToken({ alg: "HS256", typ: "JWT" }, local(), secret()),
      ],
    ]),
    [
      'alg "RS256" with an HMAC signature made with the public key',
      () => {
        const data = `${b64({ alg: "RS256", kid: KID })}.${b64(external())}`;
        return `${data}.${createHmac("sha256", publicPem("spki")).update(data).digest("base64url")}`;
      },
    ],
    [
      "a token naming the attacker's key set (jku) and signed by it",
      () => rsaToken({ kid: KID, jku: attackerUrl, x5u: attackerUrl }, external(), attacker.privateKey),
    ],
    [
      "a token carrying the attacker's public key in its header (jwk)",
      () => rsaToken({ kid: KID, jwk: attacker.publicKey.export({ format: "jwk" }) }, external(), attacker.privateKey),
    ],
    // Well signed, with a subject no store can take: a number, a NUL, an object (was a 500).
    ...[123, "acct_\u0000x", { id: "acct" }, ""].flatMap((sub): [string, () => string][] => [
      [
        `our own token whose sub is ${JSON.stringify(sub)}`,
        () => hmacToken({ alg: "HS256", typ: "JWT" }, { ...local(), sub }, TEST_JWT_SECRET),
      ],
      [
        `an IdP token whose sub is ${JSON.stringify(sub)}`,
        () => rsaToken({ kid: KID }, { ...external(), sub }, idp.privateKey),
      ],
    ]),
    ...["../../../../dev/null", "' OR '1'='1", "x".repeat(4_000)].map((kid): [string, () => string] => [
      `an RS256 token with the kid ${JSON.stringify(kid.slice(0, 20))}`,
      () => rsaToken({ kid }, external(), attacker.privateKey),
    ]),
  ];

  for (const [name, token] of forgeries) {
    it(`answers 401 to ${name}, creating no account`, async () => {
      const before = await h.db.query("SELECT id FROM accounts ORDER BY id");
      const res = await api<ErrorBody>(h, "GET", "/v1/auth/keys", { token: token() });
      expect(res.status, JSON.stringify(res.body)).to.equal(401);
      expect(res.body.error).to.deep.equal({
        message: "Invalid access token",
        type: "authentication_error",
        code: "invalid_access_token",
      });
      expect((await h.db.query("SELECT id FROM accounts ORDER BY id")).rows).to.deep.equal(before.rows);
      expect(attackerHits, "the attacker's key set was fetched").to.equal(0);
    });
  }

  it("answers 401 to a token issued before its account was deleted, and does not bring the account back", async () => {
    const doomed = await createAccount(h, "free");
    const created = await api(h, "POST", "/v1/auth/keys", { token: doomed.token, body: { name: "before" } });
    expect(created.status).to.equal(201);
    await h.db.query("DELETE FROM service_keys WHERE account_id = $1", [doomed.id]);
    await h.db.query("DELETE FROM accounts WHERE id = $1", [doomed.id]);
    for (const [method, path] of [
      ["GET", "/v1/auth/keys"],
      ["POST", "/v1/auth/keys"],
    ]) {
      const res = await api<ErrorBody>(h, method as string, path as string, { token: doomed.token });
      expect(res.status).to.equal(401);
      expect(res.body.error.code).to.equal("invalid_access_token");
      expectNoInternals(JSON.stringify(res.body));
    }
    const rows = await h.db.query(
      "SELECT 1 FROM accounts WHERE id = $1 UNION ALL SELECT 1 FROM service_keys WHERE account_id = $1",
      [doomed.id],
    );
    expect(rows.rowCount).to.equal(0);
  });
});
