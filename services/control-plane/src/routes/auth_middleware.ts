import type { Plan } from "@terse/db";
import { ApiError } from "@terse/errors";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { AccountService } from "../domain/accounts.ts";
import type { Tokens } from "../domain/tokens.ts";

// The JWT check of every route that acts for an account (spec 4: `Authorization: Bearer
// <ACCESS_TOKEN>`). Usage: `app.get(path, ctx.requireAccount, handler)`, then
// `accountOf(req)` in the handler.

/** The caller, as the routes see it. */
export interface AuthenticatedAccount {
  id: string;
  plan: Plan;
  email: string | null;
}

declare global {
  namespace Express {
    interface Request {
      /** Set by requireAccount. */
      account?: AuthenticatedAccount;
    }
  }
}

const BEARER = /^Bearer +([^\s]+) *$/i;

export function requireAccount(deps: { tokens: Tokens; accounts: AccountService }): RequestHandler {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    if (header === undefined || header.trim() === "") throw new ApiError("missing_access_token");
    // Node keeps the first of repeated Authorization headers; a proxy in front may have
    // read another. Which one counts would be a guess, so none does.
    if (countHeader(req.rawHeaders, "authorization") > 1) throw new ApiError("invalid_access_token");
    const token = BEARER.exec(header)?.[1];
    if (!token) throw new ApiError("invalid_access_token");
    const subject = await deps.tokens.verify(token);
    if (!subject) throw new ApiError("invalid_access_token");
    const account =
      subject.kind === "local"
        ? await deps.accounts.findById(subject.accountId)
        : await deps.accounts.findOrCreateExternal(subject.iss, subject.sub);
    // A valid signature for an account that no longer exists is still no access.
    if (!account) throw new ApiError("invalid_access_token");
    req.account = { id: account.id, plan: account.plan, email: account.email };
    next();
  };
}

function countHeader(rawHeaders: string[], name: string): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]?.toLowerCase() === name) n++;
  return n;
}

/** The account requireAccount put on the request. */
export function accountOf(req: Request): AuthenticatedAccount {
  if (!req.account) throw new Error("route is missing requireAccount");
  return req.account;
}
