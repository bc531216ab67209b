// `npm start`: the whole system on one machine, at the speed the images run. Creates the
// development database if it is missing, applies migrations, seeds the demo account,
// builds the services' bundles when a source changed (scripts/build-services.mjs: what
// the images run), starts each under plain `node` (the data plane on every core unless
// DATA_PLANE_WORKERS says otherwise) and prints where they listen. Ctrl-C stops them
// cleanly.
//
//   node --import tsx scripts/start.ts [--dev] [--runtime DIR] [--dotenv FILE]
//
// --dev (`npm run dev`): the TypeScript sources under `tsx watch` instead, each service
// restarted when a file it imports changes; one data-plane process unless set. Slower
// (a third of the speed, docs/benchmarks.md), never what to measure.
// DIR: where the bundles are built (default dist/runtime); FILE: the env file written on
// first run and read at every start (default .env). Tests pass their own.
import { randomBytes } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { migrate } from "@terse/db";
import { REPO_ROOT, type RunningProcess, startProcess } from "@terse/testkit";
import pg from "pg";
import { buildServicesIfChanged, DEFAULT_OUT } from "./build-services.mjs";

function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at > 0 ? (process.argv[at + 1] ?? fallback) : fallback;
}

const DEV = process.argv.includes("--dev");
const RUNTIME = flag("--runtime", DEFAULT_OUT);
const TSX = join(REPO_ROOT, "node_modules", ".bin", "tsx");
const ENV_FILE = flag("--dotenv", join(REPO_ROOT, ".env"));

/** First run: a .env of its own with fresh secrets, so tokens survive restarts. */
function ensureEnvFile(): void {
  if (existsSync(ENV_FILE)) return;
  const lines = [
    "# Written by `npm start` on first run; see .env.example for every variable.",
    "# A variable set in the environment wins over this file.",
    `JWT_SECRET=${randomBytes(32).toString("hex")}`,
    `INTERNAL_GRPC_TOKEN=${randomBytes(24).toString("hex")}`,
  ];
  writeFileSync(ENV_FILE, `${lines.join("\n")}\n`, { mode: 0o600 });
  console.log(`created ${ENV_FILE} with fresh secrets`);
}

async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = target.pathname.slice(1);
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      console.log(`created database ${name}`);
    }
  } finally {
    await client.end();
  }
}

/** In start order: the control plane first (it fills the key cache the data plane reads). */
const SERVICES = [
  { name: "control-plane", ready: /control-plane listening on (.+)/ },
  { name: "data-plane", ready: /data-plane listening on (.+)/ },
  { name: "metering-worker", ready: /metering-worker ready \(metrics on (\S+)\)/ },
] as const;

function relay(name: string, proc: RunningProcess): void {
  const prefix = `${name.padEnd(15)} | `;
  const write = (chunk: Buffer) => {
    for (const line of chunk.toString().split("\n")) if (line) process.stdout.write(`${prefix}${line}\n`);
  };
  proc.child.stdout?.on("data", write);
  proc.child.stderr?.on("data", write);
}

/** As the data-plane image runs it (Dockerfile: a larger young generation for per-request garbage). */
const DATA_PLANE_NODE_FLAGS = ["--min-semi-space-size=16"];

/** A service's bundle under plain node, in its runtime tree, as its image runs it (--dev: its sources under tsx watch). */
function startService(name: string, env: Record<string, string>): RunningProcess {
  if (DEV) return startProcess(TSX, ["watch", "--clear-screen=false", `services/${name}/src/main.ts`], env);
  const flags = name === "data-plane" ? DATA_PLANE_NODE_FLAGS : [];
  return startProcess(process.execPath, [...flags, `services/${name}/dist/main.mjs`], env, {
    cwd: join(RUNTIME, name),
  });
}

async function main(): Promise<void> {
  ensureEnvFile();
  process.loadEnvFile(ENV_FILE); // sets only what the environment does not already hold
  const env = { ...process.env } as Record<string, string>;
  // One machine: the data plane on every core. A container runs one process (compose, k8s).
  env.DATA_PLANE_WORKERS ??= DEV ? "1" : "0";
  const databaseUrl = env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/terse";
  await ensureDatabase(databaseUrl);
  const migrated = await migrate(databaseUrl);
  if (migrated.applied.length > 0) console.log(`applied migrations: ${migrated.applied.join(", ")}`);
  const { seedDemoAccount } = await import("../services/control-plane/src/cli/seed.ts");
  const demo = await seedDemoAccount(env);
  if (!DEV) {
    const built = await buildServicesIfChanged(RUNTIME);
    console.log(
      built.built ? `built the service bundles in ${RUNTIME}` : `service bundles in ${RUNTIME} are up to date`,
    );
  }

  const running: RunningProcess[] = [];
  let stopping = false;
  const stopAll = async (code: number) => {
    // Ctrl-C reaches npm and this process at once, and npm passes it on: act once. (The
    // launcher runs in node itself with tsx as a loader, not under the tsx CLI: that
    // relays a signal to its child and SIGKILLs it when the child has not answered within
    // 60 ms, which a busy machine turned into an exit of 130 and orphaned services.)
    if (stopping) return;
    stopping = true;
    await Promise.all(running.map((p) => p.stop("SIGTERM")));
    process.exit(code);
  };
  process.on("SIGINT", () => void stopAll(0));
  process.on("SIGTERM", () => void stopAll(0));

  const urls: string[] = [];
  for (const svc of SERVICES) {
    const proc = startService(svc.name, env);
    relay(svc.name, proc);
    running.push(proc);
    proc.exited.then((code) => {
      if (stopping) return;
      console.error(`${svc.name} exited (${code}); stopping the others`);
      void stopAll(1);
    });
    const line = await proc.waitForOutput(svc.ready, 60_000);
    const url = line.match(svc.ready)?.[1] ?? "";
    urls.push(`  ${svc.name.padEnd(16)} ${svc.name === "metering-worker" ? `${url}/metrics` : url}`);
  }
  console.log(
    [
      "",
      "terse is running:",
      ...urls,
      "",
      `demo login: ${demo.email} / ${demo.password}`,
      "Ctrl-C stops everything.",
      "",
    ].join("\n"),
  );
}

await main();
