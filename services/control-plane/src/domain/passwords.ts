import { randomBytes } from "node:crypto";
import argon2 from "argon2";

// argon2id with OWASP's recommended minimum (19 MiB, 2 passes, 1 lane): strong, and
// cheap enough that a 2-core machine can serve logins while it is under attack.
const OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, OPTIONS);
}

let dummyHash: Promise<string> | undefined;

/**
 * Verifies `password` against `hash`. Without a hash (unknown email, or an account that
 * signs in only through an external identity provider) it verifies against a dummy
 * hash of the same cost and answers false, so the time taken does not tell whether
 * the email exists.
 */
export async function verifyPassword(hash: string | null, password: string): Promise<boolean> {
  if (hash === null) {
    dummyHash ??= hashPassword(randomBytes(16).toString("hex"));
    await argon2.verify(await dummyHash, password).catch(() => false);
    return false;
  }
  try {
    return await argon2.verify(hash, password);
  } catch {
    return false;
  }
}

/** Computes the dummy hash up front, so the first unknown-email login is not faster. */
export async function warmUpPasswords(): Promise<void> {
  await verifyPassword(null, "warm-up");
}
