import type { Express, Request, Response } from "express";
import type { AppContext } from "../context.ts";
import { createView } from "../domain/key-view.ts";
import { jsonBody } from "../http/json-body.ts";
import { parseBody } from "../http/validate.ts";
import { accountOf } from "./auth_middleware.ts";
import { keySettingsBody, toKeySettings } from "./key_fields.ts";

// POST /v1/auth/keys: every field optional, defaults of spec 2.1. 201 with the create
// shape (raw_key, exactly once). 403 at the plan limit, 409 for an active name.

export const createKeyRequest = keySettingsBody;

export function register(app: Express, ctx: AppContext): void {
  app.post("/v1/auth/keys", ctx.requireAccount, jsonBody, async (req: Request, res: Response) => {
    const body = parseBody(createKeyRequest, req.body);
    const issued = await ctx.services.keys.create(accountOf(req).id, toKeySettings(body));
    res.status(201).json(createView(issued.record, issued.rawKey));
  });
}
