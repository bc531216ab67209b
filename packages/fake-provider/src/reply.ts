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

/**
 * One answer: text, tool calls, or text the model wrote before its calls (the order
 * every provider writes them in). A text answer has no calls; a call answer with no
 * text before it has text "".
 */
export interface Reply {
  text: string;
  calls: ToolCall[];
}

/**
 * A scripted agent exchange: a request that offers tool `name` and carries no result
 * of the scripted call is answered with that call; a request that carries its result
 * gets `answer`. Requests that do not offer the tool (an agent's side requests: titles,
 * routing, quota checks) get the ordinary answer.
 */
export interface ScriptedToolCall {
  name: string;
  arguments: Record<string, unknown>;
  /** `{result}` in it stands for the text of the call's latest result in the request (what the tool gave back). */
  answer: string;
  /** Text the model writes before the call, in the same answer. */
  textBefore?: string;
  /**
   * Call again whatever results came back (a model that never stops calling: a round
   * limit's test). Each call has its own id, so calls and results stay paired.
   */
  repeat?: boolean;
  /**
   * A call of another tool (the client's own) in the same answer. It is made again in
   * the answer that follows the scripted call's result, as a model makes a call again
   * that was dropped, until its own result comes back; then the answer is `answer`.
   */
  alongside?: { name: string; arguments: Record<string, unknown> };
}

/**
 * The id of the scripted call, shaped as each provider's own ids are (Gemini's calls
 * carry none). `n`: how many of its results the request already carries (a repeating
 * script's later calls are _02, _03...).
 */
export function scriptedCallId(endpoint: Endpoint, n = 0): string {
  const prefix = endpoint === "messages" || endpoint === "count_tokens" ? "toolu_fake_" : "call_fake_";
  return `${prefix}${String(n + 1).padStart(2, "0")}`;
}

/** The id of the `alongside` call. */
export function alongsideCallId(endpoint: Endpoint): string {
  return endpoint === "messages" || endpoint === "count_tokens" ? "toolu_fake_alongside" : "call_fake_alongside";
}

type Body = Record<string, unknown>;

const isRecord = (v: unknown): v is Body => typeof v === "object" && v !== null && !Array.isArray(v);
const records = (v: unknown): Body[] => (Array.isArray(v) ? v.filter(isRecord) : []);

export function replyTo(endpoint: Endpoint, body: Body, text: string, script: ScriptedToolCall | null): Reply {
  if (script) {
    const scripted = scriptedReply(endpoint, body, script);
    if (scripted) return scripted;
  }
  const schema = jsonSchemaOf(endpoint, body);
  if (schema !== undefined) return { text: JSON.stringify(exampleOf(schema)), calls: [] };
  return { text, calls: [] };
}

/** The scripted exchange's answer to this request, or null where it takes no part (the tool not offered, no result). */
function scriptedReply(endpoint: Endpoint, body: Body, script: ScriptedToolCall): Reply | null {
  const results = toolResultsIn(endpoint, body, script);
  const offered = offeredTools(endpoint, body);
  const alongside = script.alongside;
  const alongsideCall = (): ToolCall[] =>
    alongside && offered.includes(alongside.name) && !alongsideAnswered(endpoint, body, alongside)
      ? [{ id: alongsideCallId(endpoint), name: alongside.name, arguments: alongside.arguments }]
      : [];
  const latest = results[results.length - 1];
  if (offered.includes(script.name) && (results.length === 0 || script.repeat)) {
    const call = { id: scriptedCallId(endpoint, results.length), name: script.name, arguments: script.arguments };
    return { text: script.textBefore ?? "", calls: [call, ...alongsideCall()] };
  }
  if (latest === undefined) return null;
  return { text: script.answer.replaceAll("{result}", resultText(endpoint, latest)), calls: alongsideCall() };
}

/**
 * Whether the request carries the result of the `alongside` call. Gemini's calls have no
 * ids, and the client's tool may have answered earlier calls: there, a result counts
 * when it follows a model turn that made this very call (its name and arguments).
 */
