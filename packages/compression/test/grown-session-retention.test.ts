import { expect } from "chai";
import { loadSessions } from "../../../bench/compression/corpus.ts";
import { generateLargeSessions, MID } from "../../../bench/compression/generated.ts";
import { replay } from "../../../bench/compression/replay.ts";

// A session whose results were grown to 100 KB-1 MB (the benchmark's generated group): the
// names the agent went on to use lie anywhere in those megabytes, so only an index of the
// whole cut keeps them. The product owner's measure (retention.mjs), at `standard`.

describe("a session with 100 KB-1 MB results", () => {
  it("keeps at standard what the agent went on to use (the issue's 92% median), saving nine tenths", function () {
    this.timeout(120_000);
    const grown = generateLargeSessions(loadSessions());
    const session = grown.reduce((a, b) => (a.messages.length <= b.messages.length ? a : b));
    const r = replay("anthropic", session, "standard", session);
    expect(r.needed, "names used later").to.be.above(50);
    expect(r.retained / r.needed, `retention; lost e.g. ${r.lost?.join(", ")}`).to.be.at.least(0.92);
    expect(r.costAfter / r.costBefore).to.be.below(0.2);
  });
});

describe("a session with 10-100 KB results", () => {
  // The sizes of the unseen SWE-agent sessions: a cut's index is small beside what
  // it stands for, and one of a tenth of the cut kept 80% of the names at `standard`.
  it("keeps at standard what the agent went on to use (the issue's 92% median), at the issue's saving", function () {
    this.timeout(120_000);
    const grown = generateLargeSessions(loadSessions(), MID);
    const session = grown.reduce((a, b) => (a.messages.length <= b.messages.length ? a : b));
    const r = replay("anthropic", session, "standard", session);
    expect(r.needed, "names used later").to.be.above(20);
    expect(r.retained / r.needed, `retention; lost e.g. ${r.lost?.join(", ")}`).to.be.at.least(0.92);
    expect(r.costAfter / r.costBefore).to.be.below(0.58);
  });
});
