import { readFileSync } from "node:fs";
import { type PriceTable, SHIPPED_PRICES, withOverrides } from "@terse/prices";
import { z } from "zod";

// TERSE_PRICES: the operator's prices laid over the shipped table (@terse/prices), as
// JSON in the variable itself or as the path of a JSON file (a value that does not start
// with `{`). Either way: {"model-id": {"input", "cached_input", "cache_write", "output"}}
// in USD per million tokens, every field given (no price is guessed from another), or
// null to make a shipped model unpriced.

const usdPerMillion = z.number().finite().nonnegative().max(100_000);

const modelPrice = z
  .object({ input: usdPerMillion, cached_input: usdPerMillion, cache_write: usdPerMillion, output: usdPerMillion })
  .strict();

const overrides = z.record(z.string().min(1).max(256), modelPrice.nullable());

/** The value's JSON and where it came from, or an issue. */
function readSource(raw: string): { text: string; source: string } | { error: string } {
  if (raw.trimStart().startsWith("{")) return { text: raw, source: "TERSE_PRICES" };
  try {
    return { text: readFileSync(raw.trim(), "utf8"), source: `TERSE_PRICES file ${raw.trim()}` };
  } catch (err) {
    return { error: `cannot read the prices file ${raw.trim()}: ${(err as NodeJS.ErrnoException).code ?? "error"}` };
  }
}

export const pricesFromEnv = z
  .string()
  .optional()
  .transform((raw, ctx): PriceTable => {
    if (raw === undefined || raw.trim() === "") return SHIPPED_PRICES;
    const read = readSource(raw);
    if ("error" in read) {
      ctx.addIssue({ code: "custom", message: read.error });
      return z.NEVER;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(read.text);
    } catch {
      ctx.addIssue({ code: "custom", message: `${read.source}: expected JSON` });
      return z.NEVER;
    }
    const result = overrides.safeParse(parsed);
    if (!result.success) {
      const issue = result.error.issues[0];
      ctx.addIssue({ code: "custom", message: `${issue?.path.join(".")}: ${issue?.message}` });
      return z.NEVER;
    }
    return withOverrides(SHIPPED_PRICES, result.data, read.source);
  });
