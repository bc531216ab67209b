import { expect } from "chai";
import { TextLru, textKey } from "../src/lru.ts";
import { detectIntensity } from "../src/smart-detect.ts";

// TextLru looks a text up by a key read from a few of its characters (lru.ts): texts that
// share the key must never get each other's values.

describe("TextLru", () => {
  // 640 characters: the key reads every 20th; the two differ only between the 1st and the 20th.
  const a = "ab".repeat(320);
  const b = `${a.slice(0, 1)}1 2 3 4 5 6 7 8 9 ${a.slice(19)}`;

  it("texts that share a key keep their own values, and a parsed copy of a text finds its value", () => {
    expect(textKey(a)).to.equal(textKey(b));
    const lru = new TextLru<string>(10);
    lru.set(a, "A");
    expect(lru.get(b)).to.equal(undefined);
    lru.set(b, "B");
    expect(lru.get(b)).to.equal("B");
    expect(lru.get(a)).to.equal(undefined); // replaced: one text per key
    lru.set(a, "A");
    expect(lru.get(JSON.parse(JSON.stringify(a)))).to.equal("A");
  });

  it("smart detect remembers by text, and a text that shares a key is read for itself", () => {
    const plain = `${"x".repeat(40)}${" word".repeat(120)}`;
    const exact = `${plain.slice(0, 1)} exactly ${plain.slice(10)}`;
    expect(exact.length).to.equal(plain.length);
    expect(textKey(exact)).to.equal(textKey(plain));
    for (let round = 0; round < 2; round++) {
      expect(detectIntensity(plain, "full").intensity).to.equal("full");
      expect(detectIntensity(exact, "full").reason).to.equal("smart detect: asks for exactness or detail");
    }
  });
});
