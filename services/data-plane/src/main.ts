import cluster from "node:cluster";
import { availableParallelism } from "node:os";
import { boundHostPort, dataPlaneEnv, loadConfigOrExit } from "@terse/config";
import { createLogger } from "@terse/logger";
import { createDataPlane } from "./app.ts";

const config = loadConfigOrExit(dataPlaneEnv);
const logger = createLogger({ service: "data-plane", level: config.LOG_LEVEL });
const workers = config.DATA_PLANE_WORKERS === 0 ? availableParallelism() : config.DATA_PLANE_WORKERS;

/** A cluster worker's word to the primary once its server listens. */
interface Ready {
  ready: string;
}

if (workers > 1 && cluster.isPrimary) {
  // The primary only supervises: the workers share the port (node:cluster).
  for (let i = 0; i < workers; i++) cluster.fork();
  let ready = 0;
  cluster.on("message", (_worker, msg: Ready) => {
    if (typeof msg?.ready === "string" && ++ready === workers) {
      process.stdout.write(`data-plane listening on http://${msg.ready} (${workers} workers)\n`);
    }
  });
  cluster.on("exit", (worker, code) => {
    if (!stopping) {
      logger.error({ pid: worker.process.pid, code }, "data-plane worker died; starting another");
      cluster.fork();
    }
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.kill("SIGTERM");
  };
  onStopSignals(stop);
} else {
  const plane = await createDataPlane(config, logger);
  plane.server.listen(config.DATA_PLANE_PORT, config.BIND_HOST, () => {
    const address = boundHostPort(plane.server.address());
    if (cluster.isWorker) process.send?.({ ready: address } satisfies Ready);
    else process.stdout.write(`data-plane listening on http://${address}\n`);
  });
  let stopping = false;
  const stop = async () => {
    // SIGINT and SIGTERM may both arrive (a terminal's Ctrl-C and a supervisor): drain once.
    if (stopping) return;
    stopping = true;
    logger.info("SIGTERM: draining");
    await plane.shutdown(config.SHUTDOWN_GRACE_MS, config.SHUTDOWN_DRAIN_DELAY_MS);
    process.exit(0);
  };
  onStopSignals(() => void stop());
}

/**
 * `stop` on every SIGTERM and SIGINT, not only the first: a process must not die of the
 * second. One signal to the process group (systemd's default, `kill -- -PGID`, pkill)
 * reaches each worker twice, from the sender and from the primary, and a supervisor may
 * repeat itself; a worker killed so mid-drain would lose the usage events it holds.
 */
function onStopSignals(stop: () => void): void {
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
