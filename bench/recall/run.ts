// What a recall round adds to a request (issue 18): `npx tsx bench/recall/run.ts`.
// The data plane and the fake upstream in one process, a key with context compression
// on (so terse_recall is in every request), and for each wire format, JSON and SSE, the
// same request timed side by side, interleaved:
//   - plain: the model answers at once (one upstream call);
//   - recall: the model first calls terse_recall on a kept original, terse answers it
//     from Redis and calls the upstream again (two upstream calls).
// Each upstream answer waits BENCH_UPSTREAM_MS before its first byte (0, and a model-like
// delay), so the table shows terse's own cost of a round apart from the upstream's.
// Quoted in docs/compression.md ("Recall").
import type { AddressInfo } from "node:net";
import { dataPlaneEnv, loadConfig } from "@terse/config";
import { startFakeProvider } from "@terse/fake-provider";
import { CACHE_GENERATION_KEY, cacheKeyFor, encodeCachedKey, generateRawKey, hashKey, recallKeyFor } from "@terse/keys";
import { createLogger } from "@terse/logger";
import { freshRedis, testRedisUrl } from "@terse/testkit";
import { createDataPlane } from "../../services/data-plane/src/app.ts";
import { median } from "../proxy/procs.ts";

const PAIRS = Number(process.env.BENCH_PAIRS ?? 60);
const DELAYS = (process.env.BENCH_UPSTREAM_MS ?? "0,200").split(",").map(Number);
const HANDLE = "0123456789ab";
const ORIGINAL = Array.from({ length: 400 }, (_, i) => `line ${i + 1}: what compression cut`).join("\n");
const PROVIDER_KEY = "sk-bench-provider-key";

interface Shape {
  name: string;
  path: (stream: boolean) => string;
  body: (stream: boolean) => Record<string, unknown>;
  headers?: Record<string, string>;
}

const user = "Which line says what compression cut?";
const SHAPES: Shape[] = [
  {
    name: "chat completions",
    path: () => "/v1/chat/completions",
    body: (stream) => ({ model: "gpt-4.1", stream, messages: [{ role: "user", content: user }] }),
  },
  {
    name: "responses",
    path: () => "/v1/responses",
    body: (stream) => ({ model: "gpt-4.1", stream, input: user }),
  },
  {
    name: "messages",
    path: () => "/v1/messages",
    body: (stream) => ({
      model: "claude-sonnet-4-5",
      max_tokens: 256,
      stream,
      messages: [{ role: "user", content: user }],
    }),
    headers: { "anthropic-version": "2023-06-01" },
  },
  {
    name: "generateContent",
    path: (stream) => `/v1beta/models/gemini-2.5-flash:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
    body: () => ({ contents: [{ role: "user", parts: [{ text: user }] }] }),
  },
];

async function main(): Promise<void> {
  const redis = await freshRedis("bench");
  await redis.set(CACHE_GENERATION_KEY, String(Date.now()));
  const fake = await startFakeProvider({ record: false });
  const config = loadConfig(dataPlaneEnv, {
    NODE_ENV: "test",
    REDIS_URL: testRedisUrl("bench"),
    OPENAI_BASE_URL: fake.url,
    ANTHROPIC_BASE_URL: fake.url,
    GEMINI_BASE_URL: fake.url,
  });
  const plane = await createDataPlane(config, createLogger({ service: "bench", level: "warn" }));
  await new Promise<void>((r) => plane.server.listen(0, "127.0.0.1", () => r()));
  const url = `http://127.0.0.1:${(plane.server.address() as AddressInfo).port}`;

  const rawKey = generateRawKey();
  await redis.hset(
    cacheKeyFor(hashKey(rawKey)),
    encodeCachedKey({
      key_id: "key_bench",
      account_id: "acct_bench",
      plan: "enterprise",
      rate_limit_rpm: 1_000_000,
      intensity: "full",
      auto_compress_input: false,
      smart_detect_enabled: false,
      context_compress: true,
      context_compress_level: "standard",
    }),
  );
  await redis.set(recallKeyFor("acct_bench", HANDLE), ORIGINAL, "EX", 3_600);

  const recallScript = {
    name: "terse_recall",
    arguments: { handle: HANDLE, lines: "120-130" },
    answer: "The recalled lines: {result}",
  };
  const time = async (shape: Shape, stream: boolean): Promise<number> => {
    const start = process.hrtime.bigint();
    const res = await fetch(`${url}${shape.path(stream)}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${rawKey}`,
        "x-provider-key": PROVIDER_KEY,
        ...shape.headers,
      },
      body: JSON.stringify(shape.body(stream)),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${shape.name}: ${res.status} ${text.slice(0, 200)}`);
    if (text.includes("terse_recall")) throw new Error(`${shape.name}: the recall call reached the client`);
    return Number(process.hrtime.bigint() - start) / 1e6;
  };

  console.log(`recall round, ${PAIRS} pairs each, interleaved; ms to the end of the answer (median)\n`);
  console.log("| upstream first byte | format | mode | plain | with one recall round | added | x plain |");
  console.log("|---|---|---|---|---|---|---|");
  for (const delay of DELAYS) {
    fake.set({ firstByteDelayMs: delay });
    for (const shape of SHAPES) {
      for (const stream of [false, true]) {
        const plain: number[] = [];
        const recalled: number[] = [];
        for (let i = 0; i < PAIRS + 5; i++) {
          const order = i % 2 === 0 ? ["plain", "recall"] : ["recall", "plain"];
          for (const mode of order) {
            fake.set({ toolCall: mode === "recall" ? recallScript : null });
            const ms = await time(shape, stream);
            if (i < 5) continue; // warm-up
            (mode === "recall" ? recalled : plain).push(ms);
          }
        }
        const p = median(plain);
        const r = median(recalled);
        console.log(
          `| ${delay} ms | ${shape.name} | ${stream ? "SSE" : "JSON"} | ${p.toFixed(2)} | ${r.toFixed(2)} | ${(r - p).toFixed(2)} | ${(r / p).toFixed(2)} |`,
        );
      }
    }
  }

  await plane.shutdown(1_000);
  await fake.close();
  await redis.flushdb();
  redis.disconnect();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
