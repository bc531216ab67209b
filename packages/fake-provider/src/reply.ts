import type { Endpoint } from "./routes.ts";

// What the fake answers a generation request with, in no wire format yet: text, or a
// call of a tool the client offered. Reading the request is per wire format (where its
// tools, tool results and JSON schema sit); the answer is rendered by wire.ts and
// responses-wire.ts.

export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export type Reply = { kind: "text"; text: string } | { kind: "tool_call"; call: ToolCall };

/**
 * A scripted agent exchange: a request that offers tool `name` and carries no result
 * of the scripted call is answered with that call; a request that carries its result
 * gets `answer`. Requests that do not offer the tool (an agent's side requests: titles,
 * routing, quota checks) get the ordinary answer.
 */
export interface ScriptedToolCall {
  name: string;
  arguments: Record<string, unknown>;
  answer: string;
}

/** The id of the scripted call, shaped as each provider's own ids are (Gemini's calls carry none). */
export function scriptedCallId(endpoint: Endpoint): string {
  return endpoint === "messages" || endpoint === "count_tokens" ? "toolu_fake_01" : "call_fake_01";
}

type Body = Record<string, unknown>;

const isRecord = (v: unknown): v is Body => typeof v === "object" && v !== null && !Array.isArray(v);
const records = (v: unknown): Body[] => (Array.isArray(v) ? v.filter(isRecord) : []);

export function replyTo(endpoint: Endpoint, body: Body, text: string, script: ScriptedToolCall | null): Reply {
  if (script && toolResultIn(endpoint, body, script) !== undefined) return { kind: "text", text: script.answer };
  if (script && offeredTools(endpoint, body).includes(script.name)) {
    return {
      kind: "tool_call",
      call: { id: scriptedCallId(endpoint), name: script.name, arguments: script.arguments },
    };
  }
  const schema = jsonSchemaOf(endpoint, body);
  if (schema !== undefined) return { kind: "text", text: JSON.stringify(exampleOf(schema)) };
  return { kind: "text", text };
}

/** The names of the tools a request offers the model. */
export function offeredTools(endpoint: Endpoint, body: Body): string[] {
  const tools = records(body.tools);
  if (endpoint === "chat.completions") return tools.map((t) => (isRecord(t.function) ? String(t.function.name) : ""));
  if (endpoint === "generateContent" || endpoint === "streamGenerateContent" || endpoint === "countTokens") {
    return tools.flatMap((t) => records(t.functionDeclarations).map((f) => String(f.name)));
  }
  return tools.map((t) => String(t.name ?? ""));
}

/** The item of a request that carries the scripted call's result (the whole item: its text is in a different field per format). */
export function toolResultIn(endpoint: Endpoint, body: Body, script: ScriptedToolCall): unknown {
  const id = scriptedCallId(endpoint);
  switch (endpoint) {
    case "chat.completions":
      return records(body.messages).find((m) => m.role === "tool" && m.tool_call_id === id);
    case "responses":
      return records(body.input).find((i) => i.type === "function_call_output" && i.call_id === id);
    case "messages":
    case "count_tokens":
      return records(body.messages)
        .flatMap((m) => records(m.content))
        .find((c) => c.type === "tool_result" && c.tool_use_id === id);
    default:
      return records(body.contents)
        .flatMap((c) => records(c.parts))
        .find((p) => isRecord(p.functionResponse) && p.functionResponse.name === script.name);
  }
}

/** The JSON schema a request asks the answer to follow (`{}` for any JSON), or undefined for free text. */
function jsonSchemaOf(endpoint: Endpoint, body: Body): unknown {
  if (endpoint === "generateContent" || endpoint === "streamGenerateContent") {
    const config = isRecord(body.generationConfig) ? body.generationConfig : {};
    if (config.responseMimeType !== "application/json") return undefined;
    return config.responseJsonSchema ?? config.responseSchema ?? {};
  }
  const format =
    endpoint === "chat.completions"
      ? body.response_format
      : endpoint === "responses"
        ? isRecord(body.text) && body.text.format
        : body.output_format;
  if (!isRecord(format)) return undefined;
  if (format.type === "json_object") return {};
  if (format.type !== "json_schema") return undefined;
  return endpoint === "chat.completions" && isRecord(format.json_schema) ? format.json_schema.schema : format.schema;
}

/**
 * The simplest value a schema accepts: the first of an enum or of a union, every
 * property of an object. Types may be spelt in capitals (Gemini's own schema).
 */
export function exampleOf(schema: unknown): unknown {
  if (!isRecord(schema)) return {};
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union) && union.length > 0) return exampleOf(union[0]);
  const declared = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const type = String(declared ?? (isRecord(schema.properties) ? "object" : "string")).toLowerCase();
  if (type === "object") {
    const properties = isRecord(schema.properties) ? schema.properties : {};
    return Object.fromEntries(Object.entries(properties).map(([name, sub]) => [name, exampleOf(sub)]));
  }
  if (type === "array") return [];
  if (type === "number" || type === "integer") return 0;
  if (type === "boolean") return false;
  if (type === "null") return null;
  return "fake";
}
