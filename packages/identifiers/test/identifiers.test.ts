import { expect } from "chai";
import { nameFault, textFault } from "../src/index.ts";

describe("identifiers", () => {
  it("accepts ordinary names, model names and non-Latin text", () => {
    for (const s of [
      "main",
      "gpt-4o-mini",
      "claude-sonnet-4-5@20250929",
      "models/gemini-2.5-pro",
      "clé",
      "鍵 1",
      "🔑",
    ]) {
      expect(nameFault(s), s).to.equal(undefined);
    }
  });

  it("refuses control characters, NUL and line separators in names", () => {
    for (const s of ["gpt\u0000x", "a\nb", "a\rb", "tab\there", "del\u007f", "c1\u0085", "ls\u2028"]) {
      expect(nameFault(s), JSON.stringify(s)).to.equal("must not contain control characters");
    }
  });

  it("refuses invisible and direction-changing characters in names", () => {
    for (const s of ["main\u200B", "\u202Eevil", "a\u2066b", "\uFEFFbom", "soft\u00ADhyphen", "zw\u200Dj"]) {
      expect(nameFault(s), JSON.stringify(s)).to.equal("must not contain invisible or direction-changing characters");
    }
  });

  it("refuses what Unicode says to render as nothing: selectors, joiners, fillers, invisible vowels", () => {
    for (const s of ["main\uFE0F", "main\u034F", "main\u17B4", "\u3164", "a\u115Fb", "x\uFFA0", "e\u{E0100}"]) {
      expect(nameFault(s), JSON.stringify(s)).to.equal("must not contain invisible or direction-changing characters");
    }
  });

  it("refuses a name with nothing that shows, and one that begins with a combining mark", () => {
    for (const s of ["\u2800", " \u2800 ", "\u0301", "\u0301\u0302"]) {
      expect(nameFault(s), JSON.stringify(s)).to.equal("must contain a visible character");
    }
    expect(nameFault("\u0301main")).to.equal("must not begin with a combining mark");
    expect(nameFault("cafe\u0301")).to.equal(undefined);
  });

  it("refuses lone surrogates everywhere, and keeps paired ones", () => {
    expect(nameFault("a\ud800b")).to.equal("is not valid Unicode");
    expect(textFault("a\udc00")).to.equal("is not valid Unicode");
    expect(textFault("\ud83d\udd11")).to.equal(undefined);
  });

  it("lets free text carry line breaks but never NUL", () => {
    expect(textFault("line one\nline two\t")).to.equal(undefined);
    expect(textFault("a\u0000b")).to.equal("must not contain NUL characters");
  });
});
