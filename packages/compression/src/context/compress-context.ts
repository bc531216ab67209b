import { holdsEncodedData, splitToolOutput, type ToolResultMapper } from "@terse/wire-formats";
import { Lru } from "../lru.ts";
import { countContentTokens } from "../tokens.ts";
import { digest, digestedChars, forgetDigests, SeenContent } from "./dedupe.ts";
import { CONTEXT_LEVELS, type ContextLevel } from "./levels.ts";
import { nameRecallHandles, recallHandleOf } from "./recall-handles.ts";
import { shortenResult } from "./shorten.ts";
import {
  forgetTrails,
  itemDone,
  keepTrail,
  type Trail,
  trailChars,
  trailFrom,
  trailResent,
  trailStartingWith,
} from "./trail.ts";

/**
 * Tier 1 context compression over the tool results of a request, in conversation order:
 * 1. a result identical to an earlier one becomes a reference to it;
 * 2. runs of lines an earlier result already shows become references;
 * 3. what is still long is shortened by its content (shorten.ts).
 * The compressed form of a result depends only on it and the results before it, so
 * consecutive requests of one agent session keep sharing their prefix and the
 * provider's prompt cache keeps hitting. Messages are never removed or reordered and
 * ids never change, so tool-call / tool-result pairing stays as the caller had it.
 *
 * With recall on, every cut names the handle of its original (recall-handles.ts) and
 * the originals cut are returned, for the caller to keep where the model can fetch them.
 *
 * An agent resends its history every turn, so the work is remembered: the compressed
 * form of each result under a chain digest of everything before it (the same history
 * always compresses the same way), the state after a request's last result, and the
 * request itself (trail.ts), which the next turn of the same session continues from:
 * the items it resends are answered from there, compared as values, and only the new
 * ones are walked. Where a session's items were not resent as they were, its results
 * still are: each one found equal to the last request's, compared as text, is answered
 * from that request's trail, so only what is new is hashed.
 */

/**
 * Compressed forms remembered (null: unchanged); a few hundred sessions' worth, and at
 * most OUTPUT_CHARS characters of keys and forms (a cut 1 MB log's form lists up to 64 KB
 * of names: 20,000 of them would hold gigabytes).
 */
const OUTPUT_CHARS = 24_000_000;
const outputs = new Lru<string | null>(20_000, OUTPUT_CHARS, (form, key) => key.length + (form?.length ?? 0));
/** States a next turn may continue from: one per live session is enough; each holds what its session shows. */
const STATE_CHARS = 32_000_000;
const states = new Lru<SeenContent>(64, STATE_CHARS, (state) => state.chars);

/** Forgets all remembered work: benchmarks start each replayed session cold, as a new process would. */
export function forgetContextWork(): void {
  outputs.clear();
  states.clear();
  forgetTrails();
  forgetDigests();
}

/** Characters the remembered work holds, by store: each bounded (OUTPUT_CHARS, STATE_CHARS, trail.ts, dedupe.ts). */
export function contextWorkHeld(): { forms: number; states: number; trails: number; digests: number } {
  return { forms: outputs.chars, states: states.chars, trails: trailChars(), digests: digestedChars() };
}

export function contextWorkChars(): number {
  const held = contextWorkHeld();
  return held.forms + held.states + held.trails + held.digests;
}

export interface ContextCompression {
  body: Record<string, unknown>;
  /** How many tool results were changed. */
  changed: number;
  /** Tokens of the items changed, less those of what they became. */
  tokensSaved: number;
  /** With recall on: the original of every result cut, by its recall handle. */
  cuts: Map<string, string>;
}

export function compressContext(
  body: Record<string, unknown>,
  level: ContextLevel,
  mapper: ToolResultMapper,
  recall = false,
): ContextCompression {
  const mode = recall ? `${level}+recall` : level;
  const items = mapper.items(body);
  const resent = trailResent(mode, items);
  let previous = resent?.trail;
  const shared = resent?.shared ?? 0;
  const trail = trailFrom(mode, items, previous, shared);

  let walker = previous && shared === previous.items.length ? previous.walker?.fork() : undefined;
  if (!walker) {
    walker = mapper.walker();
    for (let i = 0; i < shared; i++) walker.map(items[i], i);
  }
  const next: unknown[] = new Array(items.length);
  for (let i = 0; i < shared; i++) next[i] = trail.outputs[i] ?? items[i];

  const results = new ResultCompression(trail, CONTEXT_LEVELS[level], recall, () => {
    previous ??= trailStartingWith(mode, trail.texts[0] as string, trail.refs[0] as string);
    return previous;
  });
  let saved = trail.savedAfter[shared - 1] ?? 0;
  for (let i = shared; i < items.length; i++) {
    const item = items[i];
    const out = walker.map(item, i, (text, ref, command) => results.transform(text, ref, command));
    next[i] = out;
    if (out !== item) saved += countContentTokens(item) - countContentTokens(out);
    itemDone(trail, item, out, saved);
  }
  trail.walker = walker;
  results.finish();
  if (trail.texts.length > 0) keepTrail(trail, previous);

  let changed = 0;
  const cuts = new Map<string, string>();
  for (const [r, step] of trail.steps.entries()) {
    if (step.handle === undefined) continue;
    changed++;
    if (recall) cuts.set(step.handle, trail.texts[r] as string);
  }
  return { body: changed > 0 ? mapper.withItems(body, next, items) : body, changed, tokensSaved: saved, cuts };
}

