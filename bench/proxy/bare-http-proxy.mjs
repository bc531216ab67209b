// Baseline of the proxy benchmark: http-proxy with a keep-alive agent and nothing else
// (no auth, no rate limit, no metering). What terse costs is measured against it.

import http from "node:http";
import { createRequire } from "node:module";

const require = createRequire(new URL("../../services/data-plane/package.json", import.meta.url));
const httpProxy = require("http-proxy");
const [upstreamPort, port] = process.argv.slice(2).map(Number);
const agent = new http.Agent({ keepAlive: true, maxFreeSockets: 256 });
const proxy = httpProxy.createProxyServer({ agent, target: `http://127.0.0.1:${upstreamPort}` });
http
  .createServer((req, res) => proxy.web(req, res))
  .listen(port, "127.0.0.1", () => process.stdout.write("bare ready\n"));
