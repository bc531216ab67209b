// The corpus's agent sessions as one neutral shape (Anthropic-style messages with
// tool_use / tool_result blocks), read at run time from ../shared/corpus, never copied.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "@terse/testkit";

export const CORPUS = join(REPO_ROOT, "..", "shared", "corpus");

export type Block =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: "tool_result"; tool_use_id: string; content: string };
export interface Message {
  role: "user" | "assistant";
  content: Block[];
}
export interface Session {
  name: string;
  source: string;
  system?: string;
  messages: Message[];
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((p) => (typeof p === "object" && p && "text" in p ? String(p.text) : "")).join("\n")
      : "";

/** Appends blocks, merging into the last message when it has the same role (the APIs want turns to alternate). */
function push(messages: Message[], role: Message["role"], blocks: Block[]): void {
  if (blocks.length === 0) return;
  const last = messages.at(-1);
  if (last?.role === role) last.content.push(...blocks);
  else messages.push({ role, content: blocks });
}

function anthropicSessions(dir: string): Session[] {
  return readdirSync(join(CORPUS, dir))
    .filter((f) => f.endsWith(".messages.json"))
    .sort()
    .map((f) => {
      type Raw = { role: Message["role"]; content: unknown }[];
      // A bare list of messages, or `{source, system, messages}` (mini-swe-agent).
      const file = JSON.parse(readFileSync(join(CORPUS, dir, f), "utf8")) as Raw | { system?: string; messages: Raw };
      const raw = Array.isArray(file) ? file : file.messages;
      const system = Array.isArray(file) ? undefined : file.system;
      const messages: Message[] = [];
      for (const m of raw) {
        const blocks: Block[] = typeof m.content === "string" ? [{ type: "text", text: m.content }] : [];
        for (const b of Array.isArray(m.content) ? (m.content as Record<string, unknown>[]) : []) {
          if (b.type === "text") blocks.push({ type: "text", text: String(b.text) });
          if (b.type === "tool_use")
            blocks.push({ type: "tool_use", id: String(b.id), name: String(b.name), input: b.input ?? {} });
          if (b.type === "tool_result")
            blocks.push({ type: "tool_result", tool_use_id: String(b.tool_use_id), content: textOf(b.content) });
        }
        push(messages, m.role, blocks);
      }
      return { name: f.replace(".messages.json", ""), source: dir, ...(system ? { system } : {}), messages };
    });
}

interface SweItem {
  role: string;
  content: unknown;
  action?: string;
  tool_calls?: unknown;
  tool_call_ids?: string[];
}

/**
 * SWE-agent's `history` (the messages it sent). Function-calling runs carry their tool
 * calls; in the others the action is in the text and the next user message is its
 * observation, which becomes that action's tool result (tool "bash", the action as its
 * command), so every run exercises tool-result compression. With `asText`, a run without
 * function calls stays as the agent sent it instead: the action only in the assistant's
 * text, the observation a plain user message (the same messages one for one).
 */
function sweSession(file: string, asText = false): Session {
  const traj = JSON.parse(readFileSync(join(CORPUS, "swe-agent-trajectories", file), "utf8")) as {
    history: SweItem[];
  };
  const messages: Message[] = [];
  let system: string | undefined;
  let pending: string | undefined;
  for (const [i, item] of traj.history.entries()) {
    const text = textOf(item.content);
    if (item.role === "system" && system === undefined) {
      system = text;
    } else if (item.role === "assistant") {
      const calls = typeof item.tool_calls === "string" ? JSON.parse(item.tool_calls) : item.tool_calls;
      const blocks: Block[] = text ? [{ type: "text", text }] : [];
      pending = undefined;
      for (const c of Array.isArray(calls)
        ? (calls as { id: string; function: { name: string; arguments: string } }[])
        : []) {
        const args = c.function.arguments;
        blocks.push({ type: "tool_use", id: c.id, name: c.function.name, input: safeParse(args) });
      }
      if (!asText && !blocks.some((b) => b.type === "tool_use") && item.action?.trim()) {
        pending = `call_${i}`;
        blocks.push({ type: "tool_use", id: pending, name: "bash", input: { command: item.action.trim() } });
      }
      push(messages, "assistant", blocks);
    } else if (item.role === "tool") {
      push(messages, "user", [{ type: "tool_result", tool_use_id: item.tool_call_ids?.[0] ?? "", content: text }]);
    } else if (pending !== undefined) {
      push(messages, "user", [{ type: "tool_result", tool_use_id: pending, content: text }]);
      pending = undefined;
    } else {
      push(messages, "user", [{ type: "text", text }]);
    }
  }
  // A session must open with a user turn.
  if (messages[0]?.role !== "user") messages.unshift({ role: "user", content: [{ type: "text", text: "Begin." }] });
  const source = asText ? "swe-agent-trajectories (text protocol)" : "swe-agent-trajectories";
  return { name: file.replace(".traj", "").slice(0, 60), source, system, messages };
}

function safeParse(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return { raw: s };
  }
}

