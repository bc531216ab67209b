// `tsx packages/db/src/cli.ts migrate`: applies pending migrations to DATABASE_URL.
// This is the command of the one-shot migration job in docker-compose and Kubernetes.
import { migrate } from "./migrate.ts";

const url = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/terse";
const result = await migrate(url);
process.stdout.write(`${JSON.stringify({ msg: "migrations applied", ...result })}\n`);
