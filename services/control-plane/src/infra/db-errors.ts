// Which database failures mean "Postgres is not there right now" (a 503 the caller may
// retry) rather than a bug (a 500). Prisma reports them as error codes, and with the
// pg driver adapter also as the adapter's error kind or Postgres's SQLSTATE.

/** Prisma: can't reach, timed out, server closed the connection, pool timeout. */
const PRISMA_CODES = new Set(["P1001", "P1002", "P1008", "P1017", "P2024"]);

/** @prisma/adapter-pg's error kinds for a connection that failed or went away. */
const ADAPTER_KINDS = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections"]);

/**
 * SQLSTATE: class 08 connection exception, 57P01-57P03 (the server shutting down or
 * starting up), 53300 too many connections.
 */
function isUnavailableSqlState(code: unknown): boolean {
  return typeof code === "string" && (code.startsWith("08") || /^57P0[1-3]$/.test(code) || code === "53300");
}

interface PrismaLikeError {
  code?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: unknown; originalCode?: unknown; code?: unknown } } };
}

export function isDatabaseUnavailable(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const { code, meta } = err as PrismaLikeError;
  if (typeof code === "string" && PRISMA_CODES.has(code)) return true;
  const cause = meta?.driverAdapterError?.cause;
  if (!cause) return false;
  return (
    (typeof cause.kind === "string" && ADAPTER_KINDS.has(cause.kind)) ||
    isUnavailableSqlState(cause.originalCode) ||
    isUnavailableSqlState(cause.code)
  );
}