/**
 * The logs lost some tool results (Claude Code's stream omits a few, e.g. of TodoWrite);
 * every API would reject such a request. A tool call without its result in the next
 * message is dropped, and so is a result without its call, so that every request of the
 * replay is one an agent could have sent.
 */
function repairPairing(s: Session): Session {
  const messages = s.messages.map((m, i) => {
    const next = s.messages[i + 1];
    const prev = s.messages[i - 1];
    const answered = new Set(next?.content.flatMap((b) => (b.type === "tool_result" ? [b.tool_use_id] : [])) ?? []);
    const called = new Set(prev?.content.flatMap((b) => (b.type === "tool_use" ? [b.id] : [])) ?? []);
    const content = m.content.filter((b) =>
      b.type === "tool_use"
        ? next === undefined || answered.has(b.id)
        : b.type === "tool_result"
          ? called.has(b.tool_use_id)
          : true,
    );
    return { role: m.role, content: content.length > 0 ? content : [{ type: "text" as const, text: "(no output)" }] };
  });
  return { ...s, messages };
}

/** The corpus folders the benchmark replays, each reported apart. */
export const FOLDERS = [
  "claude-code-hive-mind",
  "openhands-example",
  "swe-agent-trajectories",
  "mini-swe-agent",
] as const;

/** One folder's sessions (of the Anthropic-shaped ones), as loadSessions gives them. */
export function loadFolder(dir: "claude-code-hive-mind" | "openhands-example" | "mini-swe-agent"): Session[] {
  return anthropicSessions(dir).map(uniqueIds).map(repairPairing);
}

export function loadSessions(): Session[] {
  const swe = readdirSync(join(CORPUS, "swe-agent-trajectories"))
    .filter((f) => f.endsWith(".traj"))
    .sort()
    .map((f) => sweSession(f));
  return [
    ...anthropicSessions("claude-code-hive-mind"),
    ...anthropicSessions("openhands-example"),
    ...swe,
    ...anthropicSessions("mini-swe-agent"),
  ]
    .map(uniqueIds)
    .map(repairPairing);
}

/**
 * Replayed SWE-agent runs reuse tool call ids within a session; an API takes that, but a
 * later result would then be found at its namesake's place (the reference measure and
 * the pairing checks look results up by id). A repeated id is renamed, in its call and
 * in the result right after it: ids are arbitrary, nothing else changes.
 */
function uniqueIds(s: Session): Session {
  const used = new Set<string>();
  let renames = new Map<string, string>();
  const messages = s.messages.map((m) => {
    const next = new Map<string, string>();
    const content = m.content.map((b): Block => {
      if (b.type === "tool_result") {
        const id = renames.get(b.tool_use_id);
        return id ? { ...b, tool_use_id: id } : b;
      }
      if (b.type !== "tool_use") return b;
      let id = b.id;
      for (let n = 2; used.has(id); n++) id = `${b.id}_${n}`;
      used.add(id);
      if (id !== b.id) next.set(b.id, id);
      return id === b.id ? b : { ...b, id };
    });
    if (m.role === "assistant") renames = next;
    return { role: m.role, content };
  });
  return { ...s, messages };
}

/**
 * The SWE-agent runs without function calling (their thought-action and XML modes), as the
 * agent sent them: each observation a plain user message in the run's own template (e.g.
 * the output, then `(Open file: ..)`, `(Current directory: ..)` and `bash-$`). Each with its
 * tool-call form (loadSessions' session of the same run), the reference transcript.
 */
export function loadSweTextProtocol(): { sessions: Session[]; toolForms: Session[] } {
  const files = readdirSync(join(CORPUS, "swe-agent-trajectories"))
    .filter((f) => f.endsWith(".traj"))
    .sort()
    .filter((f) => {
      const traj = JSON.parse(readFileSync(join(CORPUS, "swe-agent-trajectories", f), "utf8")) as {
        history: SweItem[];
      };
      return !traj.history.some((item) => item.role === "tool" || (item.tool_calls && item.tool_calls !== "[]"));
    });
  return {
    sessions: files.map((f) => repairPairing(uniqueIds(sweSession(f, true)))),
    toolForms: files.map((f) => repairPairing(uniqueIds(sweSession(f)))),
  };
}

/** Whether every tool call of the session is one shell command (so it can be sent as a text protocol). */
export const isBashOnly = (s: Session): boolean =>
  s.messages.every((m) =>
    m.content.every(
      (b) =>
        b.type !== "tool_use" || (b.name === "bash" && typeof (b.input as { command?: unknown }).command === "string"),
    ),
  );

/**
 * The session as mini-swe-agent sent it, a text protocol without native tool calls: each
 * assistant turn its THOUGHT text and one fenced ```bash block, each observation the next
 * user message, verbatim (`<returncode>..</returncode><output>..</output>`). The inverse
 * of the corpus's normalisation.
 */