function alongsideAnswered(endpoint: Endpoint, body: Body, alongside: NonNullable<ScriptedToolCall["alongside"]>) {
  if (!isGemini(endpoint))
    return resultsOf(endpoint, body, alongside.name, (id) => id === alongsideCallId(endpoint)).length > 0;
  const contents = records(body.contents);
  const args = JSON.stringify(alongside.arguments);
  const made = contents.findIndex((c) =>
    records(c.parts).some(
      (p) =>
        isRecord(p.functionCall) &&
        p.functionCall.name === alongside.name &&
        JSON.stringify(p.functionCall.args) === args,
    ),
  );
  return (
    made >= 0 && resultsOf(endpoint, { contents: contents.slice(made + 1) }, alongside.name, () => true).length > 0
  );
}

/** The names of the tools a request offers the model. */
export function offeredTools(endpoint: Endpoint, body: Body): string[] {
  const tools = records(body.tools);
  if (endpoint === "chat.completions") return tools.map((t) => (isRecord(t.function) ? String(t.function.name) : ""));
  if (isGemini(endpoint)) return tools.flatMap((t) => records(t.functionDeclarations).map((f) => String(f.name)));
  return tools.map((t) => String(t.name ?? ""));
}

const isGemini = (endpoint: Endpoint) =>
  endpoint === "generateContent" || endpoint === "streamGenerateContent" || endpoint === "countTokens";

/** Whether `id` is one the scripted call has had (a repeating script numbers its calls). */
const isScriptedId = (endpoint: Endpoint) => {
  const pattern = new RegExp(`^${scriptedCallId(endpoint).slice(0, -2)}\\d{2,}$`);
  return (id: unknown) => typeof id === "string" && pattern.test(id);
};

/**
 * The items of a request that carry the scripted call's results, in order (whole items:
 * their text is in a different field per format). Gemini's calls have no ids: its
 * results are told by the function's name.
 */
export function toolResultsIn(endpoint: Endpoint, body: Body, script: ScriptedToolCall): Body[] {
  return resultsOf(endpoint, body, script.name, isScriptedId(endpoint));
}

/** The latest item of a request that carries the scripted call's result, or undefined. */
export function toolResultIn(endpoint: Endpoint, body: Body, script: ScriptedToolCall): Body | undefined {
  return toolResultsIn(endpoint, body, script).at(-1);
}

function resultsOf(endpoint: Endpoint, body: Body, name: string, ofCall: (id: unknown) => boolean): Body[] {
  switch (endpoint) {
    case "chat.completions":
      return records(body.messages).filter((m) => m.role === "tool" && ofCall(m.tool_call_id));
    case "responses":
      return records(body.input).filter((i) => i.type === "function_call_output" && ofCall(i.call_id));
    case "messages":
    case "count_tokens":
      return records(body.messages)
        .flatMap((m) => records(m.content))
        .filter((c) => c.type === "tool_result" && ofCall(c.tool_use_id));
    default:
      return records(body.contents)
        .flatMap((c) => records(c.parts))
        .filter((p) => isRecord(p.functionResponse) && p.functionResponse.name === name);
  }
}

/**
 * The text of a tool result item: a string, or its text parts joined; Gemini's response
 * object holding one string is that string, any other is its JSON.
 */
export function resultText(endpoint: Endpoint, item: Body): string {
  if (endpoint === "chat.completions") return textOf(item.content);
  if (endpoint === "responses") return textOf(item.output);
  if (endpoint === "messages" || endpoint === "count_tokens") return textOf(item.content);
  const response = isRecord(item.functionResponse) ? item.functionResponse.response : undefined;
  const values = isRecord(response) ? Object.values(response) : [];
  if (values.length === 1 && typeof values[0] === "string") return values[0];
  return JSON.stringify(response ?? {});
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : records(content)
        .map((p) => (typeof p.text === "string" ? p.text : ""))
        .join("");

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
