// `npm start`: the whole system on one machine. Creates the development database if it
// is missing, applies migrations, seeds the demo account, starts the three services
// as child processes and prints where they listen. Ctrl-C stops them cleanly.
import { randomBytes } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { migrate } from "@terse/db";
import { REPO_ROOT, type RunningProcess, startTs } from "@terse/testkit";
import pg from "pg";

const ENV_FILE = join(REPO_ROOT, ".env");

/** First run: a .env of its own with fresh secrets, so tokens survive restarts. */
function ensureEnvFile(): void {
  if (existsSync(ENV_FILE)) return;
  const lines = [
    "# Written by `npm start` on first run; see .env.example for every variable.",
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

const SERVICES = [
  { name: "control-plane", entry: "services/control-plane/src/main.ts", ready: /control-plane listening on (\S+)/ },
  { name: "data-plane", entry: "services/data-plane/src/main.ts", ready: /data-plane listening on (\S+)/ },
  { name: "metering-worker", entry: "services/metering-worker/src/main.ts", ready: /metering-worker ready/ },
] as const;

function relay(name: string, proc: RunningProcess): void {
  const prefix = `${name.padEnd(15)} | `;
  const write = (chunk: Buffer) => {
    for (const line of chunk.toString().split("\n")) if (line) process.stdout.write(`${prefix}${line}\n`);
  };
  proc.child.stdout?.on("data", write);
  proc.child.stderr?.on("data", write);
}

async function main(): Promise<void> {
  ensureEnvFile();
  process.loadEnvFile(ENV_FILE);
  const env = { ...process.env } as Record<string, string>;
  const databaseUrl = env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/terse";
  await ensureDatabase(databaseUrl);
  const migrated = await migrate(databaseUrl);
  if (migrated.applied.length > 0) console.log(`applied migrations: ${migrated.applied.join(", ")}`);
  const { seedDemoAccount } = await import("../services/control-plane/src/cli/seed.ts");
  const demo = await seedDemoAccount(env);

  const running: RunningProcess[] = [];
  const stopAll = async () => {
    await Promise.all(running.map((p) => p.stop("SIGTERM")));
    process.exit(0);
  };
  process.once("SIGINT", stopAll);
  process.once("SIGTERM", stopAll);

  const urls: string[] = [];
  for (const svc of SERVICES) {
    const proc = startTs(svc.entry, env);
    relay(svc.name, proc);
    running.push(proc);
    proc.exited.then((code) => {
      console.error(`${svc.name} exited (${code}); stopping the others`);
      void stopAll();
    });
    const line = await proc.waitForOutput(svc.ready, 60_000);
    urls.push(`  ${svc.name.padEnd(16)} ${line.match(svc.ready)?.[1] ?? "running"}`);
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
