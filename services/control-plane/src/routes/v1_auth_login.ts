import { ApiError } from "@terse/errors";
import type { Express, Request, Response } from "express";
import { z } from "zod";
import type { AppContext } from "../context.ts";
import { MAX_EMAIL_LENGTH, MAX_PASSWORD_LENGTH, normaliseEmail } from "../domain/accounts.ts";
import { jsonBody } from "../http/json-body.ts";
import { parseBody } from "../http/validate.ts";

// POST /v1/auth/login {email, password} -> 200 {access_token, token_type, expires_in}.
// One 401 `Invalid credentials` for an unknown email and a wrong password alike, in
// the same time; throttled per email and per IP (429 with Retry-After).

export const loginRequest = z.strictObject({
  email: z
    .string({ error: "must be a string" })
    .min(1, "must not be empty")
    .max(MAX_EMAIL_LENGTH, `must be at most ${MAX_EMAIL_LENGTH} characters`)
    // No address has them, and a NUL byte cannot even be looked up (Postgres text): was a 500.
    .refine((s) => !/\p{Cc}/u.test(s), "must not contain control characters"),
  password: z
    .string({ error: "must be a string" })
    .min(1, "must not be empty")
    .max(MAX_PASSWORD_LENGTH, `must be at most ${MAX_PASSWORD_LENGTH} characters`),
});

export function register(app: Express, ctx: AppContext): void {
  app.post("/v1/auth/login", jsonBody, async (req: Request, res: Response) => {
    const { email, password } = parseBody(loginRequest, req.body);
    const ip = req.ip ?? req.socket.remoteAddress ?? "unknown";
    const throttleKey = normaliseEmail(email);
    await ctx.services.throttle.begin(throttleKey, ip);
    const account = await ctx.services.accounts.authenticate(email, password);
    if (!account) throw new ApiError("invalid_credentials");
    await ctx.services.throttle.succeeded(throttleKey, ip);
    res.set("Cache-Control", "no-store").json(ctx.services.tokens.issue(account.id));
  });
}
