import { ApiError } from "@terse/errors";
import type { Express, Request, Response } from "express";
import type { AppContext } from "../context.ts";
import { listView } from "../domain/key-view.ts";
import { jsonBody } from "../http/json-body.ts";
import { parseBody } from "../http/validate.ts";
import { accountOf } from "./auth_middleware.ts";
import { keySettingsBody, toKeySettings } from "./key_fields.ts";

// PATCH /v1/auth/keys/{id}: only the sent settings change (spec 3). 200 with the
// record in the list shape; 409 `Key is revoked`; 400 `raw_key is not editable` for
// any read-only field of the record.

export const READ_ONLY_FIELDS = [
  "raw_key",
  "id",
  "key_prefix",
  "is_active",
  "rate_limit_rpm",
  "created_at",
  "last_used_at",
] as const;

export const updateKeyRequest = keySettingsBody;

function rejectReadOnly(body: unknown): void {
  if (typeof body !== "object" || body === null) return;
  const field = READ_ONLY_FIELDS.find((f) => Object.hasOwn(body, f));
  if (field) throw new ApiError("field_not_editable", { message: `${field} is not editable`, param: field });
}

export function register(app: Express, ctx: AppContext): void {
  app.patch("/v1/auth/keys/:id", ctx.requireAccount, jsonBody, async (req: Request, res: Response) => {
    rejectReadOnly(req.body);
    const body = parseBody(updateKeyRequest, req.body);
    const record = await ctx.services.keys.update(accountOf(req).id, String(req.params.id), toKeySettings(body));
    res.json(listView(record));
  });
}
