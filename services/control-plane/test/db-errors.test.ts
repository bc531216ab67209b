import { expect } from "chai";
import { isDatabaseUnavailable } from "../src/infra/db-errors.ts";

// The shapes Prisma's errors take with @prisma/adapter-pg (seen from a stopped server in
// packages/reliability/test/faults/postgres-down.test.ts); a 503 for these, a 500 for the rest.

const adapter = (cause: object) => ({
  code: "P2010",
  meta: { driverAdapterError: { name: "DriverAdapterError", cause } },
});

describe("isDatabaseUnavailable", () => {
  it("is true for a database that cannot be reached, closed the connection or is shutting down", () => {
    for (const err of [
      { code: "P1001", meta: { driverAdapterError: { cause: { kind: "DatabaseNotReachable" } } } },
      { code: "P1017" },
      { code: "P2024" },
      adapter({ kind: "DatabaseNotReachable", host: "127.0.0.1", port: 5432 }),
      adapter({ kind: "ConnectionClosed" }),
      adapter({ kind: "postgres", code: "57P01", originalCode: "57P01", message: "terminating connection" }),
      adapter({ kind: "postgres", originalCode: "08006" }),
      adapter({ kind: "postgres", originalCode: "53300" }),
    ]) {
      expect(isDatabaseUnavailable(err), JSON.stringify(err)).to.equal(true);
    }
  });

  it("is false for a bug or a constraint (those stay 500 or their own answer)", () => {
    for (const err of [
      new TypeError("x is undefined"),
      { code: "P2002", meta: { target: ["name"] } },
      adapter({ kind: "UniqueConstraintViolation" }),
      adapter({ kind: "postgres", originalCode: "22P02" }),
      null,
      "P1001",
    ]) {
      expect(isDatabaseUnavailable(err), JSON.stringify(err)).to.equal(false);
    }
  });
});
