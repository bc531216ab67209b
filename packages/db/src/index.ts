export { createDb, type Db } from "./client.ts";
export { migrate, MIGRATIONS_DIR, type MigrationResult } from "./migrate.ts";
export * from "./generated/prisma/client.ts";
