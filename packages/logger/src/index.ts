import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger };

// Secrets are removed by the logger's own configuration, so no caller has to remember.
// Paths cover the request objects pino-http logs and the field names our code uses.
export const REDACT_PATHS = [
  "req.headers.authorization",
  'req.headers["x-provider-key"]',
  'req.headers["x-api-key"]',
  'req.headers["x-goog-api-key"]',
  "req.headers.cookie",
  'res.headers["set-cookie"]',
  "authorization",
  "password",
  "*.password",
  "passwordHash",
  "*.passwordHash",
  "raw_key",
  "*.raw_key",
  "rawKey",
  "*.rawKey",
  "access_token",
  "*.access_token",
  "token",
  "*.token",
  "providerKey",
  "*.providerKey",
  "provider_key",
  "*.provider_key",
  "secret",
  "*.secret",
];

export interface LoggerOptions {
  service: string;
  level?: string;
  /** Tests pass a stream to read what was logged. */
  destination?: DestinationStream;
}

/** Structured JSON lines, one logger per process, stamped with the service name. */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      level: options.level ?? "info",
      base: { service: options.service },
      redact: { paths: REDACT_PATHS, censor: "[REDACTED]" },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination,
  );
}
