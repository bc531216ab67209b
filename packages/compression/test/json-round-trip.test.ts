import { expect } from "chai";
import { roundTrips } from "../src/context/json-round-trip.ts";

// A JSON result is shortened as a parsed value only where writing that value out again
// keeps every number, key and key order the tool wrote (json-round-trip.ts).

describe("JSON round trip", () => {
  const cases: [string, boolean][] = [
    ['{"id": 9007199254740991, "ratio": 0.25, "n": -3, "big": 1e+21, "tiny": 1.5e-7}', true],
    ['{"id": 1172943827349283400}', false], // past 2^53: parsed as 1172943827349283300
    ['{"n": 1e2}', false], // written back as 100
    ['{"n": 1.0}', false],
    ['{"n": -0}', false],
    ['{"n": 1E5}', false],
    ['{"a": 1, "a": 2}', false], // the first value is lost
    ['{"a": 1, "\\u0061": 2}', false], // the same key, escaped
    ['{"1": "a", "2": "b", "10": "c", "name": "d"}', true], // integer keys first and ascending: kept
    ['{"10": "ten", "2": "two"}', false], // reordered to "2", "10"
    ['{"name": "d", "1": "a"}', false], // "1" moves first
    ['{"name": "d", "01": "a", "-1": "b", "4294967295": "c"}', true], // not array indices: stay in place
    ['{"name": "d", "\\u0031": "a"}', false], // "1", escaped
    ['{"__proto__": {"admin": true}}', true], // an own key, kept by the shortener (json-result.ts)
    ['[{"k": [1, "x", {"j": "2"}], "2": 1}, {"1": 0}]', false], // "2" after "k" in the first object
    ['[{"1": [], "k": {}}, {"1": 0, "s": "10 \\" , 2e5"}]', true], // strings are not read as tokens
  ];
  for (const [json, expected] of cases)
    it(`${expected ? "round-trips" : "does not round-trip"}: ${json}`, () => {
      expect(roundTrips(json, 128)).to.equal(expected);
    });

  it("holds only where JSON.stringify gives back the text, for JSON written by JSON.stringify", () => {
    const values = [{ a: [1, 2.5, -7e-9, { "3": null, "1": true, z: "q" }], b: "\u00e9\n" }, [[], {}, 0, 1e21]];
    for (const v of values) expect(roundTrips(JSON.stringify(v), 128)).to.equal(true);
  });

  it("says no past the depth a recursive walk may go", () => {
    const nested = (depth: number) => `${'{"a":['.repeat(depth / 2)}1${"]}".repeat(depth / 2)}`;
    expect(roundTrips(nested(128), 128)).to.equal(true);
    expect(roundTrips(nested(130), 128)).to.equal(false);
    expect(roundTrips(`${"[".repeat(100_000)}${"]".repeat(100_000)}`, 128)).to.equal(false);
  });
});
