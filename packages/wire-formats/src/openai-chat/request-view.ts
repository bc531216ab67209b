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

// OpenAI chat completions: `messages` with system/developer/user/assistant/tool roles.
//
// The instruction goes in as a system message AFTER the last message, not at the top:
// OpenAI's prompt cache is the longest shared prefix, and smart detect may pick another
// level on the next turn; at the end, the caller's whole history stays a shared prefix
// whatever level each turn gets. System messages are valid anywhere in the list.

const messagesOf = (body: Record<string, unknown>): unknown[] => (Array.isArray(body.messages) ? body.messages : []);

export const openaiFormat: RequestFormat = {
  promptCache: "automatic",

  newestTurn(body) {
    return fromLastModelTurn(messagesOf(body), (m) => isRecord(m) && m.role === "assistant");
  },

  structuredOutput(body) {
    const format = isRecord(body.response_format) ? body.response_format.type : undefined;
    if (format === "json_schema" || format === "json_object") return `structured output (response_format ${format})`;
    const choice = body.tool_choice;
    if (
      choice === "required" ||
      (isRecord(choice) && (choice.type === "function" || choice.type === "allowed_tools"))
    ) {
      return "structured output (tool_choice forces a tool call)";
    }
    return null;
  },

  latestUserText(body) {
    const messages = messagesOf(body);
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i];
      if (!isRecord(m) || m.role !== "user") continue;
      const texts = textsOf(m.content);
      // An observation is the agent's command output, not what the user asked.
      const before = messages[i - 1];
      const action = isRecord(before) && before.role === "assistant" ? textOf(before.content) : undefined;
      if (!isObservationAfter(texts, action)) return texts.join("\n");
    }
    return "";
  },

  withInstruction(body, instruction) {
    return { ...body, messages: [...messagesOf(body), { role: "system", content: instruction }] };
  },

  inputParts(body) {
    return [...messagesOf(body), ...(Array.isArray(body.tools) ? [body.tools] : [])];
  },

  mapPromptTexts(body, f) {
    const messages = messagesOf(body).map((m) => {
      if (!isRecord(m) || (m.role !== "user" && m.role !== "system" && m.role !== "developer")) return m;
      const content = mapTextContent(m.content, f);
      return content === m.content ? m : { ...m, content };
    });
    return { ...body, messages };
  },

  toolResults: {
    items: messagesOf,
    withItems: (body, messages) => ({ ...body, messages }),
    walker: () => new ChatWalker(),
  },
};

class ChatWalker implements ItemWalker {
  constructor(private readonly actions = new Actions()) {}

  fork(): ItemWalker {
    return new ChatWalker(new Actions(this.actions));
  }

  map(m: unknown, i: number, transform?: ResultTransform): unknown {
    if (!isRecord(m)) return m;
    if (m.role === "assistant") {
      const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
      this.actions.assistant(
        textOf(m.content),
        calls.map((c) => ({
          id: isRecord(c) ? c.id : undefined,
          name: isRecord(c) && isRecord(c.function) ? c.function.name : undefined,
          input: isRecord(c) && isRecord(c.function) ? c.function.arguments : undefined,
        })),
      );
      return m;
    }
    if (m.role === "user") {
      this.actions.userMessage(textsOf(m.content).length);
      const content = transform
        ? mapTextContent(m.content, (text) => this.actions.observation(text, `#${i}`, transform))
        : m.content;
      this.actions.answered();
      return content === m.content ? m : { ...m, content };
    }
    if (m.role !== "tool" || !transform) return m;
    const ref = typeof m.tool_call_id === "string" ? m.tool_call_id : `#${i}`;
    const command = this.actions.commandOf(ref);
    const content = mapTextContent(m.content, (text) => transform(text, ref, command));
    return content === m.content ? m : { ...m, content };
  }
}
