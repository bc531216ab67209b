import { expect } from "chai";
import { trailResent } from "../src/context/trail.ts";
import { type CompressionSettings, compressRequest, forgetRemembered, type Provider } from "../src/index.ts";

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

  describe("continued from the last request's items", () => {
    /** A text-protocol turn: the agent's fenced command, and its observation as the next user message. */
    const turns = RESULTS.map((r, i) => ({
      action: `THOUGHT: step ${i}.\n\n\`\`\`bash\nrun ${i % 3}\n\`\`\``,
      observation: `<returncode>0</returncode>\n<output>\n${r}\n</output>`,
    }));
    type Turn = (typeof turns)[number];

    /** Request `n` of a text-protocol session in `format`: the task, then n actions and their observations. */
    function textRequest(format: Provider, n: number, ts: Turn[] = turns): Record<string, unknown> {
      const said = ts.slice(0, n).flatMap((t) => [
        { role: "assistant", text: t.action },
        { role: "user", text: t.observation },
      ]);
      const all = [{ role: "user", text: "Fix the build." }, ...said];
      if (format === "anthropic")
        return { model: "m", max_tokens: 100, messages: all.map((m) => ({ role: m.role, content: m.text })) };
      if (format === "gemini")
        return {
          contents: all.map((m) => ({ role: m.role === "assistant" ? "model" : "user", parts: [{ text: m.text }] })),
        };
      if (format === "openai-responses")
        return { model: "m", input: all.map((m) => ({ role: m.role, content: m.text })) };
      return { model: "m", messages: all.map((m) => ({ role: m.role, content: m.text })) };
    }

    const withRecall: CompressionSettings = { ...settings, recall: true };
    /** Everything a request's compression gives: body, reason, tokens saved and the originals cut. */
    const whole = (r: ReturnType<typeof compressRequest>) =>
      JSON.stringify([r.body, r.reason, r.input_tokens_before, r.input_tokens_after, [...(r.cuts ?? new Map())]]);
    const coldWhole = (format: Provider, body: Record<string, unknown>) => {
      forgetRemembered();
      return whole(compressRequest(format, structuredClone(body), withRecall));
    };

    for (const format of ["openai", "anthropic", "gemini", "openai-responses"] as const) {
      it(`gives every turn what a cold start gives, from the last request's items (${format}, text protocol)`, () => {
        const colds = turns.map((_, i) => coldWhole(format, textRequest(format, i + 1)));
        forgetRemembered();
        const warm = turns.map((_, i) => {
          const body = textRequest(format, i + 1);
          // From the third request on, the session's last request is found and resent whole.
          if (i >= 2) expect(trailResent("standard+recall", itemsOf(format, body))?.shared).to.equal(2 * i + 1);
          return whole(compressRequest(format, body, withRecall));
        });
        expect(warm).to.deep.equal(colds);
        expect(warm.at(-1)).to.include("recall ");
      });
    }

    it("goes on from the items before a cache mark a client moved to its newest message", () => {
      const marked = (n: number) => {
        const body = textRequest("anthropic", n) as { messages: { role: string; content: unknown }[] };
        const last = body.messages.at(-1) as { content: unknown };
        last.content = [{ type: "text", text: last.content, cache_control: { type: "ephemeral" } }];
        return body;
      };
      const expected = turns.map((_, i) => coldWhole("anthropic", marked(i + 1)));
      forgetRemembered();
      const warm = turns.map((_, i) => {
        const body = marked(i + 1);
        // The last request's newest message comes back without its mark: all but it is resent.
        if (i >= 2) expect(trailResent("standard+recall", itemsOf("anthropic", body))?.shared).to.equal(2 * i);
        return whole(compressRequest("anthropic", body, withRecall));
      });
      expect(warm).to.deep.equal(expected);
    });

    it("walks again from an earlier item that changed (an edited action), as a cold start would", () => {
      forgetRemembered();
      for (let i = 1; i <= 5; i++) compressRequest("openai", textRequest("openai", i), withRecall);
      const edited = turns.map((t, i) => (i === 1 ? { ...t, action: t.action.replace("run 1", "run 2") } : t));
      const next = textRequest("openai", 7, edited);
      const expected = coldWhole("openai", next);
      forgetRemembered();
      for (let i = 1; i <= 5; i++) compressRequest("openai", textRequest("openai", i), withRecall);
      expect(whole(compressRequest("openai", next, withRecall))).to.equal(expected);
    });
  });
});

const itemsOf = (format: Provider, body: Record<string, unknown>): unknown[] =>
  (format === "gemini" ? body.contents : format === "openai-responses" ? body.input : body.messages) as unknown[];
