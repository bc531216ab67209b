import { expect } from "chai";
import { crc32 } from "node:zlib";
import { generateRawKey, hashKey, isWellFormedKey, keyPrefixOf, RAW_KEY_LENGTH } from "../src/index.ts";

describe("key format v1", () => {
  it("generates 58-character svc_live_ keys of base62 that pass their own checksum", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const raw = generateRawKey();
      expect(raw).to.match(/^svc_live_[0-9A-Za-z]{49}$/);
      expect(raw).to.have.length(RAW_KEY_LENGTH);
      expect(isWellFormedKey(raw)).to.equal(true);
      seen.add(raw);
    }
    expect(seen.size).to.equal(2000);
  });

  it("carries the CRC32 of the 43 secret characters as 6 base62 characters", () => {
    const raw = generateRawKey();
    const secret = raw.slice(9, 52);
    const checksum = raw.slice(52);
    expect(Number.parseInt(decodeBase62(checksum).toString(), 10)).to.equal(crc32(secret));
  });

  it("rejects wrong prefix, length, alphabet and every single-character typo", () => {
    const raw = generateRawKey();
    expect(isWellFormedKey(raw.replace("svc_live_", "svc_test_"))).to.equal(false);
    expect(isWellFormedKey(raw.slice(0, -1))).to.equal(false);
    expect(isWellFormedKey(`${raw}0`)).to.equal(false);
    expect(isWellFormedKey(`${raw.slice(0, 20)}-${raw.slice(21)}`)).to.equal(false);
    expect(isWellFormedKey("")).to.equal(false);
    for (let i = 9; i < raw.length; i++) {
      const ch = raw[i] === "a" ? "b" : "a";
      expect(isWellFormedKey(raw.slice(0, i) + ch + raw.slice(i + 1)), `typo at ${i}`).to.equal(false);
    }
  });

  it("hashes to SHA-256 hex and exposes 17 characters as the prefix", () => {
    const raw = generateRawKey();
    expect(hashKey(raw)).to.match(/^[0-9a-f]{64}$/);
    expect(hashKey(raw)).to.equal(hashKey(raw));
    expect(keyPrefixOf(raw)).to.equal(raw.slice(0, 17));
  });
});

function decodeBase62(s: string): bigint {
  const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  let n = 0n;
  for (const c of s) n = n * 62n + BigInt(alphabet.indexOf(c));
  return n;
}
