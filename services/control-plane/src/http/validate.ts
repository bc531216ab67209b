import { ApiError } from "@terse/errors";
import type { z } from "zod";

// zod failures become one 400 that names the field and says why (DESIGN.md section 3).

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError("invalid_request", { message: "Request body must be a JSON object" });
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue) throw new ApiError("invalid_request");
  if (issue.code === "unrecognized_keys") {
    const field = issue.keys[0] ?? "";
    throw new ApiError("invalid_request", { message: `Unknown field: ${field}`, param: field });
  }
  const field = issue.path.join(".");
  throw new ApiError("invalid_request", { message: `${field} ${issue.message}`, param: field });
}
