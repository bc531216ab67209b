// Context compression levels differ only in these thresholds (issue 5).

export type ContextLevel = "conservative" | "standard" | "aggressive";

export interface ContextLimits {
  /** A tool result longer than this (characters) is cut to its head and tail. */
  truncateAbove: number;
  /** Characters kept from the start and from the end of a cut result. */
  keepHead: number;
  keepTail: number;
  /** A repeat of an earlier tool result is replaced by a reference only from this size: a reference costs ~30 tokens. */
  dedupeAtLeast: number;
}

export const CONTEXT_LEVELS: Readonly<Record<ContextLevel, ContextLimits>> = {
  // Claude Code caps its own tool output near 30,000 characters; results under 16,000
  // are left alone, as the issue asks of this level. Keeps 10,000 of a long result.
  conservative: { truncateAbove: 16_000, keepHead: 6_000, keepTail: 4_000, dedupeAtLeast: 2_000 },
  // Build and test logs put the command at the head and the verdict at the tail; 5,000
  // characters (~1,200 tokens) keep both for typical output.
  standard: { truncateAbove: 8_000, keepHead: 3_000, keepTail: 2_000, dedupeAtLeast: 1_000 },
  // For cost-first agents: the first and last screen of every long result.
  aggressive: { truncateAbove: 4_000, keepHead: 1_500, keepTail: 1_000, dedupeAtLeast: 500 },
};
