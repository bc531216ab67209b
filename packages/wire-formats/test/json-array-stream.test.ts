import { expect } from "chai";
import { gemini } from "../src/gemini/index.ts";
import { JsonArrayStream } from "../src/gemini/json-array-stream.ts";
import { feed as feedFilter } from "./stream-filter-kit.ts";

// A native Gemini stream call that did not ask for SSE gets Gemini's other stream form,
// one JSON array of the chunks: terse asks the upstream for SSE all the same (its usage
// tap and recall read events) and rebuilds the array from the events it relays.

const chunk = (text: string, finish?: string) => ({
  candidates: [{ content: { role: "model", parts: [{ text }] }, ...(finish ? { finishReason: finish } : {}) }],
  usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2 },
});
const CHUNKS = [chunk("Hel"), chunk("lo, "), chunk("world.", "STOP")];
const event = (data: unknown, br = "\n") => `data: ${JSON.stringify(data)}${br}${br}`;

const feed = (stream: string, size: number) => feedFilter(new JsonArrayStream(), stream, size);

describe("Gemini's JSON-array stream, rebuilt from SSE", () => {
  const sse = CHUNKS.map((c) => event(c)).join("");

  for (const size of [1, 7, 64, sse.length]) {
    it(`writes the chunks as one JSON array, fed ${size} characters at a time`, () => {
      expect(JSON.parse(feed(sse, size).out)).to.deep.equal(CHUNKS);
    });
  }

  it("writes each chunk once its event is whole, not at the stream's end", () => {
    const filter = new JsonArrayStream();
    const first = event(CHUNKS[0]);
    expect(filter.push(first.slice(0, -1))).to.equal("");
    const written = filter.push(first.slice(-1));
    expect(written.startsWith("[")).to.equal(true);
    expect(JSON.parse(`${written}]`)).to.deep.equal([CHUNKS[0]]);
    expect(filter.push(event(CHUNKS[1]))).to.equal(`\r\n,${JSON.stringify(CHUNKS[1])}`);
    expect(filter.flush()).to.equal("\r\n]");
  });

  it("reads CRLF framing, and leaves comments and blank keep-alives out", () => {
    const stream = `: keep-alive\r\n\r\n\n${CHUNKS.map((c) => event(c, "\r\n")).join("\n")}`;
    expect(JSON.parse(feed(stream, 5).out)).to.deep.equal(CHUNKS);
  });

  it("ends an array whose last event came without its blank line, and writes [] for a stream of none", () => {
    expect(JSON.parse(feed(`${event(CHUNKS[0])}data: ${JSON.stringify(CHUNKS[1])}`, 9).out)).to.deep.equal(
      CHUNKS.slice(0, 2),
    );
    expect(feed("", 1).out).to.equal("[]");
  });

  it("says it writes JSON", () => {
    expect(new JsonArrayStream().contentType).to.equal("application/json; charset=UTF-8");
  });
});

describe("Gemini adapter: which stream calls get the JSON array", () => {
  const op = (path: string) => {
    const found = gemini.route(path, {});
    if (!found) throw new Error(`no route: ${path}`);
    return found;
  };
  const upstreamOf = (path: string, query: string, body: Record<string, unknown> = { contents: [] }) =>
    gemini.upstream({
      base: "http://upstream",
      op: op(path),
      body,
      providerKey: "pk",
      model: "gemini-2.5-flash",
      query,
      callerHeaders: {},
    });
  const STREAM = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";

  for (const query of ["", "?alt=json", "?key=svc"]) {
    it(`${STREAM}${query}: SSE asked of the upstream, the array for the caller`, () => {
      const up = upstreamOf(STREAM, query);
      expect(new URL(up.url).searchParams.get("alt")).to.equal("sse");
      expect(up.streamFilter?.()).to.be.instanceOf(JsonArrayStream);
    });
  }

  for (const query of ["?alt=sse", "?alt=SSE&key=svc"]) {
    it(`${STREAM}${query}: SSE for both, nothing rebuilt`, () => {
      const up = upstreamOf(STREAM, query);
      expect(new URL(up.url).searchParams.get("alt")).to.equal("sse");
      expect(up.streamFilter).to.equal(undefined);
    });
  }

  it("terse's own /v1/generateContent with stream: true streams SSE, as DESIGN.md gives it", () => {
    const up = upstreamOf("/v1/generateContent", "", { model: "gemini-2.5-flash", stream: true, contents: [] });
    expect(up.url).to.match(/:streamGenerateContent\?alt=sse&key=pk$/);
    expect(up.streamFilter).to.equal(undefined);
  });

  it("a call that does not stream gets no filter", () => {
    expect(upstreamOf("/v1beta/models/gemini-2.5-flash:generateContent", "").streamFilter).to.equal(undefined);
  });
});
