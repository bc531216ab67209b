import { expect } from "chai";
import { Lru, TextLru, textKey } from "../src/lru.ts";
import { detectIntensity } from "../src/smart-detect.ts";

// TextLru looks a text up by a key read from a few of its characters (lru.ts): texts that
// share the key must never get each other's values.

describe("TextLru", () => {
  // 640 characters: the key reads every 20th; the two differ only between the 1st and the 20th.
  const a = "ab".repeat(320);
  const b = `${a.slice(0, 1)}1 2 3 4 5 6 7 8 9 ${a.slice(19)}`;

  it("texts that share a key keep their own values, side by side, and a parsed copy of a text finds its value", () => {
    expect(textKey(a)).to.equal(textKey(b));
    const lru = new TextLru<string>(10, 1_000_000);
    lru.set(a, "A");
    expect(lru.get(b)).to.equal(undefined);
    lru.set(b, "B");
    expect(lru.get(b)).to.equal("B");
    // Kept beside b: two texts of one session that share a key no longer push each other out.
    expect(lru.get(a)).to.equal("A");
    lru.set(a, "A2");
    expect(lru.get(JSON.parse(JSON.stringify(a)))).to.equal("A2");
    expect(lru.get(b)).to.equal("B");
  });

  it("past the texts one key keeps side by side, all are kept by text, and none gets another's value", () => {
    // Templated texts that differ in a character the key does not read, as an agent's
    // "found 2 actions." / "found 3 actions." do, or the clock in the environment details
    // Cline adds to every message: a session of more turns than a key keeps side by side
    // used to push its oldest out on every request, and count them all again.
    const variant = (i: number) => `${a.slice(0, 1)}${String.fromCharCode(0x4e00 + i)}${a.slice(2)}`;
    const texts = Array.from({ length: 300 }, (_, i) => variant(i));
    for (const t of texts) expect(textKey(t)).to.equal(textKey(a));
    const lru = new TextLru<number>(10, 1_000_000);
    for (const [i, t] of texts.entries()) lru.set(t, i);
    expect(texts.map((t) => lru.get(JSON.parse(JSON.stringify(t))))).to.deep.equal(texts.map((_, i) => i));
    expect(lru.get(a)).to.equal(undefined);
    lru.set(texts[7] as string, -7);
    expect(lru.get(texts[7] as string)).to.equal(-7);
    expect(lru.get(texts[8] as string)).to.equal(8);
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

describe("Lru and TextLru memory", () => {
  const text = (i: number, length: number) => `${i}:`.padEnd(length, String.fromCharCode(97 + (i % 26)));

  it("an Lru holds at most its characters, the oldest going first, and keeps no entry of over a quarter of them", () => {
    const lru = new Lru<string>(1_000, 10_000, (value, key) => key.length + value.length);
    for (let i = 0; i < 100; i++) lru.set(`k${i}`, text(i, 998));
    expect(lru.chars).to.be.at.most(10_000);
    expect(lru.size).to.be.within(9, 10);
    expect(lru.get("k99")).to.equal(text(99, 998));
    expect(lru.get("k0")).to.equal(undefined);
    lru.set("big", text(1, 2_600));
    expect(lru.get("big")).to.equal(undefined);
    expect(lru.get("k99")).to.equal(text(99, 998));
    lru.take("k99");
    lru.clear();
    expect(lru.chars).to.equal(0);
  });

  it("an entry that grows in place pushes out the oldest others, and is dropped itself past a quarter", () => {
    const lru = new Lru<string[]>(1_000, 10_000, (value) => value.join("").length);
    for (let i = 0; i < 9; i++) lru.set(`k${i}`, [text(i, 1_000)]);
    const grown = [text(100, 1_000)];
    lru.set("grown", grown);
    grown.push(text(101, 1_000));
    lru.grew("grown", 1_000);
    expect(lru.chars).to.be.at.most(10_000);
    expect(lru.get("k0")).to.equal(undefined);
    expect(lru.get("grown")).to.equal(grown);
    lru.grew("grown", 1_000);
    expect(lru.get("grown")).to.equal(undefined);
    expect(lru.chars).to.equal(8_000);
  });

  it("a TextLru holds at most its characters, texts and values, across keys and in a key's own map", () => {
    const lru = new TextLru<string>(10_000, 50_000, (value) => value.length);
    // Distinct keys: each text its own.
    for (let i = 0; i < 200; i++) lru.set(text(i, 500), "v".repeat(100));
    expect(lru.chars).to.be.within(40_000, 50_000);
    // One key: texts that differ only where the key does not read, past the side-by-side few.
    const a = "ab".repeat(320);
    const variant = (i: number) => `${a.slice(0, 1)}${String.fromCharCode(0x4e00 + i)}${a.slice(2)}`;
    for (let i = 0; i < 100; i++) lru.set(variant(i), "w".repeat(50));
    expect(lru.chars).to.be.at.most(50_000);
    expect(lru.get(variant(99))).to.equal("w".repeat(50));
    expect(lru.get(text(0, 500))).to.equal(undefined);
  });
});
