import type { ToolResultMapper } from "@terse/wire-formats";
import { Lru } from "../lru.ts";
import { digest, forgetDigests, SeenContent } from "./dedupe.ts";
import { CONTEXT_LEVELS, type ContextLevel } from "./levels.ts";
import { nameRecallHandles, recallHandleOf } from "./recall-handles.ts";
import { shortenResult } from "./shorten.ts";

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
 * always compresses the same way), and the state after a request's last result, which
 * the next turn of the same session continues from instead of starting over.
 */

/** Compressed forms remembered (null: unchanged); a few hundred sessions' worth. */
const outputs = new Lru<string | null>(20_000);
/** States a next turn may continue from: one per live session is enough. */
const states = new Lru<SeenContent>(64);

/** Forgets all remembered work: benchmarks start each replayed session cold, as a new process would. */
export function forgetContextWork(): void {
  outputs.clear();
  states.clear();
  trails.length = 0;
  forgetDigests();
}

interface Step {
  hash: string;
  ref: string;
  visible: string;
}

/**
 * A session's last request: its results in order, as sent (text, ref, command) and as
 * compressed (the step, with the chain key after it). The next turn resends them first;
 * each one it finds equal, compared as text, is answered from here, so only what is new
 * in a request is hashed (two SHA-1s per result every turn were most of the library's
 * time on a long history: docs/benchmarks.md, agent sessions).
 */
interface Trail {
  /** The level, and whether cuts name recall handles: what the compressed forms depend on besides the texts. */
  mode: string;
  texts: string[];
  refs: string[];
  commands: (string | undefined)[];
  steps: (Step & { key: string })[];
  chars: number;
}
/** The trails of the sessions seen last, newest first; bounded by count and by the characters they hold. */
const trails: Trail[] = [];
const TRAILS = 64;
const TRAIL_CHARS = 32_000_000;

function trailFor(mode: string, text: string, ref: string): Trail | undefined {
  return trails.find((t) => t.mode === mode && t.refs[0] === ref && t.texts[0] === text);
}

function keepTrail(trail: Trail, replaced: Trail | undefined): void {
  const at = replaced ? trails.indexOf(replaced) : -1;
  if (at >= 0) trails.splice(at, 1);
  trails.unshift(trail);
  let chars = 0;
  for (let i = 0; i < trails.length; i++) {
    chars += trails[i]?.chars ?? 0;
    if (i >= TRAILS || chars > TRAIL_CHARS) {
      trails.length = i;
      break;
    }
  }
}

export interface ContextCompression {
  body: Record<string, unknown>;
  /** How many tool results were changed. */
  changed: number;
  /** With recall on: the original of every result cut, by its recall handle. */
  cuts: Map<string, string>;
}

export function compressContext(
  body: Record<string, unknown>,
  level: ContextLevel,
  mapper: ToolResultMapper,
  recall = false,
): ContextCompression {
  const limits = CONTEXT_LEVELS[level];
  const mode = recall ? `${level}+recall` : level;
  const done: Step[] = [];
  const cuts = new Map<string, string>();
  let chain: string = mode;
  let seen: SeenContent | undefined;
  let changed = 0;

  /** The state after the results so far: continued from the last turn's, or rebuilt from them. */
  const state = (): SeenContent => {
    if (seen) return seen;
    seen = states.take(chain);
    if (!seen) {
      seen = new SeenContent();
      for (const s of done) seen.remember(s.hash, s.visible, s.ref);
    }
    return seen;
  };

  const trail: Trail = { mode, texts: [], refs: [], commands: [], steps: [], chars: 0 };
  const cut = (hash: string, text: string) => {
    if (recall) cuts.set(recallHandleOf(hash), text);
    changed++;
  };
  let previous: Trail | undefined;
  /** Still on the previous turn's results: the next one may be answered from its trail. */
  let onTrail = true;

  const out = mapper(body, (text, ref, command) => {
    const i = trail.texts.length;
    if (i === 0) previous = trailFor(mode, text, ref);
    trail.texts.push(text);
    trail.refs.push(ref);
    trail.commands.push(command);
    trail.chars += text.length;
    const known = onTrail ? previous?.steps[i] : undefined;
    if (
      known !== undefined &&
      previous?.texts[i] === text &&
      previous.refs[i] === ref &&
      previous.commands[i] === command
    ) {
      trail.steps.push(known);
      done.push(known);
      chain = known.key;
      if (known.visible !== text) cut(known.hash, text);
      return known.visible;
    }
    onTrail = false;
    const hash = digest(text);
    // The command is part of the key: a cut's marker repeats it.
    const key = digest(`${chain}\n${hash}\n${ref}\n${command ?? ""}`);
    let next = outputs.get(key);
    if (next === undefined) {
      next = compressOne(text, hash, ref, state(), limits, command, recall);
      outputs.set(key, next === text ? null : next);
    } else {
      next ??= text;
      seen?.remember(hash, next, ref);
    }
    done.push({ hash, ref, visible: next });
    trail.steps.push({ hash, ref, visible: next, key });
    chain = key;
    if (next !== text) cut(hash, text);
    return next;
  });
  if (seen) states.set(chain, seen);
  if (trail.texts.length > 0) keepTrail(trail, previous);
  return { body: out, changed, cuts };
}

/** One result compressed against what the conversation already shows, and recorded there. */
function compressOne(
  text: string,
  hash: string,
  ref: string,
  seen: SeenContent,
  limits: (typeof CONTEXT_LEVELS)[ContextLevel],
  command: string | undefined,
  recall: boolean,
): string {
  let next = text;
  if (text.length >= limits.touchAbove) {
    const earlier = seen.earlierCopy(hash);
    next =
      earlier !== undefined
        ? `[terse: same output as tool result ${earlier} above (${text.length} characters)]`
        : shortenResult(seen.replaceRepeatedRuns(text, limits.minRepeatRun), limits, command);
    if (recall && next !== text) next = nameRecallHandles(text, next, recallHandleOf(hash));
  }
  // What the conversation shows is remembered, handles and all: a later repeat of it
  // is found in the shown text, never in a marker.
  seen.remember(hash, next, ref);
  return next;
}
