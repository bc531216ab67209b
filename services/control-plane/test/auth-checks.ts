import { expect } from "chai";
import jwt from "jsonwebtoken";
import { api, type ErrorBody, type Harness, TEST_JWT_SECRET } from "./harness.ts";

// One shared helper: every route that acts for an account refuses every kind of bad
// access token with 401 and the envelope, and changes nothing.

export interface RouteUnderTest {
  method: string;
  /** A path that would succeed with a good token (for routes with an id: an existing key of the account). */
  path: () => string;
  body?: unknown;
}

function sign(claims: object, options: jwt.SignOptions & { secret?: string } = {}): string {
  const { secret, ...signOptions } = options;
  return jwt.sign(claims, secret ?? TEST_JWT_SECRET, { algorithm: "HS256", ...signOptions });
}

/** Token variants, each invalid for one reason, for the account `accountId`. */
export function badTokens(h: Harness, accountId: string): Record<string, string | undefined> {
  const good = { subject: accountId, issuer: h.config.JWT_ISSUER, audience: h.config.JWT_AUDIENCE };
  const [header, payload] = sign({}, { ...good, expiresIn: 600 }).split(".");
  return {
    "malformed token": "not-a-jwt",
    "expired token": sign({ exp: Math.floor(Date.now() / 1000) - 60 }, good),
    "token without exp": sign({}, good),
    "token signed with another secret (forged)": sign({}, { ...good, expiresIn: 600, secret: "x".repeat(40) }),
    "token with a tampered signature": `${header}.${payload}.${"A".repeat(43)}`,
    "token of another issuer": sign({}, { ...good, issuer: "someone-else", expiresIn: 600 }),
    "token for another audience": sign({}, { ...good, audience: "other-api", expiresIn: 600 }),
    'unsigned token (alg "none")': jwt.sign(
      { sub: accountId, iss: good.issuer, aud: good.audience, exp: 9_999_999_999 },
      "",
      {
        algorithm: "none",
      },
    ),
    "token of an account that does not exist": sign({}, { ...good, subject: "acct_doesnotexist", expiresIn: 600 }),
  };
}

export function itRefusesBadTokens(
  harness: () => Harness,
  account: () => { id: string },
  routes: () => RouteUnderTest[],
): void {
  const cases: [string, (h: Harness) => Record<string, string>][] = [
    ["no Authorization header", () => ({})],
    ["an empty Authorization header", () => ({ authorization: "" })],
    ["a Basic Authorization header", () => ({ authorization: "Basic dXNlcjpwYXNz" })],
    ["Bearer with no token", () => ({ authorization: "Bearer " })],
    ...Object.keys(badTokens({ config: { JWT_ISSUER: "", JWT_AUDIENCE: "" } } as Harness, "x")).map(
      (name): [string, (h: Harness) => Record<string, string>] => [
        name,
        (h) => ({ authorization: `Bearer ${badTokens(h, account().id)[name]}` }),
      ],
    ),
  ];
  for (const [name, headersOf] of cases) {
    it(`answers 401 to ${name} on every key route, changing nothing`, async () => {
      const h = harness();
      for (const route of routes()) {
        const before = await h.db.query("SELECT * FROM service_keys ORDER BY id");
        const res = await api<ErrorBody>(h, route.method, route.path(), {
          headers: headersOf(h),
          ...(route.body === undefined ? {} : { body: route.body }),
        });
        expect(res.status, `${route.method} ${route.path()}`).to.equal(401);
        expect(res.body.error.type).to.equal("authentication_error");
        expect(res.body.error.code).to.be.oneOf(["missing_access_token", "invalid_access_token"]);
        const after = await h.db.query("SELECT * FROM service_keys ORDER BY id");
        expect(after.rows).to.deep.equal(before.rows);
      }
    });
  }
}
