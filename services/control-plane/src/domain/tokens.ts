import { ApiError } from "@terse/errors";
import { nameFault } from "@terse/identifiers";
import { couldBeRecordId } from "@terse/keys";
import jwt from "jsonwebtoken";
import { JwksClient } from "jwks-rsa";

// Access tokens for the key endpoints (DESIGN.md sections 3 and 7). Our own: HS256 with
// JWT_SECRET, `sub` = account id, `iss`/`aud` checked, `exp` required. With
// JWT_JWKS_URL set, RS256 tokens of an external identity provider are accepted too.
// The accepted algorithm is fixed per path, never taken from the token, so an
// attacker cannot sign an HS256 token with the provider's public key.

export interface TokenSettings {
  secret: string;
  issuer: string;
  audience: string;
  ttlSeconds: number;
  jwksUrl?: string | undefined;
  jwksIssuer?: string | undefined;
  jwksAudience?: string | undefined;
}

/** Who a valid token speaks for. */
export type TokenSubject = { kind: "local"; accountId: string } | { kind: "external"; iss: string; sub: string };

export class Tokens {
  private readonly jwks: JwksClient | undefined;

  constructor(private readonly settings: TokenSettings) {
    this.jwks = settings.jwksUrl
      ? new JwksClient({
          jwksUri: settings.jwksUrl,
          cache: true,
          rateLimit: true,
          jwksRequestsPerMinute: 10,
          timeout: 5_000,
        })
      : undefined;
  }

  issue(accountId: string): { access_token: string; token_type: "Bearer"; expires_in: number } {
    const token = jwt.sign({}, this.settings.secret, {
      algorithm: "HS256",
      subject: accountId,
      issuer: this.settings.issuer,
      audience: this.settings.audience,
      expiresIn: this.settings.ttlSeconds,
    });
    return { access_token: token, token_type: "Bearer", expires_in: this.settings.ttlSeconds };
  }

  /** The token's subject, or null for anything not valid (malformed, forged, expired, wrong iss/aud). */
  async verify(token: string): Promise<TokenSubject | null> {
    const decoded = jwt.decode(token, { complete: true });
    if (!decoded || typeof decoded.payload === "string") return null;
    if (decoded.header.alg === "HS256") return this.verifyLocal(token);
    if (decoded.header.alg === "RS256" && this.jwks) return this.verifyExternal(token, decoded.header.kid);
    return null;
  }

  private verifyLocal(token: string): TokenSubject | null {
    try {
      const claims = jwt.verify(token, this.settings.secret, {
        algorithms: ["HS256"],
        issuer: this.settings.issuer,
        audience: this.settings.audience,
      });
      if (typeof claims === "string" || claims.exp === undefined) return null;
      // Signed by us, so an account id; anything else (a number, a NUL) is no token of ours.
      if (typeof claims.sub !== "string" || !couldBeRecordId(claims.sub)) return null;
      return { kind: "local", accountId: claims.sub };
    } catch {
      return null;
    }
  }

  /**
   * The provider's public key for `kid`; null when it publishes none (a forged or stale
   * token). Its key set out of reach is no verdict on the token: 503, never 401.
   */
  private async signingKey(kid: string | undefined): Promise<string | null> {
    if (!this.jwks) return null;
    try {
      return (await this.jwks.getSigningKey(kid)).getPublicKey();
    } catch (err) {
      // Unknown kid, or refetches for unknown kids throttled: the token is not one we can trust.
      if (err instanceof Error && (err.name === "SigningKeyNotFoundError" || err.name === "JwksRateLimitError")) {
        return null;
      }
      throw new ApiError("service_unavailable");
    }
  }

  private async verifyExternal(token: string, kid: string | undefined): Promise<TokenSubject | null> {
    const key = await this.signingKey(kid);
    if (!key) return null;
    try {
      const claims = jwt.verify(token, key, {
        algorithms: ["RS256"],
        ...(this.settings.jwksIssuer ? { issuer: this.settings.jwksIssuer } : {}),
        ...(this.settings.jwksAudience ? { audience: this.settings.jwksAudience } : {}),
      });
      if (typeof claims === "string" || claims.exp === undefined) return null;
      // The identity provider's names for the caller are stored: strings Postgres can hold.
      if (!isStorableName(claims.sub) || !isStorableName(claims.iss)) return null;
      return { kind: "external", iss: claims.iss, sub: claims.sub };
    } catch {
      return null;
    }
  }
}

/** A claim stored as the account's external identity: a non-empty string Postgres can hold, with no control characters. */
function isStorableName(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && value.length <= 2048 && nameFault(value) === undefined;
}
