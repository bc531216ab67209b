import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseEnv } from "node:util";

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");

/**
 * The environment an admin command runs with: the repo's `.env` (written by `npm start`)
 * under the process environment, which wins. So `pnpm admin ...` on a development
 * machine talks to the same database as the running services.
 */
export function adminEnvironment(): NodeJS.ProcessEnv {
  const file = join(REPO_ROOT, ".env");
  const fromFile = existsSync(file) ? parseEnv(readFileSync(file, "utf8")) : {};
  return { ...fromFile, ...process.env };
}
