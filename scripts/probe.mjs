// Container health check for images without curl: `node probe.mjs <PORT_VARIABLE> <path>`
// asks http://127.0.0.1:$PORT_VARIABLE<path> and exits 0 on a 2xx, 1 otherwise. The port
// comes from the container's own environment, so the check follows the service's config.
const [variable, path] = process.argv.slice(2);
const port = process.env[variable ?? ""];
if (!port || !path) {
  process.stderr.write("usage: node probe.mjs <PORT_VARIABLE> <path>, with the variable set\n");
  process.exit(2);
}
try {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2_000) });
  process.exit(res.ok ? 0 : 1);
} catch {
  process.exit(1);
}
