// The figures of the compression benchmark, each a small pure function.
import { countExactTokens } from "@terse/compression";
import type { Session } from "./corpus.ts";

export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

export const tokensOf = (parts: readonly unknown[]): number =>
  parts.reduce<number>((n, p) => n + countExactTokens(p), 0);

/** How many leading parts two requests share (the prompt cache's prefix, at message granularity). */
export function sharedParts(a: readonly string[], b: readonly string[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** A request's input cost with caching modelled: the part shared with the previous request at 10%. */
export function cachedCost(parts: readonly unknown[], shared: number): number {
  const sharedTokens = tokensOf(parts.slice(0, shared));
  return 0.1 * sharedTokens + (tokensOf(parts) - sharedTokens);
}

/**
 * What an agent may need from a tool result: paths, dotted / snake / camel identifiers,
 * numbers of 3+ digits, hashes.
 */
const SPAN =
  /(?:[\w.-]+\/)+[\w.-]+|\b[A-Za-z_]\w*(?:\.\w+)+\b|\b[a-z]+(?:_[a-z0-9]+)+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b|\b\d{3,}\b|\b[0-9a-f]{7,40}\b/g;

/** Every string inside a value, one per line: JSON text would glue escapes (`\\n`) to words. */
export function stringsOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(stringsOf).join("\n");
  if (typeof value === "object" && value !== null) return Object.values(value).map(stringsOf).join("\n");
  return "";
}

export const spansOf = (text: string): Set<string> =>
  new Set([...text.matchAll(SPAN)].map((m) => m[0]).filter((s) => s.length >= 4));

export interface NeededSpans {
  /** For each tool result, by its position in the session: message index and the spans it brought that the agent used later. */
  byResult: { message: number; spans: string[] }[];
}

/**
 * Referenced spans: of the spans a tool result brought into the conversation (seen
 * nowhere before it), those an assistant turn AFTER it mentions.
 */
export function neededSpans(s: Session): NeededSpans {
  const lastUse = new Map<string, number>();
  for (const [i, m] of s.messages.entries()) {
    if (m.role !== "assistant") continue;
    for (const span of spansOf(stringsOf(m.content))) lastUse.set(span, i);
  }
  const seen = spansOf(s.system ?? "");
  const byResult: NeededSpans["byResult"] = [];
  for (const [i, m] of s.messages.entries()) {
    for (const b of m.content) {
      if (b.type === "tool_result") {
        const spans = [...spansOf(b.content)].filter((x) => !seen.has(x) && (lastUse.get(x) ?? -1) > i);
        byResult.push({ message: i, spans });
        for (const x of spansOf(b.content)) seen.add(x);
      } else {
        for (const x of spansOf(stringsOf(b))) seen.add(x);
      }
    }
  }
  return { byResult };
}

/**
 * Retention: the share of needed spans still present in the compressed messages up to
 * and including the result that brought them (what the agent had when it used them).
 * `compressedText(i)` is the text of the compressed form of neutral message i.
 */
export function retention(needed: NeededSpans, compressedText: (i: number) => string): { kept: number; total: number } {
  let kept = 0;
  let total = 0;
  const visible = new Set<string>();
  let upTo = -1;
  for (const r of needed.byResult) {
    while (upTo < r.message) {
      upTo++;
      for (const x of spansOf(compressedText(upTo))) visible.add(x);
    }
    for (const x of r.spans) {
      total++;
      if (visible.has(x)) kept++;
    }
  }
  return { kept, total };
}
