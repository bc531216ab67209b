// Builds each service's runtime tree: what its container image holds under /app, and all
// it needs to run with plain `node` (no tsx, no pnpm, no dev dependencies).
//
//   node scripts/build-services.mjs [--out DIR] [--if-changed]    (default DIR: dist/runtime)
//
// DIR/<service>/ then holds:
//   services/<service>/dist/*.mjs   one ES module per entry point: our TypeScript and every
//                                   pure-JS dependency, bundled by esbuild
//   node_modules/<native addon>     the few packages that cannot be bundled, with their
//                                   dependencies, copied as the lockfile installed them
//   proto/, migrations, dashboard   the files the code reads at run time, at their repo paths
//   probe.mjs                       the container health check (scripts/probe.mjs)
//
// The Dockerfile copies DIR/<service> into /app; packages/ops-checks runs the same trees
// as plain processes, so what the images run is what the tests ran. `npm start` runs them
// too (scripts/start.ts), rebuilding only when an input changed: DIR/inputs.json holds a
// hash of every file the last build read (esbuild's own list of the modules it bundled,
// the assets, the lockfile and this script), and `--if-changed` builds only when one differs.
//
// Assets are found relative to the module that reads them (`import.meta.url`). Bundled,
// every module would share the bundle's URL, so each source file's own `import.meta.url`
// is rewritten to the URL it has in the repository layout, which the tree keeps.
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const DEFAULT_OUT = join(ROOT, "dist", "runtime");

/**
 * Per service: entry points (output name -> source, from the repo root), the files it
 * reads at run time, and the native addons it needs (their binaries are located relative
 * to their own package, so they stay packages).
 */
export const SERVICES = {
  "control-plane": {
    entries: {
      main: "services/control-plane/src/main.ts",
      migrate: "packages/db/src/cli.ts",
      admin: "services/control-plane/src/cli/admin.ts",
    },
    assets: ["proto", "packages/db/prisma/migrations", "services/control-plane/public/build"],
    natives: ["argon2"],
  },
  "data-plane": {
    entries: { main: "services/data-plane/src/main.ts" },
    assets: [],
    natives: [],
  },
  "metering-worker": {
    entries: { main: "services/metering-worker/src/main.ts" },
    assets: ["proto"],
    natives: [],
  },
};

const sourceUrlPlugin = {
  name: "source-import-meta-url",
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      let contents = await readFile(args.path, "utf8");
      if (!args.path.includes("node_modules") && contents.includes("import.meta.url")) {
        const rel = relative(ROOT, args.path).split("\\").join("/");
        contents = contents.replaceAll("import.meta.url", `__terseSourceUrl(${JSON.stringify(rel)})`);
      }
      return { contents, loader: "ts" };
    });
  },
};

// The bundles sit at services/<service>/dist/: the tree's root is three levels up. CommonJS
// dependencies inside an ES module bundle need a `require` of their own.
const BANNER = [
  'import { createRequire as __terseCreateRequire } from "node:module";',
  "const require = __terseCreateRequire(import.meta.url);",
  'const __terseTreeRoot = new URL("../../../", import.meta.url);',
  "const __terseSourceUrl = (path) => new URL(path, __terseTreeRoot).href;",
].join("\n");

/** Bundles a service's entries into its tree; resolves to the files it read, from ROOT. */
async function bundle(service, spec, tree) {
  const result = await build({
    absWorkingDir: ROOT,
    metafile: true,
    entryPoints: Object.fromEntries(Object.entries(spec.entries).map(([name, file]) => [name, join(ROOT, file)])),
    outdir: join(tree, "services", service, "dist"),
    outExtension: { ".js": ".mjs" },
    bundle: true,
    splitting: true, // the entries of one service share their common code
    platform: "node",
    target: "node20",
    format: "esm",
    external: spec.natives,
    banner: { js: BANNER },
    plugins: [sourceUrlPlugin],
    sourcemap: "linked",
    legalComments: "none",
    logLevel: "warning",
  });
  return Object.keys(result.metafile.inputs);
}

/** The directory of package `name` as Node would find it from `fromDir` (exports maps aside). */
function findPackage(name, fromDir) {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return realpathSync(candidate);
    if (dirname(dir) === dir) throw new Error(`${name} is not installed for ${fromDir}`);
  }
}

