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

function adapterCause(err: unknown) {
  if (typeof err !== "object" || err === null) return undefined;
  return (err as PrismaLikeError).meta?.driverAdapterError?.cause;
}

export function isDatabaseUnavailable(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const { code } = err as PrismaLikeError;
  if (typeof code === "string" && PRISMA_CODES.has(code)) return true;
  const cause = adapterCause(err);
  if (!cause) return false;
  return (
    (typeof cause.kind === "string" && ADAPTER_KINDS.has(cause.kind)) ||
    isUnavailableSqlState(cause.originalCode) ||
    isUnavailableSqlState(cause.code)
  );
}

/**
 * SQLSTATE class 22, data exception (a NUL in text, a number out of range, an invalid
 * date): Postgres refuses these values, and will refuse them on every retry.
 */
export function isDataRefused(err: unknown): boolean {
  const code = adapterCause(err)?.originalCode;
  return typeof code === "string" && code.startsWith("22");
}

/** What Postgres said about a refused value, without the value itself (it may be anyone's content). */
export function refusalReason(err: unknown): string {
  const code = adapterCause(err)?.originalCode;
  return `refused by the usage store (SQLSTATE ${typeof code === "string" ? code : "unknown"})`;
}
