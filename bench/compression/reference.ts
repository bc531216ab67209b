// The product owner's quality measure, imported from ../shared/tools/retention.mjs (never
// copied: the project's figures and the owner's must mean the same thing). A plain ES
// module without types, loaded by URL; the shapes below are what it documents.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { REPO_ROOT } from "@terse/testkit";

export interface ReferencedResult {
  msg: number;
  ordinal: number;
  id: string;
  /** token -> index of the first later assistant message using it */
  refs: Map<string, number>;
}

interface RetentionModule {
  referencedTokens(tr: { system?: string; messages: unknown[] }): {
    results: ReferencedResult[];
    asstBefore: number[];
    asstMsgs: number[];
  };
  countRetained(
    provider: string,
    units: unknown[],
    results: ReferencedResult[],
    inPrefix: number,
    want: (r: number) => Iterable<string>,
    unitTokens: (k: number) => Set<string>,
  ): { retained: number; total: number; lost: string[] };
  tokensOfValue(v: unknown, set?: Set<string>): Set<string>;
}

const url = pathToFileURL(join(REPO_ROOT, "..", "shared", "tools", "retention.mjs")).href;
export const reference = (await import(url)) as RetentionModule;
