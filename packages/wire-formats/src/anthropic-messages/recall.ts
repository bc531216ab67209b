import type { ReportedUsage } from "../adapter.ts";
import { isRecord, stringOf } from "../json.ts";
import {
  addUsage,
  declaredTools,
  frozenDeclaration,
  RECALL_TOOL_DESCRIPTION,
  RECALL_TOOL_NAME,
  type RecallCall,
  type RecallFormat,
  type RecallStream,
  recallToolParameters,
  withToolLast,
} from "../recall.ts";

// Recall in Anthropic messages: terse_recall is one more entry of `tools`, a call is a
// `tool_use` content block, its answer a `tool_result` block in the next user turn. In a
// stream, blocks carry an `index` the client's SDK looks its snapshot up by, so the blocks
// the client sees are numbered anew, consecutively, across rounds.

type Json = Record<string, unknown>;

/** The declaration, the same object in every request. */
const RECALL_TOOL: Json = frozenDeclaration({
  name: RECALL_TOOL_NAME,
  description: RECALL_TOOL_DESCRIPTION,
  input_schema: recallToolParameters(),
});

const isToolUse = (block: Json): boolean => block.type === "tool_use";
const isRecallCall = (block: Json): boolean => isToolUse(block) && block.name === RECALL_TOOL_NAME;
const isClientCall = (block: Json): boolean => isToolUse(block) && block.name !== RECALL_TOOL_NAME;

const contentOf = (answer: Json): Json[] => (Array.isArray(answer.content) ? answer.content.filter(isRecord) : []);

const callOf = (block: Json): RecallCall => ({
  id: stringOf(block.id) ?? "",
  args: isRecord(block.input) ? block.input : {},
});

const count = (v: unknown): number => (typeof v === "number" ? v : 0);

/** Anthropic's usage fields for a sum of rounds: input_tokens is the uncached rest. */
const usageFields = (usage: ReportedUsage): Json => ({
  input_tokens: usage.input - usage.cacheRead - usage.cacheWrite,
  cache_creation_input_tokens: usage.cacheWrite,
  cache_read_input_tokens: usage.cacheRead,
  output_tokens: usage.output,
});

/** `answer` less its terse_recall blocks; `tool_use` ends as `end_turn` once no client call is left. */
function withoutRecall(answer: Json): Json {
  const content = contentOf(answer).filter((b) => !isRecallCall(b));
  const ended = answer.stop_reason === "tool_use" && !content.some(isClientCall);
  return { ...answer, content, stop_reason: ended ? "end_turn" : answer.stop_reason };
}

const takesTool = (body: Json): boolean => !declaredTools(body).some((t) => isRecord(t) && t.name === RECALL_TOOL_NAME);

export const messagesRecall: RecallFormat = {
  takesTool,

  // Last, without cache_control: a caller's breakpoint stays on the tool it marked.
  withTool: (body) => (takesTool(body) ? withToolLast(body, RECALL_TOOL) : body),

  calls: (answer) => contentOf(answer).filter(isRecallCall).map(callOf),

  continueWith(request, answer, results) {
    // The API refuses empty text blocks in a request; thinking blocks keep their signature.
    const turn = contentOf(answer).filter((b) => !isClientCall(b) && !(b.type === "text" && b.text === ""));
    const answers = results.map((r) => ({ type: "tool_result", tool_use_id: r.call.id, content: r.text }));
    const messages = Array.isArray(request.messages) ? request.messages : [];
    return {
      ...request,
      messages: [...messages, { role: "assistant", content: turn }, { role: "user", content: answers }],
    };
  },

  withoutRecall,

  merge(earlier, last, usage) {
    // Earlier rounds' client calls were never run (the model was asked again without them).
    const before = earlier.flatMap((a) => contentOf(a).filter((b) => !isToolUse(b)));
    const final = withoutRecall(last);
    const first = earlier[0] ?? last;
    const lastUsage = isRecord(last.usage) ? last.usage : {};
    return {
      ...final,
      id: first.id,
      content: [...before, ...contentOf(final)],
      usage: { ...lastUsage, ...usageFields(usage) },
    };
  },

  stream: () => new MessagesRecallStream(),
};

