import { z } from "zod";

// Building blocks of the service schemas: every variable is a string in the
// environment, so each of these parses a string (or absence) into a typed value.

export const port = (fallback: number) =>
  z
    .string()
    .regex(/^\d{1,5}$/, "expected a port (0-65535)")
    .transform(Number)
    .refine((n) => n <= 65_535, "expected a port (0-65535)")
    .prefault(String(fallback));

export const positiveInt = (fallback: number) =>
  z
    .string()
    .regex(/^\d+$/, "expected a positive integer")
    .transform(Number)
    .refine((n) => n > 0 && Number.isSafeInteger(n), "expected a positive integer")
    .prefault(String(fallback));

export const nonNegativeInt = (fallback: number) =>
  z
    .string()
    .regex(/^\d+$/, "expected a whole number")
    .transform(Number)
    .refine((n) => Number.isSafeInteger(n), "expected a whole number")
    .prefault(String(fallback));

export const url = (fallback?: string) => {
  const base = z.string().url("expected a URL");
  return fallback === undefined ? base : base.default(fallback);
};

export const optionalString = () => z.string().min(1).optional();

export const bool = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0"], { message: "expected true or false" })
    .transform((v) => v === "true" || v === "1")
    .prefault(fallback ? "true" : "false");

export const logLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info");

/** `host:port`, as gRPC wants it. */
export const hostPort = () => z.string().regex(/^[A-Za-z0-9.\-_[\]:]+:\d{1,5}$/, "expected host:port");
