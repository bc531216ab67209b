import { randomBytes } from "node:crypto";
import { migrate } from "@terse/db";
import pg from "pg";
import { waitFor } from "./wait.ts";

/** Server to create scratch databases on; tests never touch the development database. */
const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase {
  url: string;
  name: string;
  /** Runs SQL against the scratch database. */
  query<T extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<pg.QueryResult<T>>;
  /**
   * Resolves once no session tagged with `applicationName` (the app's own pool, opened
   * with `?application_name=`) is left: the proof that the app closed its connections.
   */
  untilDisconnected(applicationName: string): Promise<void>;
  drop(): Promise<void>;
}

/** A new, migrated database of its own for one test suite; `drop()` removes it. */
export async function createTestDatabase(label = "t"): Promise<TestDatabase> {
  const name = `terse_test_${label.replace(/[^a-z0-9_]/gi, "_").toLowerCase()}_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(ADMIN_URL, name);
  await migrate(url);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  return {
    url,
    name,
    query: (sql, params) => pool.query(sql, params),
    async untilDisconnected(applicationName) {
      await waitFor(
        async () => {
          const open = await pool.query("SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = $2", [
            name,
            applicationName,
          ]);
          return open.rowCount === 0;
        },
        { timeoutMs: 5_000, what: `${applicationName}'s Postgres connections to close` },
      );
    },
    async drop() {
      await pool.end();
      const client = new pg.Client({ connectionString: ADMIN_URL });
      await client.connect();
      try {
        await reportStragglers(client, name);
        await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * Sessions still on the database when it is dropped are killed by the drop, and a client
 * without an error listener then throws in the test process, far from its cause. Those of
 * processes the test just killed are on their way out: they get a second to go. Any still
 * there are named on stderr (pid, application, state, last statement).
 */
async function reportStragglers(admin: pg.Client, database: string): Promise<void> {
  const sessions = async () =>
    (
      await admin.query(
        `SELECT pid, application_name, state, left(query, 200) AS query FROM pg_stat_activity
         WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
        [database],
      )
    ).rows;
  const gone = await waitFor(async () => (await sessions()).length === 0, { timeoutMs: 1_000 }).catch(() => false);
  if (gone) return;
  const left = await sessions();
  if (left.length > 0) console.warn(`[testkit] sessions left on ${database} at its drop:`, JSON.stringify(left));
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
