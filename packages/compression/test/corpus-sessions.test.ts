import { expect } from "chai";
import { loadSessions } from "../../../bench/compression/corpus.ts";
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

const sessions = loadSessions();

describe("on every agent session of the corpus", () => {
  it("finds the sessions", () => {
    expect(sessions.length).to.be.at.least(35);
  });

  for (const provider of ["openai", "anthropic", "gemini"] as Provider[]) {
    for (const level of ["conservative", "standard", "aggressive"] as const) {
      it(`${provider}, ${level}: prefix-stable turn by turn, pairing valid, assistant turns unchanged`, () => {
        let pairs = 0;
        let shortened = 0;
        for (const s of sessions) {
          const ps = toProvider(provider, s);
          let previous: string[] = [];
          let previousOriginal: string[] = [];
          for (const [i, m] of s.messages.entries()) {
            if (m.role !== "user") continue;
            const body = ps.body(ps.perMessage.slice(0, i + 1).flat());
            expect(pairingProblems[provider](body), `${s.name}: the original`).to.deep.equal([]);
            const out = compressRequest(provider, body, settings(level)).body as Record<string, unknown>;
            expect(pairingProblems[provider](out), `${s.name} turn ${i}`).to.deep.equal([]);
            const original = partsOf(provider, body).map((p) => JSON.stringify(p));
            const parts = partsOf(provider, out).map((p) => JSON.stringify(p));
            const shared = (a: string[], b: string[]) => {
              let k = 0;
              while (k < a.length && k < b.length && a[k] === b[k]) k++;
              return k;
            };
            if (previous.length > 0) {
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
        expect(shortened).to.be.greaterThan(100);
      });
    }
  }
});
