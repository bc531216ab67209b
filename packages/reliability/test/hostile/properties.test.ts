import { expect } from "chai";
import fc from "fast-check";
import {
  type Harness as ControlPlane,
  createAccount,
  createKey,
  snapshot,
  startHarness as startControlPlane,
  type TestAccount,
} from "../../../../services/control-plane/test/harness.ts";
import {
  type Harness as DataPlane,
  PROVIDER_KEY,
  startHarness as startDataPlane,
} from "../../../../services/data-plane/test/harness.ts";
import { expectNoInternals, prototypeAdditions, refusalState } from "./helpers.ts";

// Generated bodies at the key endpoints and the proxy: never a 5xx of our own, never a
// stack trace, and a 4xx changes nothing (rows, key cache, upstream).

const NUM_RUNS = 200;

/** Code points, now and then one a careless encoder chokes on (half surrogates, NUL, U+2028). */
const nastyChar = fc.oneof(
  { weight: 8, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.constantFrom("\ud800", "\udfff", "\u0000", "\u2028", "\ufeff", "%zz", "\r\n") },
);
const nastyString = fc.string({ unit: nastyChar, maxLength: 80 });
const jsonish = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: nastyString },
);

/** A JSON object as text, keys included verbatim (`__proto__` stays an own key). */
function objectText(entries: [string, unknown][]): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? "null"}`).join(",")}}`;
}

function bodies(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<string | Uint8Array> {
  const fieldName = fc.oneof(
    fc.constantFrom(...Object.keys(fields)),
    fc.constantFrom("__proto__", "constructor", "prototype", "raw_key", "id", "is_active", "toString"),
    nastyString,
  );
  // Right field names, each with its right kind of value or any other.
  const knownFields = fc
    .subarray(Object.keys(fields))
    .chain((names) =>
      fc.tuple(...names.map((n) => fc.tuple(fc.constant(n), fc.oneof(fields[n] as fc.Arbitrary<unknown>, jsonish)))),
    );
  return fc.oneof(
    knownFields.map((entries) => objectText(entries as [string, unknown][])),
    fc.array(fc.tuple(fieldName, jsonish), { maxLength: 6 }).map(objectText),
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? "null"),
    nastyString,
    fc.uint8Array({ maxLength: 200 }),
  );
}

const KEY_FIELDS = {
  name: fc.string({ minLength: 1, maxLength: 70 }),
  intensity: fc.constantFrom("lite", "full", "ultra", "max"),
  auto_compress_input: fc.boolean(),
  smart_detect_enabled: fc.boolean(),
  context_compress: fc.boolean(),
  context_compress_level: fc.constantFrom("conservative", "standard", "aggressive"),
};

const PROXY_FIELDS = {
  model: fc.oneof(fc.constantFrom("gpt-4o-mini", "claude-3-5-haiku", "gemini-2.0-flash"), nastyString),
  messages: fc.oneof(
    fc.array(fc.record({ role: fc.constantFrom("user", "assistant", "system", "tool"), content: jsonish }), {
      maxLength: 4,
    }),
    jsonish,
  ),
  contents: fc.array(fc.record({ role: fc.constantFrom("user", "model"), parts: jsonish }), { maxLength: 3 }),
  system: jsonish,
  stream: fc.oneof(fc.boolean(), jsonish),
  stream_options: jsonish,
  max_tokens: fc.oneof(fc.integer(), jsonish),
  tools: jsonish,
};

describe("hostile: generated bodies (fast-check)", () => {
  describe("key endpoints", () => {
    let h: ControlPlane;
    let account: TestAccount;
    let keyId: string;
    before(async () => {
      h = await startControlPlane("hostile_props", { redisArea: "hostile" });
      account = await createAccount(h, "enterprise");
      keyId = (await createKey(h, account, { name: "target" })).id;
    });
    after(() => h.stop());

    for (const [method, path] of [
      ["POST", () => "/v1/auth/keys"],
      ["PATCH", () => `/v1/auth/keys/${keyId}`],
    ] as const) {
      it(`${method} ${method === "POST" ? "/v1/auth/keys" : "/v1/auth/keys/{id}"}: no 5xx, and a 4xx changes nothing`, async function () {
        this.timeout(60_000);
        await fc.assert(
          fc.asyncProperty(bodies(KEY_FIELDS), async (body) => {
            const before = await snapshot(h);
            const res = await fetch(`${h.url}${path()}`, {
              method,
              headers: { authorization: `Bearer ${account.token}`, "content-type": "application/json" },
              body,
            });
            const text = await res.text();
            expect(res.status, text).to.be.below(500);
            expectNoInternals(text);
            if (res.status >= 400) {
              expect(JSON.parse(text)).to.have.nested.property("error.code");
              expect(await snapshot(h)).to.equal(before);
            }
          }),
          { numRuns: NUM_RUNS },
        );
        expect(prototypeAdditions()).to.deep.equal([]);
      });
    }
  });

  describe("proxy", () => {
    let h: DataPlane;
    let rawKey: string;
    before(async () => {
      h = await startDataPlane({}, "hostile");
      // Compression on, so its code sees the same bodies.
      ({ rawKey } = await h.addKey({
        rate_limit_rpm: 1_000_000,
        auto_compress_input: true,
        context_compress: true,
        context_compress_level: "aggressive",
      }));
    });
    after(() => h.close());

    const cacheState = () => refusalState(h.redis);

    for (const path of ["/v1/chat/completions", "/v1/messages", "/v1/generateContent"]) {
      it(`${path}: no 5xx of its own, and its own 4xx reach nothing upstream`, async function () {
        this.timeout(60_000);
        await fc.assert(
          fc.asyncProperty(bodies(PROXY_FIELDS), async (body) => {
            const before = await cacheState();
            const upstreamBefore = h.fake.received.length;
            const res = await fetch(`${h.url}${path}`, {
              method: "POST",
              headers: {
                authorization: `Bearer ${rawKey}`,
                "x-provider-key": PROVIDER_KEY,
                "content-type": "application/json",
              },
              body,
            });
            const text = await res.text();
            // The proxy's own answers carry X-Request-Id = X-Terse-Request-Id; relayed ones the upstream's.
            const own = res.headers.get("x-request-id") === res.headers.get("x-terse-request-id");
            expectNoInternals(text);
            expect(text).not.to.include(PROVIDER_KEY);
            if (!own) return;
            expect(res.status, text).to.be.below(500);
            if (res.status >= 400) {
              expect(h.fake.received.length, "reached the upstream").to.equal(upstreamBefore);
              expect(await cacheState()).to.equal(before);
            }
          }),
          { numRuns: NUM_RUNS },
        );
        expect(prototypeAdditions()).to.deep.equal([]);
      });
    }
  });
});
