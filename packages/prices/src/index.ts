import shipped from "./prices.json" with { type: "json" };

// What each model costs per token, as data (prices.json): the providers' public list
// prices on the date the file says, which the operator checks and may override
// (TERSE_PRICES / TERSE_PRICES_FILE, validated in @terse/config). A model the table
// does not know is unpriced: terse never guesses a price.

/** USD per million tokens. */
export interface ModelPrice {
  /** An input token billed at the full rate (neither read from nor written to the cache). */
  input: number;
  /** An input token the provider read from its prompt cache. */
  cached_input: number;
  /** An input token the provider wrote to its prompt cache (Anthropic bills these higher; others as input). */
  cache_write: number;
  output: number;
}

export const PRICE_FIELDS = ["input", "cached_input", "cache_write", "output"] as const;

export interface PriceTable {
  /** The day the prices were read off the providers' pages (YYYY-MM-DD); "operator" parts say so in `source`. */
  as_of: string;
  source: string;
  /** Model id -> price, ids as the providers spell them (lower case). */
  models: Readonly<Record<string, ModelPrice>>;
}

/** The table shipped with terse. */
export const SHIPPED_PRICES: PriceTable = shipped;

/**
 * A dated snapshot's suffix: OpenAI's `-2024-08-06`, Anthropic's `-20250929`, Gemini's
 * `-001` / `-002` versions and `-preview-MM-YYYY` / `-preview-MM-DD` releases. A snapshot is billed
 * as the model it snapshots unless the table names the snapshot itself (gpt-4o-2024-05-13).
 */
const DATED_SUFFIX = /-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{3}|preview-\d{2}-\d{2,4})$/;

/**
 * The price of `model`, or undefined: unpriced. Matched exactly (case-insensitively),
 * then with one dated suffix removed. Nothing else: `gpt-4o-mini` is never priced as
 * `gpt-4o`, a fine-tune (`ft:...`) or an alias the table lacks (`-latest`) is unpriced.
 */
export function priceOf(table: PriceTable, model: string): ModelPrice | undefined {
  const id = model.toLowerCase();
  const exact = table.models[id];
  if (exact) return exact;
  const undated = id.replace(DATED_SUFFIX, "");
  return undated === id ? undefined : table.models[undated];
}

/**
 * The table with the operator's entries laid over it: an entry replaces the shipped one
 * of its model, `null` removes one (that model is then unpriced).
 */
export function withOverrides(
  base: PriceTable,
  overrides: Record<string, ModelPrice | null>,
  source: string,
): PriceTable {
  const models: Record<string, ModelPrice> = { ...base.models };
  for (const [id, price] of Object.entries(overrides)) {
    if (price === null) delete models[id.toLowerCase()];
    else models[id.toLowerCase()] = price;
  }
  if (Object.keys(overrides).length === 0) return base;
  return { as_of: base.as_of, source: `${base.source} Operator overrides: ${source}.`, models };
}