/** Copies `name` as installed for `fromDir`, then its own dependencies, into tree/node_modules. */
function copyPackage(name, fromDir, tree, done) {
  if (done.has(name)) return;
  done.add(name);
  const dir = findPackage(name, fromDir);
  const manifest = join(dir, "package.json");
  cpSync(dir, join(tree, "node_modules", name), { recursive: true, dereference: true });
  const { dependencies = {}, optionalDependencies = {} } = JSON.parse(readFileSync(manifest, "utf8"));
  for (const dep of Object.keys({ ...dependencies, ...optionalDependencies })) {
    try {
      copyPackage(dep, dir, tree, done);
    } catch (err) {
      // An optional dependency for another platform is not installed: nothing to copy.
      if (!(dep in optionalDependencies)) throw err;
    }
  }
}

/** Every file under directory `dir`, from ROOT, sorted. */
function filesUnder(dir) {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .sort();
}

const sha256 = (data) => createHash("sha256").update(data).digest("hex");

/**
 * Path -> sha256 of what the build read there: a file's content, or for `dir/` the list
 * of files in it (a file added to an asset directory is a change); "missing" when gone.
 */
function hashInputs(paths) {
  const hashes = {};
  for (const path of [...new Set(paths)].sort()) {
    const full = join(ROOT, path);
    if (!existsSync(full)) hashes[path] = "missing";
    else hashes[path] = sha256(path.endsWith("/") ? filesUnder(path).join("\n") : readFileSync(full));
  }
  return hashes;
}

const STAMP = "inputs.json";
/** Inputs no bundle lists: what decides how the trees are put together. */
const BUILD_INPUTS = ["scripts/build-services.mjs", "scripts/probe.mjs", "pnpm-lock.yaml", "tsconfig.json"];

/** Builds DIR/<service> for every service and records the inputs it read; returns DIR. */
export async function buildServices(out = DEFAULT_OUT) {
  rmSync(join(out, STAMP), { force: true }); // no stamp while the trees are half built
  const inputs = [...BUILD_INPUTS];
  for (const [service, spec] of Object.entries(SERVICES)) {
    const tree = join(out, service);
    rmSync(tree, { recursive: true, force: true });
    mkdirSync(tree, { recursive: true });
    inputs.push(...(await bundle(service, spec, tree)));
    for (const asset of spec.assets) {
      if (!existsSync(join(ROOT, asset))) throw new Error(`${asset} is missing: run node scripts/bootstrap.mjs first`);
      cpSync(join(ROOT, asset), join(tree, asset), { recursive: true });
      inputs.push(...(statSync(join(ROOT, asset)).isDirectory() ? [`${asset}/`, ...filesUnder(asset)] : [asset]));
    }
    cpSync(join(ROOT, "scripts", "probe.mjs"), join(tree, "probe.mjs"));
    const done = new Set();
    for (const name of spec.natives) copyPackage(name, join(ROOT, "services", service), tree, done);
  }
  writeFileSync(join(out, STAMP), `${JSON.stringify(hashInputs(inputs), null, 1)}\n`);
  return out;
}

/** The inputs whose content differs from what the last build in `out` read ([] when none). */
export function changedInputs(out = DEFAULT_OUT) {
  const stamp = join(out, STAMP);
  if (!existsSync(stamp)) return ["(no previous build)"];
  const recorded = JSON.parse(readFileSync(stamp, "utf8"));
  const now = hashInputs(Object.keys(recorded));
  return Object.keys(recorded).filter((path) => recorded[path] !== now[path]);
}

/** Builds the trees unless the last build in `out` read exactly the files there are now. */
export async function buildServicesIfChanged(out = DEFAULT_OUT) {
  const changed = changedInputs(out);
  if (changed.length === 0) return { out, built: false, changed };
  await buildServices(out);
  return { out, built: true, changed };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf("--out");
  const out = at > 0 ? process.argv[at + 1] : DEFAULT_OUT;
  if (process.argv.includes("--if-changed")) {
    const { built } = await buildServicesIfChanged(out);
    process.stdout.write(`service trees in ${out}${built ? "" : " (up to date)"}\n`);
  } else {
    await buildServices(out);
    process.stdout.write(`service trees in ${out}\n`);
  }
}