/** One content block of the round: rebuilt from its events, and where it goes. */
interface Block {
  block: Json;
  /** input_json_delta pieces so far. */
  json: string;
  stopped: boolean;
  /** A tool_use block's events, held until the round's end is known. */
  held?: { raw: string; data: Json }[];
  /** The index the client sees it under, once relayed. */
  index?: number;
}

const sse = (data: Json): string => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;

/** The event as the client is to see it: its own bytes when nothing about it changes. */
function renumbered(raw: string, data: Json, index: number): string {
  return data.index === index ? raw : sse({ ...data, index });
}

function applyDelta(b: Block, delta: Json): void {
  const block = b.block;
  switch (delta.type) {
    case "text_delta":
      block.text = `${stringOf(block.text) ?? ""}${stringOf(delta.text) ?? ""}`;
      break;
    case "thinking_delta":
      block.thinking = `${stringOf(block.thinking) ?? ""}${stringOf(delta.thinking) ?? ""}`;
      break;
    case "signature_delta":
      block.signature = delta.signature;
      break;
    case "input_json_delta":
      b.json += stringOf(delta.partial_json) ?? "";
      break;
    case "citations_delta":
      block.citations = [...(Array.isArray(block.citations) ? block.citations : []), delta.citation];
      break;
  }
}

/** The block complete: its input parsed from the pieces (the API streams `{}` as no piece at all). */
function stop(b: Block): void {
  b.stopped = true;
  if (b.json === "") return;
  try {
    b.block.input = JSON.parse(b.json);
  } catch {
    b.block.input = {};
  }
}

/**
 * Text, thinking and server-tool blocks are relayed as they come; tool_use blocks wait for
 * message_delta (a terse_recall call may follow a client's call). A round with a recall
 * call holds its message_delta and message_stop too: the loop decides whether the
 * answer ends there (`end().release`) or a continuation follows.
 */
class MessagesRecallStream implements RecallStream {
  readonly keepAlive = 'event: ping\ndata: {"type": "ping"}\n\n';

  /** The next index the client is to see: blocks are numbered across rounds. */
  private nextIndex = 0;
  private prior: ReportedUsage | undefined;
  private continuing = false;

  // The round's state.
  private message: Json = {};
  private blocks = new Map<number, Block>();
  private delta: Json | undefined;
  /** message_delta and message_stop of a round with a recall call. */
  private tail: { raw: string; data: Json }[] = [];

  push(raw: string, data: unknown): string {
    if (!isRecord(data)) return raw;
    switch (data.type) {
      case "message_start":
        this.message = isRecord(data.message) ? data.message : {};
        // The client has its message_start already: a continuation's only says its usage.
        return this.continuing ? "" : raw;
      case "content_block_start":
        return this.blockStart(raw, data);
      case "content_block_delta":
      case "content_block_stop":
        return this.blockEvent(raw, data);
      case "message_delta":
        return this.messageDelta(raw, data);
      case "message_stop":
        if (this.tail.length > 0) {
          this.tail.push({ raw, data });
          return "";
        }
        return raw;
      default:
        return raw;
    }
  }

  end(): { calls: RecallCall[]; answer: Json; release: string } {
    // A round cut off before its message_delta is not answered: the upstream failed.
    const calls = this.delta ? this.recallBlocks().map((b) => callOf(b.block)) : [];
    const answer = this.answer();
    if (this.tail.length === 0) return { calls, answer, release: this.delta ? "" : this.releaseHeld(false) };
    const [delta, ...rest] = this.tail;
    const clientCalls = [...this.blocks.values()].some((b) => isClientCall(b.block));
    const release =
      this.releaseHeld(false) +
      (delta ? this.finalDelta(delta.raw, delta.data, !clientCalls) : "") +
      rest.map((e) => e.raw).join("");
    return { calls, answer, release };
  }

  nextRound(prior: ReportedUsage): void {
    this.prior = prior;
    this.continuing = true;
    this.message = {};
    this.blocks = new Map();
    this.delta = undefined;
    this.tail = [];
  }

