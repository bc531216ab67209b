// Reference of the proxy benchmark: the least the work issue 3 requires can cost on the
// fixed stack (http-proxy, Node's http, ioredis), written as leanly as possible, with none
// of terse's code and none of its checks, metrics, logs or error handling. Per request:
//   - one Redis script call, auto-pipelined, that reads the key's record and counts the
//     minute (auth and rate limit, as terse's one round trip),
//   - the body read, parsed, given a system message (the instruction) and, when it asks for
//     a stream, OpenAI's `stream_options.include_usage` (a stream has no usage without it),
//     and serialised,
//   - connect and idle timeouts on the upstream request, a close watch on the response,
//   - the answer relayed chunk by chunk while kept on the side, parsed for its usage,
//   - a usage event, sent to Redis in batches of 100 (one RPUSH each).
// What terse costs above this is its own; what this costs above bare-http-proxy.mjs is
// the floor of the required work.

import http from "node:http";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const require = createRequire(new URL("../../services/data-plane/package.json", import.meta.url));
const httpProxy = require("http-proxy");
const { Redis } = require("ioredis");

const INSTRUCTION = { role: "system", content: "Answer tersely. Keep code, paths and numbers exact." };

/** The lean floor's own rewrite: the instruction added, and a stream asked for its usage; nothing else. */
export const addInstruction = (body) => {
  body.messages = [INSTRUCTION, ...body.messages];
  if (body.stream === true) body.stream_options = { include_usage: true };
  return body;
};

/**
 * Serves the floor on `port`, rewriting each parsed body with `rewrite` (the lean floor's
 * instruction, or agent-floor.mjs's compression), and says `<name> ready` when listening.
 */
export async function serveFloor({ upstreamPort, port, redisUrl, rewrite, name }) {
  const redis = new Redis(redisUrl, { enableAutoPipelining: true });
  redis.defineCommand("admit", {
    numberOfKeys: 2,
    lua: `local record = redis.call('GET', KEYS[1])
        local n = redis.call('INCR', KEYS[2])
        if n == 1 then redis.call('EXPIRE', KEYS[2], 60) end
        return {record, n}`,
  });
  await redis.set("{lean}:key", JSON.stringify({ key_id: "k", account_id: "a", rate_limit_rpm: 1e9 }));

  const agent = new http.Agent({ keepAlive: true, maxFreeSockets: 256, scheduling: "lifo" });
  const proxy = httpProxy.createProxyServer({});
  const target = `http://127.0.0.1:${upstreamPort}/v1/chat/completions`;
  let events = [];

  proxy.on("proxyReq", (proxyReq) => {
    const connect = proxyReq.socket?.connecting ? setTimeout(() => proxyReq.destroy(), 10_000) : undefined;
    if (connect) proxyReq.socket.once("connect", () => clearTimeout(connect));
    proxyReq.setTimeout(600_000, () => proxyReq.destroy());
  });

  proxy.on("proxyRes", (proxyRes, req, res) => {
    res.writeHead(proxyRes.statusCode, proxyRes.headers);
    const chunks = [];
    proxyRes.on("data", (c) => {
      res.write(c);
      chunks.push(c);
    });
    proxyRes.on("end", () => {
      res.end();
      const usage = usageOf(Buffer.concat(chunks).toString(), proxyRes.headers["content-type"]);
      events.push(JSON.stringify({ key: req.key.key_id, input: usage.prompt_tokens, output: usage.completion_tokens }));
      if (events.length >= 100) {
        void redis.rpush("{lean}:usage", ...events).then(() => redis.ltrim("{lean}:usage", -1000, -1));
        events = [];
      }
    });
  });

  /** The usage of a JSON answer, or of a stream: its last event that carries one. */
  function usageOf(text, type) {
    if (!type?.startsWith("text/event-stream")) return JSON.parse(text).usage;
    const at = text.lastIndexOf("data: {");
    return at < 0 ? {} : (JSON.parse(text.slice(at + 6, text.indexOf("\n", at))).usage ?? {});
  }

  function readBody(req) {
    return new Promise((resolve) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => resolve(Buffer.concat(chunks)));
    });
  }

  http
    .createServer(async (req, res) => {
      const minute = Math.floor(Date.now() / 60_000);
      const [record] = await redis.admit("{lean}:key", `{lean}:rpm:${minute}`);
      req.key = JSON.parse(record);
      const body = rewrite(JSON.parse((await readBody(req)).toString("utf8")));
      const payload = Buffer.from(JSON.stringify(body));
      res.once("close", () => undefined);
      req.headers = { "content-type": "application/json", "content-length": String(payload.length), host: "upstream" };
      proxy.web(
        req,
        res,
        { target, ignorePath: true, agent, selfHandleResponse: true, buffer: { pipe: (u) => u.end(payload) } },
        () => res.writeHead(502).end(),
      );
    })
    .listen(Number(port), "127.0.0.1", () => process.stdout.write(`${name} ready\n`));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  // Exits on the benchmark's SIGTERM, so a profile asked for (BENCH_FLOOR_NODE_FLAGS="--cpu-prof ...") is written.
  process.once("SIGTERM", () => process.exit(0));
  const [upstreamPort, port, redisUrl] = process.argv.slice(2);
  await serveFloor({ upstreamPort, port, redisUrl, rewrite: addInstruction, name: "lean" });
}
