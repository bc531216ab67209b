#!/usr/bin/env node
// Installs what is missing so that `npm start` and `npm test` work on a machine that has
// only Node, Postgres and Redis: pnpm (through npx), the workspace's dependencies, the
// generated Prisma client. Plain Node with no dependencies, since it runs before any exist.
// Each step is skipped when its inputs have not changed since it last ran.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const stampDir = join(root, "node_modules", ".terse-bootstrap");

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.error(`terse needs Node 20.19 or newer; this is ${process.versions.node}`);
  process.exit(1);
}

function hashFiles(files) {
  const h = createHash("sha256");
  for (const f of files) h.update(f).update(existsSync(join(root, f)) ? readFileSync(join(root, f)) : "");
  return h.digest("hex");
}

function step(name, inputs, outputs, run) {
  const stamp = join(stampDir, name);
  const digest = hashFiles(inputs);
  const fresh =
    existsSync(stamp) && readFileSync(stamp, "utf8") === digest && outputs.every((o) => existsSync(join(root, o)));
  if (fresh) return;
  console.error(`[bootstrap] ${name}`);
  run();
  mkdirSync(stampDir, { recursive: true });
  writeFileSync(stamp, digest);
}

function sh(cmd, args, { cwd = root, env = {} } = {}) {
  execFileSync(cmd, args, { cwd, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, ...env } });
}

function hasPnpm() {
  try {
    execFileSync("pnpm", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function pnpm(args) {
  if (hasPnpm()) sh("pnpm", args);
  else sh("npx", ["-y", "pnpm@10", ...args]);
}

const workspaceManifests = ["package.json", "pnpm-lock.yaml", "pnpm-workspace.yaml", ...listManifests()];

function listManifests() {
  const out = [];
  for (const dir of ["packages", "services"]) {
    const base = join(root, dir);
    if (!existsSync(base)) continue;
    for (const name of execFileSync("ls", [base]).toString().split("\n").filter(Boolean)) {
      const manifest = join(dir, name, "package.json");
      if (existsSync(join(root, manifest))) out.push(manifest);
    }
  }
  return out;
}

// The coding-agent CLIs (packages/agent-clis, several hundred MB of native binaries) are
// for their tests only: `npm test` passes --with-agent-clis; `npm start`, the typecheck
// and the image build install the workspace without them.
const withAgentClis = process.argv.includes("--with-agent-clis");
const install = ["install", "--frozen-lockfile", "--prefer-offline", "--reporter=append-only"];
step(
  withAgentClis ? "install-with-agent-clis" : "install",
  workspaceManifests,
  withAgentClis ? ["node_modules/.modules.yaml", "packages/agent-clis/node_modules"] : ["node_modules/.modules.yaml"],
  () => pnpm(withAgentClis ? install : [...install, "--filter", "!@terse/agent-clis"]),
);

// Prisma's generate needs no network once PRISMA_SCHEMA_ENGINE_BINARY names any file
// (DESIGN.md section 6): the client runs on the query compiler, with no engine binary.
step(
  "prisma-generate",
  ["packages/db/prisma/schema.prisma", "pnpm-lock.yaml"],
  ["packages/db/src/generated/prisma/client.ts"],
  () =>
    sh(join(root, "packages/db/node_modules/.bin/prisma"), ["generate"], {
      cwd: join(root, "packages/db"),
      env: { PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: "1" },
    }),
);

// The dashboard's browser bundle (git-ignored), built by esbuild in well under a second.
const dashboardSources = execFileSync("ls", [join(root, "services/control-plane/dashboard/src")])
  .toString()
  .split("\n")
  .filter(Boolean)
  .map((f) => `services/control-plane/dashboard/src/${f}`);
step(
  "dashboard-build",
  // The key settings' vocabulary is bundled in from @terse/keys.
  ["services/control-plane/dashboard/build.mjs", "packages/keys/src/settings.ts", ...dashboardSources],
  ["services/control-plane/public/build/app.js"],
  () => sh(process.execPath, ["services/control-plane/dashboard/build.mjs"]),
);
