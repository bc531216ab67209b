import { expect } from "chai";
import {
  type CompressionSettings,
  compressRequest,
  countInputTokens,
  detectIntensity,
  INSTRUCTIONS,
} from "../src/index.ts";

const settings = (over: Partial<CompressionSettings> = {}): CompressionSettings => ({
  intensity: "full",
  auto_compress_input: false,
  smart_detect_enabled: false,
  context_compress: false,
  context_compress_level: "standard",
  ...over,
});

const deepFreeze = <T>(o: T): T => {
  if (o && typeof o === "object") {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
};

describe("response compression", () => {
  describe("OpenAI chat completions", () => {
    const body = deepFreeze({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: "You are a helpful assistant for ACME." },
        { role: "user", content: "Explain our refund policy." },
      ],
    });

    it("appends the level's instruction as a system message after the caller's messages, which stay as they were", () => {
      const out = compressRequest("openai", body, settings({ intensity: "ultra" }));
      const messages = (out.body as { messages: { role: string; content: string }[] }).messages;
      expect(messages.slice(0, 2)).to.deep.equal(body.messages);
      expect(messages[2]?.role).to.equal("system");
      expect(messages[2]?.content).to.include(INSTRUCTIONS.ultra);
      expect(out.intensity).to.equal("ultra");
      expect(out.reason).to.equal("key setting");
      // The instruction only adds: before is what was sent, after what goes out, and after is more.
      expect(out.input_tokens_before).to.equal(countInputTokens("openai", body));
      expect(out.input_tokens_after).to.equal(countInputTokens("openai", out.body));
      expect(out.input_tokens_after - out.input_tokens_before).to.be.greaterThan(5);
    });

    it("skips structured output: json_schema, json_object, and a forced tool", () => {
      for (const extra of [
        { response_format: { type: "json_schema", json_schema: { name: "x", schema: {} } } },
        { response_format: { type: "json_object" } },
        { tool_choice: "required" },
        { tool_choice: { type: "function", function: { name: "f" } } },
      ]) {
        const input = { ...body, ...extra };
        const out = compressRequest("openai", input, settings());
        expect(out.intensity, JSON.stringify(extra)).to.equal(null);
        expect(out.body).to.equal(input);
        expect(out.reason).to.match(/structured output/);
      }
    });
  });

  describe("Anthropic messages", () => {
    it("appends a block after the caller's system blocks, leaving cache_control breakpoints where they are", () => {
      const body = deepFreeze({
        model: "claude-test",
        max_tokens: 100,
        system: [
          { type: "text", text: "Long cached policy text" },
          { type: "text", text: "More", cache_control: { type: "ephemeral" } },
        ],
        messages: [{ role: "user", content: [{ type: "text", text: "Hi", cache_control: { type: "ephemeral" } }] }],
      });
      const out = compressRequest("anthropic", body, settings({ intensity: "lite" }));
      const o = out.body as typeof body & { system: { type: string; text: string }[] };
      expect(o.system.slice(0, 2)).to.deep.equal(body.system);
      expect(o.system[2]?.text).to.include(INSTRUCTIONS.lite);
      expect(o.system[2]).not.to.have.property("cache_control");
      expect(o.messages).to.deep.equal(body.messages);
    });

    it("keeps a string system prompt's text as its own block, and adds one when there is none", () => {
      const out = compressRequest("anthropic", { model: "m", system: "Be kind.", messages: [] }, settings());
      expect((out.body as { system: unknown[] }).system[0]).to.deep.equal({ type: "text", text: "Be kind." });
      const none = compressRequest("anthropic", { model: "m", messages: [] }, settings());
      expect((none.body as { system: unknown[] }).system).to.have.length(1);
    });

    it("skips a forced tool", () => {
      const out = compressRequest(
        "anthropic",
        { model: "m", messages: [], tool_choice: { type: "tool", name: "x" } },
        settings(),
      );
      expect(out.intensity).to.equal(null);
    });
  });

  describe("Gemini generateContent", () => {
    it("appends a part to systemInstruction (or snake_case system_instruction) and skips JSON output", () => {
      const body = deepFreeze({
        model: "g",
        systemInstruction: { parts: [{ text: "Mine" }] },
        contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      });
      const out = compressRequest("gemini", body, settings());
      expect(
        (out.body as { systemInstruction: { parts: { text: string }[] } }).systemInstruction.parts.map((p) => p.text),
      ).to.deep.equal(["Mine", `[terse] ${INSTRUCTIONS.full}`]);
      const snake = compressRequest(
        "gemini",
        { contents: [], system_instruction: { parts: [{ text: "s" }] } },
        settings(),
      );
      expect(snake.body).to.have.property("system_instruction").that.has.property("parts").with.length(2);
      expect(snake.body).not.to.have.property("systemInstruction");
      const json = compressRequest(
        "gemini",
        { contents: [], generationConfig: { responseMimeType: "application/json" } },
        settings(),
      );
      expect(json.intensity).to.equal(null);
    });
  });

  it("passes anything that is not a JSON object through untouched", () => {
    for (const odd of [null, [], "text", 3]) {
      const out = compressRequest("openai", odd, settings());
      expect(out.body).to.equal(odd);
      expect(out.intensity).to.equal(null);
    }
  });

  it("is deterministic", () => {
    const body = { model: "m", messages: [{ role: "user", content: "What is 2+2?" }] };
    expect(compressRequest("openai", body, settings({ smart_detect_enabled: true }))).to.deep.equal(
      compressRequest("openai", body, settings({ smart_detect_enabled: true })),
    );
  });
});

describe("smart detect", () => {
  const cases: [string, "lite" | "full" | "ultra", RegExp][] = [
    ["Why does this fail?\n```ts\nconst x: number = 'a';\n```", "lite", /code block/],
    ["diff --git a/x.ts b/x.ts\n@@ -1,2 +1,2 @@\n-a\n+b", "lite", /diff/],
    ['Traceback (most recent call last):\n  File "a.py", line 3\nValueError: bad', "lite", /stack trace/],
    ["Give me the exact command to list open ports", "lite", /exactness/],
    ["What's the capital of France?", "ultra", /short question/],
    ["Write a short note to my team about the offsite next week and what to bring", "full", /key setting/],
  ];
  for (const [text, level, reason] of cases) {
    it(`${level} for ${JSON.stringify(text.slice(0, 40))}`, () => {
      const choice = detectIntensity(text, "full");
      expect(choice.intensity).to.equal(level);
      expect(choice.reason).to.match(reason);
    });
  }

  it("reads the latest user turn of each format, and tool results do not count as the user's words", () => {
    const anthropic = compressRequest(
      "anthropic",
      {
        model: "m",
        messages: [
          { role: "user", content: "Fix the bug in ```a.py```" },
          { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "read", input: {} }] },
          {
            role: "user",
            content: [{ type: "tool_result", tool_use_id: "t1", content: "Traceback (most recent call last):" }],
          },
          { role: "user", content: "Thanks, is it done?" },
        ],
      },
      settings({ smart_detect_enabled: true }),
    );
    expect(anthropic.intensity).to.equal("ultra");
    const gemini = compressRequest(
      "gemini",
      { contents: [{ role: "user", parts: [{ text: "What time is it in Tokyo?" }] }] },
      settings({ smart_detect_enabled: true }),
    );
    expect(gemini.intensity).to.equal("ultra");
  });
});
