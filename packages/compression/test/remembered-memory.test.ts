import { expect } from "chai";
import { contextWorkHeld } from "../src/context/compress-context.ts";
import { type CompressionSettings, compressRequest, forgetRemembered, rememberedChars } from "../src/index.ts";

// What the library remembers between requests (compressed forms, each session's state and
// last request, token counts) lives as long as the data plane's process: each store is
// bounded by characters as well as by count, so no traffic makes it hold gigabytes.

const settings: CompressionSettings = {
  intensity: "full",
  auto_compress_input: false,
  smart_detect_enabled: false,
  context_compress: true,
  // Results under 16,000 characters stay whole at this level: each one is remembered as the session shows it.
  context_compress_level: "conservative",
};

/** A result of its session's own lines (no two sessions share one), of about `chars` characters. */
function result(session: number, n: number, chars: number): string {
  const lines: string[] = [];
  for (let i = 0, size = 0; size < chars; i++) {
    const line = `s${session} r${n} line ${i}: checked src/pkg_${session}/module_${n}_${i}.py in ${i * 7} ms`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n");
}

/** One OpenAI chat request of a session: a long user message and `results` tool results. */
function sessionRequest(session: number, results: number) {
  const messages: Record<string, unknown>[] = [
    { role: "user", content: `Session ${session}: ${"explain the build failure in detail. ".repeat(10_000)}` },
  ];
  for (let n = 0; n < results; n++) {
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [
        { id: `call_${n}`, type: "function", function: { name: "bash", arguments: `{"command":"run ${n}"}` } },
      ],
    });
    messages.push({ role: "tool", tool_call_id: `call_${n}`, content: result(session, n, 15_000) });
  }
  return { model: "gpt-4o", messages };
}

describe("what the library remembers between requests", () => {
  afterEach(() => forgetRemembered());

  it("stays within its bounds under many large sessions, whatever part of a request is large", () => {
    forgetRemembered();
    // 40 sessions of 1.4 million characters each (70 results of 15,000 and a 370,000-character
    // message): unbounded, the states would hold 42 million characters and the trails 56 million.
    for (let s = 0; s < 40; s++) compressRequest("openai", sessionRequest(s, 70), settings);
    const held = contextWorkHeld();
    expect(held.states).to.be.within(16_000_000, 32_000_000);
    expect(held.trails).to.be.within(16_000_000, 32_000_000);
    expect(rememberedChars()).to.be.at.most(132_000_000);
    forgetRemembered();
    expect(rememberedChars()).to.equal(0);
  });

  it("keeps a session's state and trail when it fits, so its next request is answered from them", () => {
    forgetRemembered();
    compressRequest("openai", sessionRequest(1, 3), settings);
    const held = contextWorkHeld();
    expect(held.states).to.be.within(45_000, 50_000);
    // The trail counts every text of the request: the message, the calls, the results.
    expect(held.trails).to.be.above(held.states + 370_000);
  });
});
