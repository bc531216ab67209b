// Reference of the agent-sessions benchmark (agent-sessions.ts): the lean floor
// (lean-floor.mjs: one Redis script call, the body read and parsed, serialised, relayed,
// usage read and batched to Redis), with the body compressed by the same
// @terse/compression library at the key's settings in place of the instruction alone:
// parse, compress, serialise, relay. None of terse's own code, checks, metrics or logs.
//
//   node agent-floor.mjs <upstream port> <port> <redis url> <compression bundle> <level>
//
// The library is TypeScript; the benchmark bundles it (esbuild, as the data plane's own
// bundle holds it) and passes the bundle's path, so this runs under plain node too.
import { pathToFileURL } from "node:url";
import { serveFloor } from "./lean-floor.mjs";

const [upstreamPort, port, redisUrl, compressionBundle, level] = process.argv.slice(2);
const { compressRequest } = await import(pathToFileURL(compressionBundle).href);
// What the benchmark's key says: context compression at `level`, the rest off but the instruction.
const settings = {
  intensity: "full",
  auto_compress_input: false,
  smart_detect_enabled: false,
  context_compress: true,
  context_compress_level: level,
};
await serveFloor({
  upstreamPort,
  port,
  redisUrl,
  name: "agent-floor",
  rewrite: (body) => compressRequest("openai", body, settings).body,
});
// Exits on the benchmark's SIGTERM, so a profile asked for (BENCH_FLOOR_NODE_FLAGS="--cpu-prof ...") is written.
process.once("SIGTERM", () => process.exit(0));
