// The fake upstream of the proxy benchmark: answers every POST at once with a fixed
// OpenAI chat completion (or a short SSE stream when the body asks for one). Plain Node,
// no TypeScript loader, so its own cost stays small and the same for every target.
import { createServer } from "node:http";

const json = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1,
  model: "gpt-4o-mini",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 500, completion_tokens: 1, total_tokens: 501 },
});
const chunk = (delta) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
const usage = `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })}\n\n`;

const server = createServer((req, res) => {
  const parts = [];
  req.on("data", (c) => parts.push(c));
  req.on("end", () => {
    const body = Buffer.concat(parts).toString();
    if (body.includes('"stream":true')) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunk({ role: "assistant", content: "" }));
      res.write(chunk({ content: "ok" }));
      res.end(`${usage}data: [DONE]\n\n`);
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
    res.end(json);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2]), "127.0.0.1", () => process.stdout.write("upstream ready\n"));
