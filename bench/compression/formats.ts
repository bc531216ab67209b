// One neutral session as each provider's request body: request t is the history up to
// the t-th user turn, as the agent would have sent it to that provider.
import type { Provider } from "@terse/compression";
import type { Message, Session } from "./corpus.ts";

type Json = Record<string, unknown>;

function openaiMessages(m: Message): Json[] {
  if (m.role === "assistant") {
    const text = m.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n");
    const calls = m.content.flatMap((b) =>
      b.type === "tool_use"
        ? [{ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.input) } }]
        : [],
    );
    return [{ role: "assistant", content: text || null, ...(calls.length > 0 ? { tool_calls: calls } : {}) }];
  }
  const tools = m.content.flatMap((b) =>
    b.type === "tool_result" ? [{ role: "tool", tool_call_id: b.tool_use_id, content: b.content }] : [],
  );
  const text = m.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n");
  return text ? [...tools, { role: "user", content: text }] : tools;
}

function geminiContents(m: Message, names: Map<string, string>): Json[] {
  const parts = m.content.map((b) => {
    if (b.type === "text") return { text: b.text };
    if (b.type === "tool_use") return { functionCall: { id: b.id, name: b.name, args: b.input } };
    return {
      functionResponse: {
        id: b.tool_use_id,
        name: names.get(b.tool_use_id) ?? "tool",
        response: { output: b.content },
      },
    };
  });
  return [{ role: m.role === "assistant" ? "model" : "user", parts }];
}

/** The provider's messages for each neutral message, and the body of a request holding the first n provider messages. */
export interface ProviderSession {
  perMessage: Json[][];
  body(messages: Json[]): Json;
}

export function toProvider(provider: Provider, s: Session): ProviderSession {
  if (provider === "openai") {
    const system = s.system ? [{ role: "system", content: s.system }] : [];
    return {
      perMessage: s.messages.map(openaiMessages),
      body: (messages) => ({ model: "gpt-4o", messages: [...system, ...messages] }),
    };
  }
  if (provider === "anthropic") {
    return {
      perMessage: s.messages.map((m) => [{ role: m.role, content: m.content }]),
      body: (messages) => ({
        model: "claude-sonnet-4-5",
        max_tokens: 4096,
        ...(s.system ? { system: s.system } : {}),
        messages,
      }),
    };
  }
  // Filled in order: an id may come again later (replayed runs reuse them) with another name.
  const names = new Map<string, string>();
  const perMessage = s.messages.map((m) => {
    for (const b of m.content) if (b.type === "tool_use") names.set(b.id, b.name);
    return geminiContents(m, names);
  });
  return {
    perMessage,
    body: (contents) => ({
      model: "gemini-2.5-pro",
      ...(s.system ? { systemInstruction: { parts: [{ text: s.system }] } } : {}),
      contents,
    }),
  };
}

/** The list of what the model reads, in order, for prefix comparison and counting. */
export function partsOf(provider: Provider, body: Json): unknown[] {
  if (provider === "openai") return body.messages as unknown[];
  if (provider === "anthropic") return [body.system ?? "", ...(body.messages as unknown[])];
  return [body.systemInstruction ?? "", ...(body.contents as unknown[])];
}

/**
 * The compressed body without the response instruction, so that the context figures
 * measure context compression alone (the instruction pays off on the output side; its
 * own cost is reported apart). The system slot is the caller's again.
 */
export function withoutInstruction(provider: Provider, compressed: Json, original: Json): Json {
  if (provider === "openai") {
    const messages = compressed.messages as Json[];
    const last = messages.at(-1);
    const ours = last?.role === "system" && String(last.content).startsWith("[terse]");
    return { ...compressed, messages: ours ? messages.slice(0, -1) : messages };
  }
  const key = provider === "anthropic" ? "system" : "systemInstruction";
  const { [key]: _ours, ...rest } = compressed;
  return key in original ? { ...rest, [key]: original[key] } : rest;
}
