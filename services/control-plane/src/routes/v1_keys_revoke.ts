import type { Express, Request, Response } from "express";
import type { AppContext } from "../context.ts";
import { listView } from "../domain/key-view.ts";
import { jsonBody } from "../http/json-body.ts";
import { parseBody } from "../http/validate.ts";
import { accountOf } from "./auth_middleware.ts";
import { emptyBody } from "./key_fields.ts";

// DELETE /v1/auth/keys/{id}: soft delete. 200 with the record (list shape,
// is_active false); again on a revoked key: 200, unchanged. The key's Redis record is
// gone before this answers, so the proxy refuses it from that moment (spec 3).

export const revokeKeyRequest = emptyBody;

export function register(app: Express, ctx: AppContext): void {
  app.delete("/v1/auth/keys/:id", ctx.requireAccount, jsonBody, async (req: Request, res: Response) => {
    parseBody(revokeKeyRequest, req.body);
    const record = await ctx.services.keys.revoke(accountOf(req).id, String(req.params.id));
    res.json(listView(record));
  });
}
