import type { Express, Request, Response } from "express";
import type { AppContext } from "../context.ts";
import { createView } from "../domain/key-view.ts";
import { jsonBody } from "../http/json-body.ts";
import { parseBody } from "../http/validate.ts";
import { accountOf } from "./auth_middleware.ts";
import { emptyBody } from "./key_fields.ts";

// POST /v1/auth/keys/{id}/rotate: a new key with the old one's name and settings (201,
// create shape); the old key is out of Redis before this answers. Works at the plan
// limit: the number of active keys does not change.

export const rotateKeyRequest = emptyBody;

export function register(app: Express, ctx: AppContext): void {
  app.post("/v1/auth/keys/:id/rotate", ctx.requireAccount, jsonBody, async (req: Request, res: Response) => {
    parseBody(rotateKeyRequest, req.body);
    const issued = await ctx.services.keys.rotate(accountOf(req).id, String(req.params.id));
    res.status(201).json(createView(issued.record, issued.rawKey));
  });
}
