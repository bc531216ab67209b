// Response bodies in each provider's exact wire format (JSON and SSE), with usage.
// Shapes follow the recorded streams in shared/corpus/wire-fixtures.

export type Provider = "openai" | "anthropic" | "gemini";

export interface Usage {
  input: number;
  output: number;
}

export function jsonBody(provider: Provider, model: string, text: string, usage: Usage): unknown {
  if (provider === "openai") {
    return {
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: 1_700_000_000,
      model,
      choices: [{ index: 0, message: { role: "assistant", content: text, refusal: null }, finish_reason: "stop" }],
      usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
    };
  }
  if (provider === "anthropic") {
    return {
      id: "msg_fake",
      type: "message",
      role: "assistant",
      model,
      content: [{ type: "text", text }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: usage.input, output_tokens: usage.output },
    };
  }
  return {
    candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }],
    usageMetadata: {
      promptTokenCount: usage.input,
      candidatesTokenCount: usage.output,
      totalTokenCount: usage.input + usage.output,
    },
    modelVersion: model,
  };
}

const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;

/** The SSE events of a streamed answer, one string per event, `pieces` being the text deltas. */
export function sseEvents(
  provider: Provider,
  model: string,
  pieces: string[],
  usage: Usage,
  includeUsage: boolean,
): string[] {
  if (provider === "openai") {
    const chunk = (delta: unknown, finish: string | null) => ({
      id: "chatcmpl-fake",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    });
    const events = [sse(chunk({ role: "assistant", content: "" }, null))];
    for (const p of pieces) events.push(sse(chunk({ content: p }, null)));
    events.push(sse(chunk({}, "stop")));
    if (includeUsage) {
      events.push(
        sse({
          id: "chatcmpl-fake",
          object: "chat.completion.chunk",
          created: 1_700_000_000,
          model,
          choices: [],
          usage: {
            prompt_tokens: usage.input,
            completion_tokens: usage.output,
            total_tokens: usage.input + usage.output,
          },
        }),
      );
    }
    events.push("data: [DONE]\n\n");
    return events;
  }
  if (provider === "anthropic") {
    const events = [
      sse(
        {
          type: "message_start",
          message: {
            id: "msg_fake",
            type: "message",
            role: "assistant",
            model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: usage.input, output_tokens: 1 },
          },
        },
        "message_start",
      ),
      sse({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, "content_block_start"),
    ];
    for (const p of pieces) {
      events.push(
        sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: p } }, "content_block_delta"),
      );
    }
    events.push(sse({ type: "content_block_stop", index: 0 }, "content_block_stop"));
    events.push(
      sse(
        {
          type: "message_delta",
          delta: { stop_reason: "end_turn", stop_sequence: null },
          usage: { output_tokens: usage.output },
        },
        "message_delta",
      ),
    );
    events.push(sse({ type: "message_stop" }, "message_stop"));
    return events;
  }
  return pieces.map((p, i) =>
    sse({
      candidates: [
        {
          content: { role: "model", parts: [{ text: p }] },
          index: 0,
          ...(i === pieces.length - 1 ? { finishReason: "STOP" } : {}),
        },
      ],
      usageMetadata: {
        promptTokenCount: usage.input,
        candidatesTokenCount: i === pieces.length - 1 ? usage.output : i + 1,
        totalTokenCount: usage.input + (i === pieces.length - 1 ? usage.output : i + 1),
      },
      modelVersion: model,
    }),
  );
}

/** Each provider's error envelope. OpenAI partly echoes the key it refused, as the real API does. */
export function errorBody(provider: Provider, status: number, providerKey: string | undefined): unknown {
  const key = providerKey ?? "";
  const echoed = key.length > 8 ? `${key.slice(0, 3)}${"*".repeat(8)}${key.slice(-4)}` : "";
  if (provider === "openai") {
    return {
      error: {
        message: `Incorrect API key provided: ${echoed}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        type: "invalid_request_error",
        param: null,
        code: "invalid_api_key",
      },
    };
  }
  if (provider === "anthropic") {
    return { type: "error", error: { type: "authentication_error", message: `invalid x-api-key ${key}` } };
  }
  return {
    error: {
      code: status,
      message: `API key not valid: ${key}. Please pass a valid API key.`,
      status: "INVALID_ARGUMENT",
    },
  };
}
