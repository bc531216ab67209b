import type { StreamFilter } from "../src/adapter.ts";

/** `stream` fed to `filter` `size` characters at a time, then flushed: all it wrote, and what it wrote for each piece. */
export function feed(filter: StreamFilter, stream: string, size: number): { out: string; perPiece: string[] } {
  const perPiece: string[] = [];
  for (let i = 0; i < stream.length; i += size) perPiece.push(filter.push(stream.slice(i, i + size)));
  perPiece.push(filter.flush());
  return { out: perPiece.join(""), perPiece };
}
