import { nameFault } from "@terse/identifiers";
import { CONTEXT_LEVELS, INTENSITIES } from "@terse/keys";
import { z } from "zod";
import { type KeySettings, storeNamesOf } from "../infra/key-store.ts";

// The settable fields of a key (spec 2.1 and 4.1), shared by create and PATCH. Each
// message completes "<field> ..." in the 400 that names the field.

export const MAX_NAME_LENGTH = 64;

export const keySettingFields = {
  name: z
    .string({ error: "must be a string" })
    // Stored as shown (the answer carries it): composed (NFC, so `cafe\u0301` is `café`)
    // and without surrounding spaces, so two names that look the same are the same name.
    .transform((s) => s.normalize("NFC").trim())
    .pipe(
      z
        .string()
        .max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`)
        .refine((s) => s.length > 0, "must not be empty")
        // Names show up in lists and logs and must be told apart: no line breaks, no
        // invisible or direction-changing characters (`main\u200B` beside `main`).
        .superRefine((s, ctx) => {
          const fault = nameFault(s);
          if (fault) ctx.addIssue({ code: "custom", message: fault });
        }),
    ),
  intensity: z.enum(INTENSITIES, { error: `must be one of ${INTENSITIES.join(", ")}` }),
  auto_compress_input: z.boolean({ error: "must be a boolean" }),
  smart_detect_enabled: z.boolean({ error: "must be a boolean" }),
  context_compress: z.boolean({ error: "must be a boolean" }),
  context_compress_level: z.enum(CONTEXT_LEVELS, { error: `must be one of ${CONTEXT_LEVELS.join(", ")}` }),
};

export const keySettingsBody = z.strictObject(keySettingFields).partial();
export type KeySettingsBody = z.infer<typeof keySettingsBody>;

/** API field names -> the store's. */
export function toKeySettings(body: KeySettingsBody): Partial<KeySettings> {
  return storeNamesOf(body);
}

/** Rotate and DELETE take no request body; an empty JSON object is accepted too. */
export const emptyBody = z.strictObject({});
