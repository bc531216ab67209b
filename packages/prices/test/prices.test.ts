import { expect } from "chai";
import { PRICE_FIELDS, priceOf, SHIPPED_PRICES, withOverrides } from "../src/index.ts";

// The shipped table is data a person checks: well formed, dated, and looked up only by
// the documented rules (exact id, or one dated snapshot suffix removed); anything else
// is unpriced rather than priced like a model whose name it resembles.

describe("price table", () => {
  it("ships a dated price for the common models of each provider, every field a sane USD per million", () => {
    expect(SHIPPED_PRICES.as_of).to.match(/^\d{4}-\d{2}-\d{2}$/);
    for (const id of ["gpt-5", "gpt-4o-mini", "gpt-4.1", "claude-sonnet-4-5", "claude-haiku-4-5", "gemini-2.5-pro"]) {
      expect(priceOf(SHIPPED_PRICES, id), id).to.not.equal(undefined);
    }
    for (const [id, price] of Object.entries(SHIPPED_PRICES.models)) {
      expect(id, "ids are stored lower case").to.equal(id.toLowerCase());
      expect(Object.keys(price).sort(), id).to.deep.equal([...PRICE_FIELDS].sort());
      for (const field of PRICE_FIELDS) expect(price[field], `${id}.${field}`).to.be.within(0, 1000);
      // A cache read never costs more than a fresh token, nor an output token less than an input one.
      expect(price.cached_input, id).to.be.at.most(price.input);
      expect(price.output, id).to.be.at.least(price.input);
    }
    // Anthropic's 5-minute cache writes are 1.25 times input, reads a tenth.
    expect(priceOf(SHIPPED_PRICES, "claude-sonnet-4-5")).to.deep.equal({
      input: 3,
      cached_input: 0.3,
      cache_write: 3.75,
      output: 15,
    });
  });

  it("matches ids exactly or without one dated snapshot suffix, and leaves everything else unpriced", () => {
    const sonnet = priceOf(SHIPPED_PRICES, "claude-sonnet-4-5");
    expect(priceOf(SHIPPED_PRICES, "claude-sonnet-4-5-20250929")).to.equal(sonnet);
    expect(priceOf(SHIPPED_PRICES, "Claude-Sonnet-4-5")).to.equal(sonnet);
    expect(priceOf(SHIPPED_PRICES, "gpt-4o-2024-08-06")).to.equal(priceOf(SHIPPED_PRICES, "gpt-4o"));
    expect(priceOf(SHIPPED_PRICES, "gemini-2.0-flash-001")).to.equal(priceOf(SHIPPED_PRICES, "gemini-2.0-flash"));
    // A snapshot the table names itself has its own price.
    expect(priceOf(SHIPPED_PRICES, "gpt-4o-2024-05-13")?.input).to.equal(5);
    for (const unknown of [
      "gpt-4o-mini-tts",
      "ft:gpt-4o-mini:acme::abc",
      "claude-3-5-sonnet-latest",
      "gpt-test",
      "",
      "gpt-4o-x-2024-08-06",
    ]) {
      expect(priceOf(SHIPPED_PRICES, unknown), unknown).to.equal(undefined);
    }
  });

  it("lays the operator's entries over the table: a new model priced, a shipped one replaced or removed", () => {
    const mine = { input: 1, cached_input: 0.1, cache_write: 1.25, output: 2 };
    const table = withOverrides(SHIPPED_PRICES, { "My-Model": mine, "gpt-4o": mine, "gpt-5": null }, "test");
    expect(priceOf(table, "my-model")).to.deep.equal(mine);
    expect(priceOf(table, "gpt-4o-2024-08-06")).to.deep.equal(mine);
    expect(priceOf(table, "gpt-5")).to.equal(undefined);
    expect(table.source).to.include("Operator overrides: test");
    // The shipped table itself is untouched.
    expect(priceOf(SHIPPED_PRICES, "gpt-5")).to.not.equal(undefined);
    expect(withOverrides(SHIPPED_PRICES, {}, "none")).to.equal(SHIPPED_PRICES);
  });
});
