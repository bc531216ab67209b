import { isEncodedMember } from "../encoded-data.ts";
import { withField } from "../json.ts";
import { isObservationAfter } from "../observation.ts";
import {
  Actions,
  fromLastModelTurn,
  type ItemWalker,
  isRecord,
  type RequestFormat,
  type ResultTransform,
  textOf,
  textsOf,
} from "../request-view.ts";

// Gemini generateContent: `contents` of {role, parts}, an optional `systemInstruction`
// (a Content), `generationConfig`, `toolConfig`. The REST API takes camelCase and
// snake_case field names; whichever the caller used is kept.

const contentsOf = (body: Record<string, unknown>): unknown[] => (Array.isArray(body.contents) ? body.contents : []);
/** Where the request keeps its system instruction: the REST API takes either spelling. */
export const systemKey = (body: Record<string, unknown>) =>
  "system_instruction" in body ? "system_instruction" : "systemInstruction";

function partsOf(system: unknown): unknown[] {
  if (typeof system === "string") return [{ text: system }];
  if (isRecord(system) && Array.isArray(system.parts)) return system.parts;
  return [];
}

/** The response with `f` applied to its text; the same object when nothing changed. */
function mapResponse(response: unknown, f: (text: string) => string): unknown {
  const entries = isRecord(response) ? Object.entries(response) : [];
  const [only] = entries;
  if (entries.length === 1 && only && typeof only[1] === "string") {
    const next = f(only[1]);
    return next === only[1] ? response : { [only[0]]: next };
  }
  const text = JSON.stringify(response ?? {});
  const bulk = bulkOf(response, text.length);
  if (bulk) {
    const next = f(bulk.text);
    return next === bulk.text ? response : withStringAt(response, bulk.path, next);
  }
  const next = f(text);
  return next === text ? response : { output: next };
}

/** Where the search for a response's bulk stops: deeper strings are read as the JSON they sit in. */
const BULK_DEPTH = 4;

/**
 * The string that makes up most of a response (three quarters of its JSON), and where it
 * sits: `{output, exitCode, stderr}`, MCP's `{content: [{type, text}]}`. Shortened in
 * place, the rest of the object stays as the client sent it. Never an image's or a file's
 * base64 (`{image: {mimeType, data}}`, encoded-data.ts): cut, it decodes to nothing.
 */
function bulkOf(response: unknown, jsonLength: number): { text: string; path: (string | number)[] } | undefined {
  let best: { text: string; path: (string | number)[] } | undefined;
  const visit = (value: unknown, path: (string | number)[], owner: unknown) => {
    if (typeof value === "string") {
      if ((!best || value.length > best.text.length) && !isEncodedMember(value, owner)) best = { text: value, path };
      return;
    }
    if (path.length >= BULK_DEPTH) return;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) visit(value[i], [...path, i], value);
    } else if (isRecord(value)) for (const [k, v] of Object.entries(value)) visit(v, [...path, k], value);
  };
  visit(response, [], undefined);
  return best && best.path.length > 0 && best.text.length * 4 >= jsonLength * 3 ? best : undefined;
}

/** A copy of `value` with the string at `path` replaced; every object off the path shared. */
function withStringAt(value: unknown, path: readonly (string | number)[], text: string): unknown {
  const [head, ...rest] = path;
  if (head === undefined) return text;
  if (Array.isArray(value) && typeof head === "number") {
    return value.map((v, i) => (i === head ? withStringAt(v, rest, text) : v));
  }
  const record = value as Record<string, unknown>;
  return { ...record, [head]: withStringAt(record[head as string], rest, text) };
}

