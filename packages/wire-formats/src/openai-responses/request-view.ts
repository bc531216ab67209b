import { withField } from "../json.ts";
import { isObservationAfter } from "../observation.ts";
import {
  Actions,
  fromLastModelTurn,
  type ItemWalker,
  isRecord,
  type RequestFormat,
  type ResultTransform,
} from "../request-view.ts";

// OpenAI Responses API: `instructions` is the system slot; `input` is a string or a list
// of items: messages (role user/system/developer/assistant, content a string or parts of
// type input_text / output_text), `function_call` (call_id, arguments) and
// `function_call_output` (call_id, output: the tool result).
//
// The instruction is appended to `instructions` (created when the caller sent none, as
// Codex CLI 0.169 does: its own prompt is `developer` messages in `input`): with
// `previous_response_id` the earlier turns' instructions are not carried over upstream,
// so nothing piles up, and the text stays the same from turn to turn while the level
// does, so the cached prefix holds.

type Item = Record<string, unknown>;

const itemsOf = (body: Record<string, unknown>): unknown[] =>
  Array.isArray(body.input)
    ? body.input
    : typeof body.input === "string"
      ? [{ role: "user", content: body.input }]
      : [];

const PROMPT_ROLES = new Set(["user", "system", "developer"]);
const TEXT_PART_TYPES = new Set(["input_text", "output_text", "text"]);

const isMessage = (item: Item): boolean =>
  (item.type === undefined || item.type === "message") && typeof item.role === "string";

/** Text of a message's content: a string, or its text parts. */
function textOfContent(content: unknown): string {
  if (typeof content === "string") return content;
  return textsOfContent(content).join("\n");
}

/** The texts of a message's content: the string, or each text part's. */
function textsOfContent(content: unknown): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  return content
    .filter((p) => isRecord(p) && TEXT_PART_TYPES.has(String(p.type)) && typeof p.text === "string")
    .map((p) => (p as { text: string }).text);
}

/** `f` over a content string or each text part; the same value back when nothing changed. */
function mapContent(content: unknown, f: (text: string) => string): unknown {
  if (typeof content === "string") return f(content);
  if (!Array.isArray(content)) return content;
  let touched = false;
  const parts = content.map((p) => {
    if (!isRecord(p) || !TEXT_PART_TYPES.has(String(p.type)) || typeof p.text !== "string") return p;
    const next = f(p.text);
    if (next === p.text) return p;
    touched = true;
    return { ...p, text: next };
  });
  return touched ? parts : content;
}

/** The body with `items` as its input (a string input that was not rewritten stays a string). */
function withItems(body: Record<string, unknown>, items: unknown[], original: unknown[]): Record<string, unknown> {
  if (items.every((item, i) => item === original[i])) return body;
  return { ...body, input: items };
}

/** An item the model wrote: an assistant message, a tool call, its reasoning. */
const MODEL_ITEM_TYPES = new Set([
  "function_call",
  "reasoning",
  "custom_tool_call",
  "local_shell_call",
  "web_search_call",
]);
const isModelItem = (item: unknown): boolean =>
  isRecord(item) && ((isMessage(item) && item.role === "assistant") || MODEL_ITEM_TYPES.has(String(item.type)));

export const openaiResponsesFormat: RequestFormat = {
  promptCache: "automatic",

  newestTurn(body) {
    const items = itemsOf(body);
    // With previous_response_id the earlier turns are the provider's, not in `input`:
    // every item sent is new.
    return fromLastModelTurn(items, isModelItem) ?? (typeof body.previous_response_id === "string" ? items : undefined);
  },

  structuredOutput(body) {
    const text = isRecord(body.text) ? body.text : {};
    const format = isRecord(text.format) ? text.format.type : undefined;
    if (format === "json_schema" || format === "json_object") return `structured output (text.format ${format})`;
    const choice = body.tool_choice;
    if (choice === "required" || (isRecord(choice) && choice.type !== "auto" && choice.type !== "none")) {
      return "structured output (tool_choice forces a tool call)";
    }
    return null;
  },

  latestUserText(body) {
    const items = itemsOf(body);
    for (let i = items.length - 1; i >= 0; i--) {
      const item = items[i];
      if (!isRecord(item) || !isMessage(item) || item.role !== "user") continue;
      const texts = textsOfContent(item.content);
      // An observation is the agent's command output, not what the user asked.
      const before = items[i - 1];
      const action =
        isRecord(before) && isMessage(before) && before.role === "assistant"
          ? textOfContent(before.content)
          : undefined;
      if (!isObservationAfter(texts, action)) return texts.join("\n");
    }
    return "";
  },

  withInstruction(body, instruction) {
    const own = typeof body.instructions === "string" && body.instructions !== "" ? `${body.instructions}\n\n` : "";
    return withField(body, "instructions", `${own}${instruction}`);
  },

  inputParts(body) {
    return [
      ...(typeof body.instructions === "string" ? [body.instructions] : []),
      ...itemsOf(body),
      ...(Array.isArray(body.tools) ? [body.tools] : []),
    ];
  },

  mapPromptTexts(body, f) {
    const original = itemsOf(body);
    const items = original.map((item) => {
      if (!isRecord(item) || !isMessage(item) || !PROMPT_ROLES.has(String(item.role))) return item;
      const content = mapContent(item.content, f);
      return content === item.content ? item : { ...item, content };
    });
    const next = withItems(body, items, original);
    if (typeof body.instructions !== "string") return next;
    const instructions = f(body.instructions);
    return instructions === body.instructions ? next : { ...next, instructions };
  },

  toolResults: {
    items: itemsOf,
    withItems,
    walker: () => new ItemsWalker(),
  },
};

class ItemsWalker implements ItemWalker {
  constructor(private readonly actions = new Actions()) {}

  fork(): ItemWalker {
    return new ItemsWalker(new Actions(this.actions));
  }

  map(item: unknown, i: number, transform?: ResultTransform): unknown {
    if (!isRecord(item)) return item;
    if (item.type === "function_call") {
      this.actions.assistant("", [{ id: item.call_id, name: item.name, input: item.arguments }]);
      return item;
    }
    if (isMessage(item) && item.role === "assistant") {
      this.actions.assistant(textOfContent(item.content), []);
      return item;
    }
    if (isMessage(item) && item.role === "user") {
      this.actions.userMessage(textsOfContent(item.content).length);
      const content = transform
        ? mapContent(item.content, (text) => this.actions.observation(text, `#${i}`, transform))
        : item.content;
      this.actions.answered();
      return content === item.content ? item : { ...item, content };
    }
    if (item.type !== "function_call_output" || !transform) return item;
    const ref = typeof item.call_id === "string" ? item.call_id : `#${i}`;
    const command = this.actions.commandOf(ref);
    const output = mapContent(item.output, (text) => transform(text, ref, command));
    return output === item.output ? item : { ...item, output };
  }
}