  private blockStart(raw: string, data: Json): string {
    const start = isRecord(data.content_block) ? data.content_block : {};
    const b: Block = { block: structuredClone(start), json: "", stopped: false };
    this.blocks.set(count(data.index), b);
    if (isToolUse(start)) {
      b.held = [{ raw, data }];
      return "";
    }
    b.index = this.nextIndex++;
    return renumbered(raw, data, b.index);
  }

  private blockEvent(raw: string, data: Json): string {
    const b = this.blocks.get(count(data.index));
    if (!b) return raw;
    if (data.type === "content_block_stop") stop(b);
    else if (isRecord(data.delta)) applyDelta(b, data.delta);
    if (b.held) {
      b.held.push({ raw, data });
      return "";
    }
    return renumbered(raw, data, b.index ?? count(data.index));
  }

  private messageDelta(raw: string, data: Json): string {
    this.delta = data;
    if (this.recallBlocks().length > 0) {
      this.tail = [{ raw, data }];
      return "";
    }
    return this.releaseHeld(true) + this.finalDelta(raw, data, false);
  }

  /** Complete terse_recall blocks (a call cut off mid-input is not answered). */
  private recallBlocks(): Block[] {
    return [...this.blocks.values()].filter((b) => isRecallCall(b.block) && b.stopped);
  }

  /**
   * The client's held tool_use blocks, numbered on from what the client has seen; recall
   * blocks dropped. `sent`: they go out now (else end() offers them, and a continuation
   * that follows instead numbers its blocks from where the client is).
   */
  private releaseHeld(sent: boolean): string {
    let out = "";
    let index = this.nextIndex;
    for (const b of this.blocks.values()) {
      if (!b.held || isRecallCall(b.block)) continue;
      const at = index++;
      out += b.held.map((e) => renumbered(e.raw, e.data, at)).join("");
      if (sent) {
        b.held = undefined;
        b.index = at;
      }
    }
    if (sent) this.nextIndex = index;
    return out;
  }

  /**
   * The round's message_delta as the client is to see it: with the earlier rounds' usage
   * added (input parts too: the SDK's MessageStream takes them from message_delta when
   * present), and `end_turn` where only recall calls asked for a tool.
   */
  private finalDelta(raw: string, data: Json, endTurn: boolean): string {
    const delta = isRecord(data.delta) ? data.delta : {};
    const stop = endTurn && delta.stop_reason === "tool_use";
    if (!this.prior && !stop) return raw;
    const usage = isRecord(data.usage) ? data.usage : {};
    const summed = this.prior ? { ...usage, ...usageFields(addUsage(this.prior, this.roundUsage())) } : usage;
    return sse({ ...data, delta: stop ? { ...delta, stop_reason: "end_turn" } : delta, usage: summed });
  }

  /** The round's own usage: message_delta's counts where it gives them, else message_start's. */
  private roundUsage(): ReportedUsage {
    const start = isRecord(this.message.usage) ? this.message.usage : {};
    const end = isRecord(this.delta?.usage) ? this.delta.usage : {};
    const u = { ...start, ...end };
    const cacheRead = count(u.cache_read_input_tokens);
    const cacheWrite = count(u.cache_creation_input_tokens);
    return {
      input: count(u.input_tokens) + cacheRead + cacheWrite,
      output: count(u.output_tokens),
      cacheRead,
      cacheWrite,
    };
  }

  /** The round's answer as a messages response body, tool inputs parsed. */
  private answer(): Json {
    const content = [...this.blocks.values()].map((b) => b.block);
    const delta = isRecord(this.delta?.delta) ? this.delta.delta : {};
    const start = isRecord(this.message.usage) ? this.message.usage : {};
    const end = isRecord(this.delta?.usage) ? this.delta.usage : {};
    return {
      ...this.message,
      content,
      stop_reason: delta.stop_reason ?? null,
      stop_sequence: delta.stop_sequence ?? null,
      usage: { ...start, ...end },
    };
  }
}