export const geminiFormat: RequestFormat = {
  promptCache: "automatic",

  newestTurn(body) {
    return fromLastModelTurn(contentsOf(body), (c) => isRecord(c) && c.role === "model");
  },

  structuredOutput(body) {
    const config = (
      isRecord(body.generationConfig)
        ? body.generationConfig
        : isRecord(body.generation_config)
          ? body.generation_config
          : {}
    ) as Record<string, unknown>;
    const mime = config.responseMimeType ?? config.response_mime_type;
    if (mime === "application/json" || mime === "text/x.enum") return `structured output (responseMimeType ${mime})`;
    if (config.responseSchema ?? config.responseJsonSchema ?? config.response_schema)
      return "structured output (responseSchema)";
    const tool = (isRecord(body.toolConfig) ? body.toolConfig : {}) as { functionCallingConfig?: { mode?: string } };
    if (tool.functionCallingConfig?.mode === "ANY") return "structured output (function calling mode ANY)";
    return null;
  },

  latestUserText(body) {
    const contents = contentsOf(body);
    for (let i = contents.length - 1; i >= 0; i--) {
      const c = contents[i];
      if (isRecord(c) && (c.role === "user" || c.role === undefined)) {
        const texts = textsOf(c.parts);
        const text = texts.join("\n");
        // An observation is the agent's command output, not what the user asked.
        const before = contents[i - 1];
        const action = isRecord(before) && before.role === "model" ? textOf(before.parts) : undefined;
        if (text !== "" && !isObservationAfter(texts, action)) return text;
      }
    }
    return "";
  },

  withInstruction(body, instruction) {
    const key = systemKey(body);
    const current = body[key];
    const base = isRecord(current) ? current : {};
    return withField(body, key, withField(base, "parts", [...partsOf(current), { text: instruction }]));
  },

  inputParts(body) {
    return [body[systemKey(body)] ?? "", ...contentsOf(body), ...(Array.isArray(body.tools) ? [body.tools] : [])];
  },

  mapPromptTexts(body, f) {
    const mapParts = (c: unknown) => {
      if (!isRecord(c) || !Array.isArray(c.parts)) return c;
      let touched = false;
      const parts = c.parts.map((p: unknown) => {
        if (!isRecord(p) || typeof p.text !== "string") return p;
        const text = f(p.text);
        if (text === p.text) return p;
        touched = true;
        return { ...p, text };
      });
      return touched ? { ...c, parts } : c;
    };
    const contents = contentsOf(body).map((c) =>
      isRecord(c) && (c.role === "user" || c.role === undefined) ? mapParts(c) : c,
    );
    const key = systemKey(body);
    return key in body ? { ...body, [key]: mapParts(body[key]), contents } : { ...body, contents };
  },

  toolResults: {
    items: contentsOf,
    withItems: (body, contents) => ({ ...body, contents }),
    walker: () => new ContentsWalker(),
  },
};

// A function response is a JSON object. One holding a single string (`{output: "..."}`,
// the usual shape of a command's output), or one string that is most of it (beside an
// exit code, or in MCP's content list), has that string shortened in place; any other
// object is shortened as its JSON text, which then stands as `{"output": ...}`, a
// shape the API accepts.
class ContentsWalker implements ItemWalker {
  constructor(
    private readonly actions = new Actions(),
    /** Function responses so far: the reference of one without an id. */
    private ordinal = 0,
  ) {}

  fork(): ItemWalker {
    return new ContentsWalker(new Actions(this.actions), this.ordinal);
  }

  map(c: unknown, i: number, transform?: ResultTransform): unknown {
    if (!isRecord(c) || !Array.isArray(c.parts)) return c;
    if (c.role === "model") {
      const calls = c.parts.flatMap((p: unknown) =>
        isRecord(p) && isRecord(p.functionCall)
          ? [{ id: p.functionCall.id, name: p.functionCall.name, input: p.functionCall.args }]
          : [],
      );
      this.actions.assistant(textOf(c.parts), calls);
      return c;
    }
    this.actions.userMessage(textsOf(c.parts).length);
    let touched = false;
    const parts = c.parts.map((p: unknown) => {
      if (isRecord(p) && typeof p.text === "string") {
        const text = transform ? this.actions.observation(p.text, `#${i}`, transform) : p.text;
        if (text === p.text) return p;
        touched = true;
        return { ...p, text };
      }
      if (!isRecord(p) || !isRecord(p.functionResponse)) return p;
      const fr = p.functionResponse;
      this.ordinal++;
      if (!transform) return p;
      const ref = typeof fr.id === "string" ? fr.id : `${String(fr.name ?? "function")}#${this.ordinal}`;
      // By the call's id; a response whose call had none answers the call of its name in the same place.
      const command =
        (typeof fr.id === "string" ? this.actions.commandOf(fr.id) : undefined) ??
        (typeof fr.name === "string" ? this.actions.commandOfNext(fr.name) : undefined);
      const response = mapResponse(fr.response, (text) => transform(text, ref, command));
      if (response === fr.response) return p;
      touched = true;
      return { ...p, functionResponse: { ...fr, response } };
    });
    this.actions.answered();
    return touched ? { ...c, parts } : c;
  }
}
