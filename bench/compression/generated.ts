import { seededRandom } from "@terse/testkit";
// Sessions with 100 KB to 1 MB tool results (or 10-100 KB: `MID`), made from the corpus's
// own content: Claude Code caps its output near 30,000 characters, so the corpus has none
// this large, and few from 10,000 up. Each
// takes a real session and grows some of its real results into a build log, a test run
// or a JSON dump of that size, built from real lines and objects of the corpus (a
// seeded generator, so every run of the benchmark sees the same sessions). The real
// result's own lines stay, split around the grown middle: what the agent later used is
// still in there somewhere, as in a real long log.
import type { Block, Session } from "./corpus.ts";

/** Sizes the grown results are drawn from, in characters. */
export interface Band {
  min: number;
  max: number;
}
/** The sizes Claude Code's own cap keeps out of the corpus. */
export const LARGE: Band = { min: 100_000, max: 1_000_000 };
/**
 * The sizes of the unseen SWE-agent sessions (results up to 100,000 characters),
 * where a cut's index is small beside what it stands for.
 */
export const MID: Band = { min: 10_000, max: 100_000 };
/** Results grown per session: enough that most requests carry one. */
const GROWN_PER_SESSION = 4;

interface Pools {
  log: string[];
  test: string[];
  errors: string[];
  objects: unknown[];
}

function results(sessions: Session[]): string[] {
  return sessions.flatMap((s) =>
    s.messages.flatMap((m) => m.content.flatMap((b) => (b.type === "tool_result" ? [b.content] : []))),
  );
}

function objectsIn(value: unknown, out: unknown[]): void {
  if (Array.isArray(value)) for (const v of value) objectsIn(v, out);
  else if (typeof value === "object" && value !== null) {
    const size = JSON.stringify(value).length;
    if (size > 80 && size < 3_000) out.push(value);
    for (const v of Object.values(value)) objectsIn(v, out);
  }
}

function pools(sessions: Session[]): Pools {
  const lines = results(sessions)
    .flatMap((r) => r.split("\n"))
    .filter((l) => l.trim().length > 10 && l.length < 300);
  const objects: unknown[] = [];
  for (const r of results(sessions)) {
    try {
      objectsIn(JSON.parse(r), objects);
    } catch {
      // not JSON
    }
  }
  return {
    log: lines.filter((l) => /\[(INFO|WARN|DEBUG)\]|\d\d:\d\d:\d\d/.test(l)),
    test: lines.filter((l) => /\b(pass(ed)?|ok|PASS|test|✓|✔)\b/i.test(l)),
    errors: lines.filter((l) => /\b(error|failed|exception)\b/i.test(l)),
    objects,
  };
}

function grow(original: string, kind: number, size: number, p: Pools, rnd: () => number): string {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  if (kind === 2 && p.objects.length > 0) {
    const items: unknown[] = [];
    let chars = 0;
    while (chars < size) {
      const item = pick(p.objects);
      items.push(item);
      chars += JSON.stringify(item, null, 2).length;
    }
    return JSON.stringify({ source: original, count: items.length, items }, null, 2);
  }
  const pool = kind === 0 ? p.log : p.test;
  const middle: string[] = [];
  let chars = 0;
  while (chars < size) {
    const line = rnd() < 0.003 ? pick(p.errors) : pick(pool);
    middle.push(line);
    chars += line.length + 1;
  }
  const lines = original.split("\n");
  const half = Math.ceil(lines.length / 2);
  return [...lines.slice(0, half), ...middle, ...lines.slice(half)].join("\n");
}

/** One grown copy of each real session that has results to grow, its grown results' sizes drawn from `band`. */
export function generateLargeSessions(sessions: Session[], band: Band = LARGE): Session[] {
  const p = pools(sessions);
  const rnd = seededRandom(20_251_122);
  return sessions
    .filter((s) => s.source === "claude-code-hive-mind" && s.messages.length > 20)
    .map((s, si) => {
      const candidates = s.messages.flatMap((m, mi) =>
        m.content.flatMap((b, bi) => (b.type === "tool_result" && b.content.length > 500 ? [[mi, bi] as const] : [])),
      );
      const every = Math.max(1, Math.floor(candidates.length / GROWN_PER_SESSION));
      const chosen = new Set(
        candidates
          .filter((_, i) => i % every === 0)
          .slice(0, GROWN_PER_SESSION)
          .map(([mi, bi]) => `${mi}:${bi}`),
      );
      let n = 0;
      const messages = s.messages.map((m, mi) => ({
        role: m.role,
        content: m.content.map((b, bi): Block => {
          if (b.type !== "tool_result" || !chosen.has(`${mi}:${bi}`)) return b;
          const size = band.min + Math.floor(rnd() * (band.max - band.min));
          return { ...b, content: grow(b.content, (si + n++) % 3, size, p, rnd) };
        }),
      }));
      return { name: `${s.name} (grown)`, source: "generated", system: s.system, messages };
    });
}
