import type { Express, Request, Response } from "express";
import type { AppContext } from "../context.ts";
import { listView } from "../domain/key-view.ts";
import { accountOf } from "./auth_middleware.ts";

// GET /v1/auth/keys: all the caller's keys, active and revoked, newest first, in the
// list shape (key_prefix and rate_limit_rpm, never the raw key).

export function register(app: Express, ctx: AppContext): void {
  app.get("/v1/auth/keys", ctx.requireAccount, async (req: Request, res: Response) => {
    const keys = await ctx.services.keys.list(accountOf(req).id);
    res.json(keys.map(listView));
  });
}
