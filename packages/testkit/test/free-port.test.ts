import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { expect } from "chai";
import { freePort } from "../src/index.ts";

// A port a test hands a process to bind must not be one the kernel may give an outgoing
// connection meanwhile: freePort takes it below that range, and free when checked.

describe("freePort", () => {
  it("gives free ports below the range of outgoing connections' ports", async () => {
    const start = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).to.be.at.least(10_000);
      expect(port).to.be.below(start);
      // Free: a server binds it.
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => resolve());
      });
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