export function asTextProtocol(s: Session): Session {
  const messages = s.messages.map((m): Message => {
    const text = m.content.flatMap((b) => (b.type === "text" ? [b.text] : []));
    if (m.role === "assistant") {
      const commands = m.content.flatMap((b) =>
        b.type === "tool_use" ? [`\`\`\`bash\n${(b.input as { command: string }).command}\n\`\`\``] : [],
      );
      return { role: "assistant", content: [{ type: "text", text: [...text, ...commands].join("\n\n") }] };
    }
    const blocks = m.content.map((b): Block => (b.type === "tool_result" ? { type: "text", text: b.content } : b));
    return { role: "user", content: blocks };
  });
  return { ...s, name: s.name, source: `${s.source} (text protocol)`, messages };
}

/**
 * A bash-only session as Cline (and Roo Code, Kilo Code) sends it in its XML tool protocol:
 * each assistant turn its text and an `<execute_command>` call; each result the next user
 * message as Cline's texts: the heading `[execute_command for '..'] Result:`, the output
 * after Cline's `Command executed.` / `Output:` lines, and the environment details Cline adds to every message (its clock moving a minute
 * a turn). The same messages one for one.
 */
export function asClineXml(s: Session): Session {
  const commandOf = new Map<string, string>();
  const messages = s.messages.map((m, turn): Message => {
    const text = m.content.flatMap((b) => (b.type === "text" ? [b.text] : []));
    if (m.role === "assistant") {
      const calls = m.content.flatMap((b) => (b.type === "tool_use" ? [b] : []));
      const rendered = calls.map((c) => {
        const command = (c.input as { command: string }).command;
        commandOf.set(c.id, command);
        return `<execute_command>\n<command>${command}</command>\n<requires_approval>false</requires_approval>\n</execute_command>`;
      });
      return { role: "assistant", content: [{ type: "text", text: [...text, ...rendered].join("\n\n") }] };
    }
    const blocks = m.content.flatMap((b): Block[] => {
      if (b.type !== "tool_result") return [b];
      // The result's text as the tool form has it (mini-swe-agent's own template kept), so
      // that the reference measure reads the same names in both.
      const output = b.content;
      return [
        { type: "text", text: `[execute_command for '${commandOf.get(b.tool_use_id) ?? ""}'] Result:` },
        { type: "text", text: output === "" ? "Command executed." : `Command executed.\nOutput:\n${output}` },
      ];
    });
    const minute = String(turn % 60).padStart(2, "0");
    const details = `<environment_details>\n# VSCode Visible Files\n(No visible files)\n\n# Current Time\n11/25/2026, 5:${minute}:00 AM (UTC)\n\n# Current Mode\nACT MODE\n</environment_details>`;
    return { role: "user", content: [...blocks, { type: "text", text: details }] };
  });
  return { ...s, source: `${s.source} (Cline's XML protocol)`, messages };
}

/**
 * The session as OpenHands sends it to a model without native function calls (its
 * fn_call_converter): each tool call appended to the assistant's text as a
 * `<function=tool>` block of `<parameter=name>` values, each result the next user message
 * headed `EXECUTION RESULT of [tool]:`. The same messages one for one.
 */
export function asOpenHandsText(s: Session): Session {
  const toolOf = new Map<string, string>();
  const messages = s.messages.map((m): Message => {
    if (m.role === "assistant") {
      const text = m.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n");
      const calls = m.content.flatMap((b) => (b.type === "tool_use" ? [b] : []));
      for (const c of calls) toolOf.set(c.id, c.name);
      const rendered = calls.map((c) => `\n\n${functionCall(c.name, c.input)}`).join("");
      return { role: "assistant", content: [{ type: "text", text: (text + rendered).trimStart() }] };
    }
    const blocks = m.content.map(
      (b): Block =>
        b.type === "tool_result"
          ? { type: "text", text: `EXECUTION RESULT of [${toolOf.get(b.tool_use_id) ?? "function"}]:\n${b.content}` }
          : b,
    );
    return { role: "user", content: blocks };
  });
  return { ...s, source: `${s.source} (text protocol)`, messages };
}

/** A tool call as OpenHands writes it in the text: its arguments as parameters, lists and objects as JSON. */
function functionCall(name: string, input: unknown): string {
  const args = typeof input === "object" && input !== null ? Object.entries(input) : [];
  const value = (v: unknown) =>
    typeof v === "object" && v !== null
      ? JSON.stringify(v)
      : typeof v === "boolean"
        ? v
          ? "True"
          : "False"
        : String(v);
  return `<function=${name}>\n${args.map(([k, v]) => `<parameter=${k}>${value(v)}</parameter>\n`).join("")}</function>`;
}

export function loadMtBench(): string[] {
  return readFileSync(join(CORPUS, "mt-bench-questions", "question.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .flatMap((line) => (JSON.parse(line) as { turns: string[] }).turns);
}
