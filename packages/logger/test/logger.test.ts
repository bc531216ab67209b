import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT, waitFor } from "@terse/testkit";
import { expect } from "chai";

// The default destination batches lines: none may be lost at a normal exit, none may
// wait long in a process that goes on running, and secrets stay redacted.

const LOGGER = join(REPO_ROOT, "packages/logger/src/index.ts");

function runScript(body: string): { lines: () => string[]; exited: Promise<number | null>; kill(): void } {
  const dir = mkdtempSync(join(tmpdir(), "terse-logger-"));
  const file = join(dir, "script.ts");
  writeFileSync(file, `import { createLogger } from ${JSON.stringify(LOGGER)};\n${body}\n`);
  const child = spawn(process.execPath, ["--import", "tsx", file], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (c: Buffer) => {
    out += c.toString();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on("close", (code) => {
      rmSync(dir, { recursive: true, force: true });
      resolve(code);
    }),
  );
  return { lines: () => out.split("\n").filter(Boolean), exited, kill: () => child.kill("SIGKILL") };
}

describe("logger", function () {
  this.timeout(30_000);

  it("writes every line of a process that exits at once, in order, secrets redacted", async () => {
    const run = runScript(`
      const log = createLogger({ service: "t" });
      for (let i = 0; i < 5000; i++) log.info({ i, authorization: "Bearer svc_live_secret" }, "line");
      process.exit(0);
    `);
    expect(await run.exited).to.equal(0);
    const lines = run.lines().map((l) => JSON.parse(l) as { i: number; authorization: string });
    expect(lines.map((l) => l.i)).to.deep.equal(Array.from({ length: 5000 }, (_, i) => i));
    expect(run.lines().join("\n")).not.to.include("svc_live_secret");
    expect(lines[0]?.authorization).to.equal("[REDACTED]");
  });

  it("writes a lone line of a running process within a moment, not only when its buffer fills", async () => {
    const run = runScript(`
      const log = createLogger({ service: "t" });
      log.info("alone");
      setInterval(() => undefined, 1000);
    `);
    try {
      await waitFor(() => run.lines().some((l) => l.includes('"msg":"alone"')), {
        timeoutMs: 10_000,
        what: "the line on stdout",
      });
    } finally {
      run.kill();
      await run.exited;
    }
  });
});
