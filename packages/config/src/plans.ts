import { z } from "zod";

export const PLAN_NAMES = ["free", "pro", "team", "enterprise"] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface PlanLimits {
  max_active_keys: number;
  /** Given to a new key of this plan at creation. */
  rate_limit_rpm: number;
  /** Input + output tokens per calendar month (UTC). */
  monthly_tokens: number;
}

export type Plans = Record<PlanName, PlanLimits>;

/** DESIGN.md section 3. Overridden per field by TERSE_PLANS. */
export const DEFAULT_PLANS: Plans = {
  free: { max_active_keys: 2, rate_limit_rpm: 60, monthly_tokens: 1_000_000 },
  pro: { max_active_keys: 10, rate_limit_rpm: 600, monthly_tokens: 20_000_000 },
  team: { max_active_keys: 50, rate_limit_rpm: 3_000, monthly_tokens: 100_000_000 },
  enterprise: { max_active_keys: 200, rate_limit_rpm: 10_000, monthly_tokens: 1_000_000_000 },
};

const limitsOverride = z
  .object({
    max_active_keys: z.number().int().positive(),
    rate_limit_rpm: z.number().int().positive(),
    monthly_tokens: z.number().int().positive(),
  })
  .partial()
  .strict();

const plansOverride = z.object(Object.fromEntries(PLAN_NAMES.map((p) => [p, limitsOverride.optional()]))).strict();

/** The TERSE_PLANS variable: JSON merged field by field over the defaults. */
export const plansFromEnv = z
  .string()
  .optional()
  .transform((raw, ctx): Plans => {
    if (raw === undefined || raw.trim() === "") return DEFAULT_PLANS;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      ctx.addIssue({ code: "custom", message: "expected JSON" });
      return z.NEVER;
    }
    const result = plansOverride.safeParse(parsed);
    if (!result.success) {
      const issue = result.error.issues[0];
      ctx.addIssue({ code: "custom", message: `${issue?.path.join(".")}: ${issue?.message}` });
      return z.NEVER;
    }
    const merged = structuredClone(DEFAULT_PLANS);
    for (const name of PLAN_NAMES) Object.assign(merged[name], result.data[name] ?? {});
    return merged;
  });
