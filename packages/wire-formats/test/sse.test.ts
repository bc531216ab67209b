import { seededRandom } from "@terse/testkit";
import { expect } from "chai";
import { SseSplitter } from "../src/sse.ts";

// Events come whole out of any pieces, with their data lines joined and parsed: LF or
// CRLF framing, `data:` with or without its space, comments, several data lines.

const events: [string, unknown][] = [
  [`data: {"a":1}\n\n`, { a: 1 }],
  [`data:{"b":2}\r\n\r\n`, { b: 2 }],
  [`: a comment\n\n`, undefined],
  [`event: message\ndata: {"c":\ndata: 3}\n\n`, { c: 3 }],
  [`id: 7\r\ndata: {"d":\r\ndata:"x"}\r\n\r\n`, { d: "x" }],
  [`data: not json\n\n`, undefined],
  [`data:\n\n`, undefined],
  [`data: [DONE]\n\n`, undefined],
];

describe("SseSplitter", () => {
  it("gives each event whole, with its data parsed, however the stream is cut", () => {
    const stream = events.map(([raw]) => raw).join("");
    const rnd = seededRandom(5);
    for (let round = 0; round < 50; round++) {
      const seen: [string, unknown][] = [];
      const splitter = new SseSplitter((raw, data) => seen.push([raw, data]));
      for (let at = 0; at < stream.length; ) {
        const size = 1 + Math.floor(rnd() * 12);
        splitter.push(stream.slice(at, at + size));
        at += size;
      }
      splitter.flush();
      expect(seen, `round ${round}`).to.deep.equal(events);
    }
  });

  it("an unterminated last event is given at the end", () => {
    const seen: unknown[] = [];
    const splitter = new SseSplitter((_raw, data) => seen.push(data));
    splitter.push(`data: {"a":1}\n\ndata: {"b":2}`);
    expect(seen).to.deep.equal([{ a: 1 }]);
    splitter.flush();
    expect(seen).to.deep.equal([{ a: 1 }, { b: 2 }]);
  });
});