/**
 * The results of one request compressed in order, continuing `trail`'s: each one the
 * previous request of the session (found once the first result is known, where the items
 * did not find it) had at the same place, compared as text, is answered from it.
 */
class ResultCompression {
  private chain: string;
  private seen: SeenContent | undefined;
  /** Still on the previous request's results: the next one may be answered from its trail. */
  private onTrail = true;

  constructor(
    private readonly trail: Trail,
    private readonly limits: (typeof CONTEXT_LEVELS)[ContextLevel],
    private readonly recall: boolean,
    private readonly previous: () => Trail | undefined,
  ) {
    this.chain = trail.steps.at(-1)?.key ?? trail.mode;
  }

  transform(text: string, ref: string, command: string | undefined): string {
    const trail = this.trail;
    const i = trail.texts.length;
    trail.texts.push(text);
    trail.refs.push(ref);
    trail.commands.push(command);
    const previous = this.onTrail ? this.previous() : undefined;
    const known = previous?.steps[i];
    if (
      known !== undefined &&
      previous?.texts[i] === text &&
      previous.refs[i] === ref &&
      previous.commands[i] === command
    ) {
      trail.steps.push(known);
      this.chain = known.key;
      return known.visible;
    }
    this.onTrail = false;
    const result = resultOf(text, ref, command);
    const { hash, outputHash } = result;
    // The command is part of the key: a cut's marker repeats it.
    const key = digest(`${this.chain}\n${hash}\n${ref}\n${command ?? ""}`);
    let visible = outputs.get(key);
    if (visible === undefined) {
      visible = compressOne(result, this.state(), this.limits, this.recall);
      outputs.set(key, visible === text ? null : visible);
    } else {
      visible ??= text;
      this.seen?.remember(outputHash, visible, ref);
    }
    trail.steps.push({
      hash,
      outputHash,
      ref,
      visible,
      key,
      handle: visible === text ? undefined : recallHandleOf(hash),
    });
    this.chain = key;
    return visible;
  }

  /** Keeps the state after the last result for the session's next request. */
  finish(): void {
    if (this.seen) states.set(this.chain, this.seen);
  }

  /** The state after the results so far: continued from the last request's, or rebuilt from them. */
  private state(): SeenContent {
    if (this.seen) return this.seen;
    this.seen = states.take(this.chain);
    if (!this.seen) {
      this.seen = new SeenContent();
      for (const s of this.trail.steps) this.seen.remember(s.outputHash, s.visible, s.ref);
    }
    return this.seen;
  }
}

/**
 * A new tool result as compression reads it: its output, the report of the run a tool
 * puts before it (Codex CLI's, with a new chunk id each run) and what an agent puts after
 * it (OpenHands' exit code and directory, Claude Code's reminders, and what a person typed
 * in the output's place or after it; wire-formats' tool-output.ts), both kept as sent (""
 * where there is none). Repeats are found, runs of
 * known lines replaced and the rest shortened in the output alone, so neither hides a
 * repeat nor is folded into a run of lines, and a view's lines are numbered from the
 * output's first.
 */
interface NewResult {
  text: string;
  hash: string;
  ref: string;
  command: string | undefined;
  report: string;
  output: string;
  trailer: string;
  /** What a later result repeats it by: the digest of its output. */
  outputHash: string;
}

function resultOf(text: string, ref: string, command: string | undefined): NewResult {
  const hash = digest(text);
  const split = splitToolOutput(text);
  if (!split) return { text, hash, ref, command, report: "", output: text, trailer: "", outputHash: hash };
  const { report, output, trailer } = split;
  return { text, hash, ref, command, report, output, trailer, outputHash: digest(output) };
}

/** One result compressed against what the conversation already shows, and recorded there under its output's digest. */
function compressOne(
  r: NewResult,
  seen: SeenContent,
  limits: (typeof CONTEXT_LEVELS)[ContextLevel],
  recall: boolean,
): string {
  let next = r.text;
  // A result with no output (all of it the agent's lines or a person's words) is kept as sent, and is no repeat of another.
  if (r.text.length >= limits.touchAbove && r.output.length > 0) {
    const earlier = seen.earlierCopy(r.outputHash);
    let output = r.output;
    if (earlier !== undefined)
      output = `[terse: same output as tool result ${earlier} above (${r.output.length} characters)]`;
    // Encoded data (an image's or a file's base64) is never cut, nor are its lines made
    // references: any part of it decodes to a broken file. Only a whole repeat is one.
    else if (!holdsEncodedData(r.output))
      output = shortenResult(seen.replaceRepeatedRuns(r.output, limits.minRepeatRun), {
        limits,
        command: r.command,
        shown: seen.names,
      });
    if (output !== r.output) next = r.report + output + r.trailer;
    if (recall && next !== r.text) next = nameRecallHandles(r.text, next, recallHandleOf(r.hash));
    // Compression never makes a result longer: where its markers, named, cost all it saved, it stays whole.
    if (next.length >= r.text.length) next = r.text;
  }
  // What the conversation shows is remembered, handles and all: a later repeat of it
  // is found in the shown text, never in a marker.
  seen.remember(r.outputHash, next, r.ref);
  return next;
}
