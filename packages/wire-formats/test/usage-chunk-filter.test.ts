import { expect } from "chai";
import { UsageChunkFilter } from "../src/openai-chat/usage-chunk-filter.ts";
import { feed as feedFilter } from "./stream-filter-kit.ts";

// The usage-only chunk is dropped and nothing else is held: fed in any pieces, down to
// one character, the filter relays every other byte as soon as its line is whole.

const choice = (text: string) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: text } }] })}\n\n`;
const usageChunk = `data: ${JSON.stringify({ id: "c", choices: [], usage: { prompt_tokens: 9, completion_tokens: 3 } })}\n\n`;
// A choice chunk that happens to carry usage (some servers repeat it) is the caller's.
const choiceWithUsage = `data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta: {} }], usage: { prompt_tokens: 1 } })}\n\n`;

const feed = (stream: string, size: number) => feedFilter(new UsageChunkFilter(), stream, size);

describe("UsageChunkFilter", () => {
  const stream = `${choice("a")}${choice("b")}${choiceWithUsage}${usageChunk}data: [DONE]\n\n`;
  const expected = `${choice("a")}${choice("b")}${choiceWithUsage}data: [DONE]\n\n`;

  for (const size of [1, 2, 7, 64, stream.length]) {
    it(`drops only the usage-only chunk, fed ${size} characters at a time`, () => {
      expect(feed(stream, size).out).to.equal(expected);
    });
  }

  it("relays a line as soon as its line break arrives, without waiting for the blank line", () => {
    const filter = new UsageChunkFilter();
    const line = choice("x").trimEnd();
    expect(filter.push(line)).to.equal("");
    expect(filter.push("\n")).to.equal(`${line}\n`);
    expect(filter.push("\n")).to.equal("\n");
  });

  it("keeps CRLF framing and comments as sent", () => {
    const crlf = `: keep-alive\r\n\r\n${choice("a").replace(/\n/g, "\r\n")}${usageChunk.replace(/\n/g, "\r\n")}`;
    expect(feed(crlf, 5).out).to.equal(`: keep-alive\r\n\r\n${choice("a").replace(/\n/g, "\r\n")}`);
  });

  it("knows the usage chunk however its JSON is spaced, and a chunk's `usage: null` from it", () => {
    const nullUsage = (text: string) =>
      `data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta: { content: text } }], usage: null })}\n\n`;
    const spaced = `data: ${JSON.stringify({ id: "c", choices: [], usage: { prompt_tokens: 9 } }, null, 1).replace(/\n/g, "")}\n\n`;
    expect(spaced).to.include('"choices": []');
    const out = feed(`${nullUsage("a")}${nullUsage("b")}${spaced}data: [DONE]\n\n`, 9).out;
    expect(out).to.equal(`${nullUsage("a")}${nullUsage("b")}data: [DONE]\n\n`);
  });

  it("passes a last line without a line break on at the end", () => {
    expect(feed(`${choice("a")}data: partial`, 3).out).to.equal(`${choice("a")}data: partial`);
  });
});
