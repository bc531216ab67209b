import type { ToolResultMapper } from "../formats/format.ts";
import { Lru } from "../lru.ts";
import { digest, forgetDigests, SeenContent } from "./dedupe.ts";
import { CONTEXT_LEVELS, type ContextLevel } from "./levels.ts";
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
  forgetDigests();
}

interface Step {
  hash: string;
  ref: string;
  visible: string;
}

export function compressContext(
  body: Record<string, unknown>,
  level: ContextLevel,
  mapper: ToolResultMapper,
): { body: Record<string, unknown>; changed: number } {
  const limits = CONTEXT_LEVELS[level];
  const done: Step[] = [];
  let chain: string = level;
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

  const out = mapper(body, (text, ref, command) => {
    const hash = digest(text);
    // The command is part of the key: a cut's marker repeats it.
    const key = digest(`${chain}\n${hash}\n${ref}\n${command ?? ""}`);
    let next = outputs.get(key);
    if (next === undefined) {
      next = compressOne(text, hash, ref, state(), limits, command);
      outputs.set(key, next === text ? null : next);
    } else {
      next ??= text;
      seen?.remember(hash, next, ref);
    }
    done.push({ hash, ref, visible: next });
    chain = key;
    if (next !== text) changed++;
    return next;
  });
  if (seen) states.set(chain, seen);
  return { body: out, changed };
}

/** One result compressed against what the conversation already shows, and recorded there. */
function compressOne(
  text: string,
  hash: string,
  ref: string,
  seen: SeenContent,
  limits: (typeof CONTEXT_LEVELS)[ContextLevel],
  command: string | undefined,
): string {
  let next = text;
  if (text.length >= limits.touchAbove) {
    const earlier = seen.earlierCopy(hash);
    next =
      earlier !== undefined
        ? `[terse: same output as tool result ${earlier} above (${text.length} characters)]`
        : shortenResult(seen.replaceRepeatedRuns(text, limits.minRepeatRun), limits, command);
  }
  seen.remember(hash, next, ref);
  return next;
}
