import type { z } from "zod";

/** Thrown for a bad environment; its message is the one line a person needs to fix it. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Parses the environment with a zod schema. The first problem becomes one line that
 * names the variable, e.g. `invalid config: DATA_PLANE_PORT: expected a port (0-65535), got "80a"`.
 */
export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const given = withoutEmpty(env);
  const result = schema.safeParse(given);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const variable = issue?.path.join(".") ?? "(environment)";
  const value = typeof issue?.path[0] === "string" ? given[issue.path[0]] : undefined;
  const shown = value === undefined ? "it is not set" : `got ${JSON.stringify(redactIfSecret(variable, value))}`;
  throw new ConfigError(`invalid config: ${variable}: ${issue?.message ?? "invalid"} (${shown})`);
}

/** For a service's main(): a bad config stops the process with one line on stderr. */
export function loadConfigOrExit<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  try {
    return loadConfig(schema, env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(78); // EX_CONFIG
  }
}

/**
 * An empty variable counts as unset: `JWT_JWKS_URL=` in an env file, or `${X:-}` in
 * docker-compose, means "no value", and the default applies.
 */
function withoutEmpty(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""));
}

function redactIfSecret(variable: string, value: string): string {
  return /SECRET|TOKEN|PASSWORD|KEY/.test(variable) ? "[REDACTED]" : value;
}
