// The fake upstream of the proxy benchmark: answers every POST at once with a fixed
// OpenAI chat completion (or a short SSE stream when the body asks for one; a body's
// `max_tokens` of N asks for a stream of N words, each event written on its own, the
// next after the event loop turned, as a provider sends tokens). Plain Node, no
// TypeScript loader, so its own cost stays small and the same for every target.
import { createServer } from "node:http";

const json = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1,
  model: "gpt-4o-mini",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 500, completion_tokens: 1, total_tokens: 501 },
});
// Chunks shaped as OpenAI's (openai-node's recorded streams): with `stream_options.include_usage`
// every chunk carries `"usage":null` and one more, with empty choices, the usage.
const ID = { id: "chatcmpl-9tZXFsqeQOozn5YU8I6SbjkmDnN76", object: "chat.completion.chunk", created: 1723031665 };
const MODEL = { model: "gpt-4o-2024-08-06", system_fingerprint: "fp_845eaabc1f" };
const chunk = (delta, withUsage) =>
  `data: ${JSON.stringify({ ...ID, ...MODEL, choices: [{ index: 0, delta, logprobs: null, finish_reason: null }], ...(withUsage ? { usage: null } : {}) })}\n\n`;
const usage = `data: ${JSON.stringify({ ...ID, ...MODEL, choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })}\n\n`;
/** A stream's last write: its usage when asked for, then the end. */
const ending = (withUsage) => `${withUsage ? usage : ""}data: [DONE]\n\n`;

const server = createServer((req, res) => {
  const parts = [];
  req.on("data", (c) => parts.push(c));
  req.on("end", () => {
    const body = Buffer.concat(parts).toString();
    if (body.includes('"stream":true')) {
      const withUsage = body.includes('"include_usage":true');
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunk({ role: "assistant", content: "" }, withUsage));
      const words = Number(/"max_tokens":(\d+)/.exec(body)?.[1] ?? 1);
      if (words <= 1) {
        res.write(chunk({ content: "ok" }, withUsage));
        res.end(ending(withUsage));
      } else void streamWords(res, words, withUsage);
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
    res.end(json);
  });
});
/** `words` events, one write each, the event loop turning between them; then usage and the end. */
async function streamWords(res, words, withUsage) {
  for (let i = 0; i < words && !res.destroyed; i++) {
    res.write(chunk({ content: ` word${i}` }, withUsage));
    await new Promise((resolve) => setImmediate(resolve));
  }
  res.end(ending(withUsage));
}

server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2]), "127.0.0.1", () => process.stdout.write("upstream ready\n"));
