import { isRecord, mapTextContent, type RequestFormat, textOf } from "./format.ts";

// OpenAI chat completions: `messages` with system/developer/user/assistant/tool roles.
//
// The instruction goes in as a system message AFTER the last message, not at the top:
// OpenAI's prompt cache is the longest shared prefix, and smart detect may pick another
// level on the next turn; at the end, the caller's whole history stays a shared prefix
// whatever level each turn gets. System messages are valid anywhere in the list.

const messagesOf = (body: Record<string, unknown>): unknown[] => (Array.isArray(body.messages) ? body.messages : []);

export const openaiFormat: RequestFormat = {
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
      if (isRecord(m) && m.role === "user") return textOf(m.content);
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

  mapToolResults(body, transform) {
    const messages = messagesOf(body).map((m, i) => {
      if (!isRecord(m) || m.role !== "tool") return m;
      const ref = typeof m.tool_call_id === "string" ? m.tool_call_id : `#${i}`;
      const content = mapTextContent(m.content, (text) => transform(text, ref));
      return content === m.content ? m : { ...m, content };
    });
    return { ...body, messages };
  },
};
