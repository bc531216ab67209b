import { createServer } from "node:http";
import { join } from "node:path";
import { close, listen, REPO_ROOT } from "@terse/testkit";
import { ADAPTERS, type RecallFormat, type ReportedUsage, SseSplitter, type WireFormat } from "../src/index.ts";

// What the recall tests of every wire format share: the recorded streams' folder, frozen
// inputs, the data plane's own SSE split, and a local server an official SDK reads a
// relayed stream from.

/** The recorded provider streams (../shared/corpus/wire-fixtures), read at run time. */
export const FIXTURES = join(REPO_ROOT, "..", "shared", "corpus", "wire-fixtures");

export const NONE: ReportedUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

export const recallOf = (format: WireFormat): RecallFormat => ADAPTERS[format].recall;

/** A frozen copy: a recall function that mutated its input would throw. */
export function frozen<T>(value: T): T {
  const copy = structuredClone(value);
  const freeze = (v: unknown): void => {
    if (typeof v !== "object" || v === null) return;
    Object.freeze(v);
    for (const x of Object.values(v)) freeze(x);
  };
  freeze(copy);
  return copy;
}

/** The SSE events of a stream's text, as the data plane splits them. */
export function eventsOf(text: string): { raw: string; data: unknown }[] {
  const events: { raw: string; data: unknown }[] = [];
  const splitter = new SseSplitter((raw, data) => events.push({ raw, data }));
  splitter.push(text);
  splitter.flush();
  return events;
}

/** Serves `body` as an event stream to every request while `use` runs, for an SDK to read. */
export async function served<T>(body: string, use: (url: string) => Promise<T>): Promise<T> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(body);
    });
  });
  const url = await listen(server);
  try {
    return await use(url);
  } finally {
    await close(server);
  }
}
