import { expect } from "chai";
import { asTextProtocol, loadSessions } from "../../../bench/compression/corpus.ts";
import { partsOf, toProvider } from "../../../bench/compression/formats.ts";
import { type CompressionSettings, compressRequest, type Provider, pairingProblems } from "../src/index.ts";

// Every agent session of the corpus, turn by turn, in every format at every level: the
// compressed requests of consecutive turns share the prefix the originals shared (the
// prompt cache keeps hitting), tool pairing stays valid by the provider's rules, and the
// assistant's own turns come through byte-identical.

const settings = (level: CompressionSettings["context_compress_level"]): CompressionSettings => ({
  intensity: "full",
  auto_compress_input: true,
  smart_detect_enabled: true,
  context_compress: true,
  context_compress_level: level,
});

// Every session of the smaller folders; of mini-swe-agent's 500 every 25th (the benchmark
// replays them all), also as the text protocol the agent spoke, whose observations are
// compressed as user messages.
const all = loadSessions();
const mini = all.filter((s) => s.source === "mini-swe-agent").filter((_, i) => i % 25 === 0);
const sessions = [...all.filter((s) => s.source !== "mini-swe-agent"), ...mini, ...mini.map(asTextProtocol)];

describe("on every agent session of the corpus", () => {
  it("finds the sessions", () => {
    expect(sessions.length).to.be.at.least(75);
  });

  for (const provider of ["openai", "anthropic", "gemini"] as Provider[]) {
    for (const level of ["conservative", "standard", "aggressive"] as const) {
      it(`${provider}, ${level}: prefix-stable turn by turn, pairing valid, assistant turns unchanged`, () => {
        let pairs = 0;
        let shortened = 0;
        let switches = 0;
        for (const s of sessions) {
          const ps = toProvider(provider, s);
          let previous: string[] = [];
          let previousOriginal: string[] = [];
          let previousIntensity: string | null | undefined;
          for (const [i, m] of s.messages.entries()) {
            if (m.role !== "user") continue;
            const body = ps.body(ps.perMessage.slice(0, i + 1).flat());
            expect(pairingProblems[provider](body), `${s.name}: the original`).to.deep.equal([]);
            const result = compressRequest(provider, body, settings(level));
            const out = result.body as Record<string, unknown>;
            expect(pairingProblems[provider](out), `${s.name} turn ${i}`).to.deep.equal([]);
            const original = partsOf(provider, body).map((p) => JSON.stringify(p));
            const parts = partsOf(provider, out).map((p) => JSON.stringify(p));
            const shared = (a: string[], b: string[]) => {
              let k = 0;
              while (k < a.length && k < b.length && a[k] === b[k]) k++;
              return k;
            };
            // Smart detect may pick another instruction for a new user message (a text-protocol
            // agent's "format error" turn, say); Anthropic and Gemini carry it in the system
            // slot, so such a turn starts a new prefix by design. Every other pair must share.
            const switched = previousIntensity !== undefined && result.intensity !== previousIntensity;
            previousIntensity = result.intensity;
            if (switched) switches++;
            else if (previous.length > 0) {
              pairs++;
              expect(shared(previous, parts), `${s.name} turn ${i}`).to.be.at.least(shared(previousOriginal, original));
            }
            previous = parts;
            previousOriginal = original;
            if (parts.some((p, k) => p !== original[k])) shortened++;
            original.forEach((p, k) => {
              if (/"role":"(assistant|model)"/.test(p)) expect(parts[k], `${s.name} turn ${i}`).to.equal(p);
            });
          }
        }
        expect(pairs).to.be.greaterThan(500);
        expect(switches, "turns where smart detect switched the instruction").to.be.below(pairs / 50);
        expect(shortened).to.be.greaterThan(100);
      });
    }
  }
});
