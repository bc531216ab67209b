import { expect } from "chai";
import { type CompressionSettings, compressRequest, forgetRemembered } from "../src/index.ts";

// A session's next request is answered from the results of its last one (the trail) as
// far as they are resent unchanged: what it gives must be what a process that never saw
// the session gives.

const settings: CompressionSettings = {
  intensity: "full",
  auto_compress_input: false,
  smart_detect_enabled: false,
  context_compress: true,
  context_compress_level: "standard",
};

const log = (lines: number, tag: string) =>
  Array.from(
    { length: lines },
    (_, i) => `${tag} step ${String(i).padStart(5, "0")}: compiling module_${i}.ts ... ok`,
  ).join("\n");

/** Results with repeats (a repeated command, an overlapping log) and long ones, so compression changes some. */
const RESULTS = [
  log(400, "build"),
  "ok",
  log(400, "build"),
  log(300, "test"),
  "done",
  log(600, "build"),
  log(50, "lint"),
];

/** OpenAI chat: request `n` holds the first `n` tool calls and their results. */
function request(n: number, results = RESULTS) {
  const messages: Record<string, unknown>[] = [{ role: "user", content: "Fix the build." }];
  for (let i = 0; i < n; i++) {
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [
        { id: `call_${i}`, type: "function", function: { name: "bash", arguments: `{"command":"run ${i % 3}"}` } },
      ],
    });
    messages.push({ role: "tool", tool_call_id: `call_${i}`, content: results[i] });
  }
  return { model: "gpt-4o", messages };
}

/** The request compressed by a process that has seen nothing before it. */
function cold(body: Record<string, unknown>) {
  forgetRemembered();
  return JSON.stringify(compressRequest("openai", structuredClone(body), settings));
}

describe("context compression: a session continued from its last request", () => {
  afterEach(() => forgetRemembered());

  it("gives every turn what a cold start gives, and changes some results", () => {
    const colds = RESULTS.map((_, i) => cold(request(i + 1)));
    forgetRemembered();
    const warm = RESULTS.map((_, i) => JSON.stringify(compressRequest("openai", request(i + 1), settings)));
    expect(warm).to.deep.equal(colds);
    expect(warm.at(-1)).to.include("[terse:");
  });

  it("starts over where a resent result differs from the last request's (an edited history)", () => {
    forgetRemembered();
    for (let i = 1; i <= 4; i++) compressRequest("openai", request(i), settings);
    const edited = RESULTS.map((r, i) => (i === 2 ? log(400, "rebuilt") : r));
    const next = request(6, edited);
    const expected = cold(next);
    forgetRemembered();
    for (let i = 1; i <= 4; i++) compressRequest("openai", request(i), settings);
    expect(JSON.stringify(compressRequest("openai", next, settings))).to.equal(expected);
  });
});
