import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { priceOf, SHIPPED_PRICES } from "@terse/prices";
import { expect } from "chai";
import { controlPlaneEnv, loadConfig } from "../src/index.ts";

// TERSE_PRICES: JSON in the variable or a file's path; every entry complete (no price is
// guessed), null to unprice a model; anything malformed stops the service at start with
// the variable named.

const minimal = { JWT_SECRET: "x".repeat(32), INTERNAL_GRPC_TOKEN: "t".repeat(16) };
const price = { input: 1, cached_input: 0.1, cache_write: 1.25, output: 4 };

describe("TERSE_PRICES", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "terse-prices-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("is the shipped table when unset or empty", () => {
    expect(loadConfig(controlPlaneEnv, minimal).TERSE_PRICES).to.equal(SHIPPED_PRICES);
    expect(loadConfig(controlPlaneEnv, { ...minimal, TERSE_PRICES: " " }).TERSE_PRICES).to.equal(SHIPPED_PRICES);
  });

  it("takes JSON in the variable: a new model, a replaced one and an unpriced one", () => {
    const c = loadConfig(controlPlaneEnv, {
      ...minimal,
      TERSE_PRICES: JSON.stringify({ "acme-large": price, "gpt-4o": price, "gpt-5": null }),
    });
    expect(priceOf(c.TERSE_PRICES, "acme-large")).to.deep.equal(price);
    expect(priceOf(c.TERSE_PRICES, "gpt-4o")).to.deep.equal(price);
    expect(priceOf(c.TERSE_PRICES, "gpt-5")).to.equal(undefined);
    expect(priceOf(c.TERSE_PRICES, "claude-sonnet-4-5")).to.deep.equal(priceOf(SHIPPED_PRICES, "claude-sonnet-4-5"));
  });

  it("takes the path of a JSON file", () => {
    const file = join(dir, "prices.json");
    writeFileSync(file, JSON.stringify({ "acme-small": price }));
    const c = loadConfig(controlPlaneEnv, { ...minimal, TERSE_PRICES: file });
    expect(priceOf(c.TERSE_PRICES, "acme-small")).to.deep.equal(price);
    expect(c.TERSE_PRICES.source).to.include(file);
  });

  it("refuses what it cannot trust, naming the variable and the field", () => {
    const bad: [string, RegExp][] = [
      ["{", /TERSE_PRICES: TERSE_PRICES: expected JSON/],
      [join(dir, "missing.json"), /TERSE_PRICES: cannot read the prices file .*ENOENT/],
      [JSON.stringify({ m: { input: 1, output: 2 } }), /TERSE_PRICES: m.cached_input/],
      [JSON.stringify({ m: { ...price, input: -1 } }), /TERSE_PRICES: m.input/],
      [JSON.stringify({ m: { ...price, currency: "EUR" } }), /TERSE_PRICES: m/],
      [JSON.stringify({ m: { ...price, output: "4" } }), /TERSE_PRICES: m.output/],
      ["[]", /TERSE_PRICES/],
    ];
    for (const [value, message] of bad) {
      expect(() => loadConfig(controlPlaneEnv, { ...minimal, TERSE_PRICES: value }), value).to.throw(message);
    }
  });
});
