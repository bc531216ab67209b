#!/usr/bin/env node
// Builds the dashboard's browser bundle into services/control-plane/public/build/
// (git-ignored): app.js (one minified ES module, no source maps shipped), app.css and
// index.html. Run by scripts/bootstrap.mjs and by the dashboard tests; takes well under
// a second. Plain Node + esbuild, so it runs before tsx or anything else is needed.
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "public", "build");

mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, "src", "main.ts")],
  outfile: join(out, "app.js"),
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  legalComments: "none",
  logLevel: "warning",
});
copyFileSync(join(here, "src", "styles.css"), join(out, "app.css"));
copyFileSync(join(here, "src", "index.html"), join(out, "index.html"));
