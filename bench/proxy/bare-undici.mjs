// Reference of the proxy benchmark, outside the stack: the bare proxy of
// bare-http-proxy.mjs with undici's connection pool as the upstream client in place of
// http-proxy and Node's http.request. What leaving them would buy, measured, not assumed.

import http from "node:http";
import { createRequire } from "node:module";

const require = createRequire(new URL("../package.json", import.meta.url));
const { Pool } = require("undici");
const [upstreamPort, port] = process.argv.slice(2).map(Number);
const pool = new Pool(`http://127.0.0.1:${upstreamPort}`, { connections: 256 });

http
  .createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      pool.dispatch(
        {
          method: req.method,
          path: req.url,
          headers: { "content-type": "application/json" },
          body: Buffer.concat(chunks),
        },
        {
          onConnect() {},
          onError() {
            if (!res.headersSent) res.writeHead(502);
            res.end();
          },
          onHeaders(status, raw) {
            const headers = [];
            for (let i = 0; i < raw.length; i += 2) headers.push([raw[i].toString(), raw[i + 1].toString()]);
            res.writeHead(status, headers);
            return true;
          },
          onData: (chunk) => res.write(chunk),
          onComplete: () => res.end(),
        },
      );
    });
  })
  .listen(port, "127.0.0.1", () => process.stdout.write("bare-undici ready\n"));
