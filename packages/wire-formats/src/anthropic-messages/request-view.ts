import { withField } from "../json.ts";
import { isObservationAfter } from "../observation.ts";
import {
  Actions,
  fromLastModelTurn,
  type ItemWalker,
  isRecord,
  mapTextContent,
  type RequestFormat,
  type ResultTransform,
  textOf,
  textsOf,
} from "../request-view.ts";

// Anthropic messages: a top-level `system` (string or text blocks) and `messages` with
// text / tool_use / tool_result blocks.
//
// The instruction is appended to `system` as a block of its own, after the caller's
// blocks: every `cache_control` breakpoint stays on the block it was on, and the prefix
// it caches (tools, then system up to it) is unchanged. A string system prompt becomes
// one text block with the same text.

const messagesOf = (body: Record<string, unknown>): unknown[] => (Array.isArray(body.messages) ? body.messages : []);

function systemBlocks(system: unknown): unknown[] {
  if (typeof system === "string") return system === "" ? [] : [{ type: "text", text: system }];
  return Array.isArray(system) ? system : [];
}

export const anthropicFormat: RequestFormat = {
  promptCache: "marked",

  newestTurn(body) {
    return fromLastModelTurn(messagesOf(body), (m) => isRecord(m) && m.role === "assistant");
  },

  structuredOutput(body) {
    const choice = body.tool_choice;
    if (isRecord(choice) && (choice.type === "tool" || choice.type === "any"))
      return "structured output (tool_choice forces a tool call)";
    const format = isRecord(body.output_format) ? body.output_format.type : undefined;
    if (format === "json_schema") return "structured output (output_format json_schema)";
    return null;
  },

  latestUserText(body) {
    const messages = messagesOf(body);
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i];
      if (isRecord(m) && m.role === "user") {
        const texts = textsOf(m.content, ["tool_result"]);
        // An observation is the agent's command output, not what the user asked.
        const before = messages[i - 1];
        const action =
          isRecord(before) && before.role === "assistant" ? textOf(before.content, ["tool_use"]) : undefined;
        if (isObservationAfter(texts, action)) continue;
        const text = texts.join("\n");
        if (text !== "" || typeof m.content === "string") return text;
      }
    }
    return "";
  },

  withInstruction(body, instruction) {
    return withField(body, "system", [...systemBlocks(body.system), { type: "text", text: instruction }]);
  },

  inputParts(body) {
    // System blocks one by one: the instruction appended as a block leaves the others shared.
    const system = Array.isArray(body.system) ? body.system : [body.system ?? ""];
    return [...system, ...messagesOf(body), ...(Array.isArray(body.tools) ? [body.tools] : [])];
  },

  mapPromptTexts(body, f) {
    const messages = messagesOf(body).map((m) => {
      if (!isRecord(m) || m.role !== "user") return m;
      // Text blocks only: tool_result blocks are not typed "text", so they are left alone.
      const content = mapTextContent(m.content, f);
      return content === m.content ? m : { ...m, content };
    });
    const system = body.system === undefined ? undefined : mapTextContent(body.system, f);
    return system === undefined ? { ...body, messages } : { ...body, system, messages };
  },

  toolResults: {
    items: messagesOf,
    withItems: (body, messages) => ({ ...body, messages }),
    walker: () => new MessagesWalker(),
  },
};

class MessagesWalker implements ItemWalker {
  constructor(private readonly actions = new Actions()) {}

  fork(): ItemWalker {
    return new MessagesWalker(new Actions(this.actions));
  }

  map(m: unknown, i: number, transform?: ResultTransform): unknown {
    if (!isRecord(m)) return m;
    if (m.role === "assistant") {
      const blocks = Array.isArray(m.content) ? m.content.filter(isRecord) : [];
      this.actions.assistant(
        textOf(m.content, ["tool_use"]),
        blocks.filter((b) => b.type === "tool_use").map((b) => ({ id: b.id, name: b.name, input: b.input })),
      );
      return m;
    }
    if (m.role !== "user") return m;
    if (typeof m.content !== "string" && !Array.isArray(m.content)) return m;
    this.actions.userMessage(textsOf(m.content, ["tool_result"]).length);
    const next = transform ? this.userMessage(m, `#${i}`, transform) : m;
    this.actions.answered();
    return next;
  }

  /** A user message with its observation or tool results transformed. */
  private userMessage(m: Record<string, unknown>, ref: string, transform: ResultTransform): unknown {
    if (typeof m.content === "string") {
      const content = this.actions.observation(m.content, ref, transform);
      return content === m.content ? m : { ...m, content };
    }
    let touched = false;
    const blocks = (m.content as unknown[]).map((b: unknown) => {
      if (isRecord(b) && b.type === "text" && typeof b.text === "string") {
        const text = this.actions.observation(b.text, ref, transform);
        if (text === b.text) return b;
        touched = true;
        return { ...b, text };
      }
      if (!isRecord(b) || b.type !== "tool_result") return b;
      const id = String(b.tool_use_id ?? "");
      const command = this.actions.commandOf(id);
      const content = mapTextContent(b.content, (text) => transform(text, id, command));
      if (content === b.content) return b;
      touched = true;
      return { ...b, content };
    });
    return touched ? { ...m, content: blocks } : m;
  }
}
