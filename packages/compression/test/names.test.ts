import { seededRandom } from "@terse/testkit";
import { expect } from "chai";
import { MIN_NAME, NAME_PATTERN, namesIn, namesOfAll } from "../src/context/names.ts";

// The names of a text are read by a hand-written scanner (names.ts says why); NAME_PATTERN
// is what it must find, so each test holds the scanner to the pattern on texts made to
// sit on its edges: joiners before and after words, hex runs of 6-41 digits, numbers
// against letters, non-ASCII letters, line breaks.

const COMMON_SAMPLE = ["which", "Which", "WHICH", "about", "cannot"];

/** What the pattern finds: its matches of MIN_NAME characters and more, once each, in order, less the common words. */
function byPattern(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.match(NAME_PATTERN) ?? [])
    if (m.length >= MIN_NAME && !["which", "about", "cannot"].includes(m.toLowerCase())) out.add(m);
  return [...out];
}

/** A text of pieces that meet the pattern's edges. */
function edgyText(rnd: () => number, pieces: number): string {
  const parts = [
    () => "abcdef0123456789".slice(0, 1 + Math.floor(rnd() * 16)),
    () => "0123456789abcdef0123456789abcdef0123456789".slice(0, 5 + Math.floor(rnd() * 38)),
    () => String(Math.floor(rnd() * 1e6)),
    () => "./:@+-"[Math.floor(rnd() * 6)] as string,
    () => [" ", "\n", "\t", ",", "(", ")", "é", "→", "\u00a0"][Math.floor(rnd() * 9)] as string,
    () => ["src", "lru", "_x", "Foo", "g", "Z9", "tests", "py"][Math.floor(rnd() * 8)] as string,
    () => COMMON_SAMPLE[Math.floor(rnd() * COMMON_SAMPLE.length)] as string,
  ];
  let text = "";
  for (let i = 0; i < pieces; i++) text += (parts[Math.floor(rnd() * parts.length)] as () => string)();
  return text;
}

describe("the names of a text", () => {
  it("are what NAME_PATTERN matches, on texts made of its edge cases", () => {
    const rnd = seededRandom(11);
    for (let i = 0; i < 3_000; i++) {
      const text = edgyText(rnd, 1 + Math.floor(rnd() * 40));
      expect([...namesIn(text)], JSON.stringify(text)).to.deep.equal(byPattern(text));
    }
  });

  it("are the same read line by line in a long text that repeats its lines, and read whole", () => {
    const rnd = seededRandom(5);
    const lines = Array.from({ length: 60 }, () => edgyText(rnd, 12));
    const log = Array.from({ length: 4_000 }, () => lines[Math.floor(rnd() * lines.length)]).join("\n");
    expect(log.length).to.be.above(32_000);
    expect([...namesIn(log)]).to.deep.equal(byPattern(log));
    const listing = Array.from({ length: 3_000 }, (_, i) => `src/pkg_${i}/mod.ts ${edgyText(rnd, 4)}`).join("\n");
    expect([...namesIn(listing)]).to.deep.equal(byPattern(listing));
  });

  it("of several texts are those of the texts joined by line breaks, without joining them", () => {
    const rnd = seededRandom(9);
    for (const count of [3, 400, 5_000]) {
      const texts = Array.from({ length: count }, () => edgyText(rnd, 1 + Math.floor(rnd() * 10)));
      expect([...namesOfAll(texts)]).to.deep.equal([...namesIn(texts.join("\n"))]);
    }
  });

  it("leave out common words in any case, and keep a name that only starts like one", () => {
    expect([...namesIn("Which WHICH which whichever About src/about.ts")]).to.deep.equal(["whichever", "src/about.ts"]);
  });
});
