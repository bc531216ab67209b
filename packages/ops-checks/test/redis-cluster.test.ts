import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { KeyChangeAnnouncer, KeyLease } from "@terse/key-leases";
import {
  CACHE_GENERATION_KEY,
  CACHE_REWRITE_KEY,
  cacheKeyFor,
  encodeCachedKey,
  KEY_LEASES_KEY,
  keyChangeAcksKeyFor,
  rateLimitKeyFor,
} from "@terse/keys";
import { freePort, waitFor } from "@terse/testkit";
import { expect } from "chai";
import { Cluster, type Redis } from "ioredis";
import { KeyCache } from "../../../services/control-plane/src/infra/key-cache.ts";
import { AUTH_SCRIPT_SOURCE, AuthScript } from "../../../services/data-plane/src/infra/auth-script.ts";

// The data plane's auth + rate-limit script on a real Redis Cluster: three masters of
// Debian's redis-server on loopback ports. Every key one call touches shares the key
// hash's hash tag (svc:key:{h}, svc:rl:{h}), so the script runs whichever node owns the
// slot; a layout without the tag would fail with CROSSSLOT, which the last test shows.
// The control plane's resync stamp (marker and stamp in one slot), rate credits settled for
// keys on every master, and the key-lease protocol ({svc:dp} keys, pub/sub) run here too.

const run = promisify(execFile);
const MASTERS = 3;

function record(keyHash: string, rpm: number) {
  return encodeCachedKey({
    key_id: `key_${keyHash.slice(0, 8)}`,
    account_id: "acct_cluster",
    plan: "pro",
    rate_limit_rpm: rpm,
    intensity: "full",
    auto_compress_input: false,
    smart_detect_enabled: true,
    context_compress: true,
    context_compress_level: "standard",
  });
}

describe("the auth script on a real Redis Cluster (three masters)", function () {
  this.timeout(60_000);

  let dir: string;
  let ports: number[];
  const nodes: ChildProcess[] = [];
  let cluster: Cluster;
  let script: AuthScript;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "terse-redis-cluster-"));
    ports = [];
    for (let i = 0; i < MASTERS; i++) ports.push(await freePort());
    for (const port of ports) {
      const node = spawn(
        "redis-server",
        [
          "--port",
          String(port),
          "--bind",
          "127.0.0.1",
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          join(dir, `nodes-${port}.conf`),
          "--dir",
          dir,
          "--save",
          "",
          "--appendonly",
          "no",
          "--daemonize",
          "no",
        ],
        { stdio: "ignore" },
      );
      nodes.push(node);
    }
    for (const port of ports) {
      await waitFor(
        async () =>
          (await run("redis-cli", ["-p", String(port), "ping"]).catch(() => null))?.stdout.includes("PONG") ||
          undefined,
        { timeoutMs: 10_000, what: `redis-server on ${port}` },
      );
    }
    await run("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((p) => `127.0.0.1:${p}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ]);
    for (const port of ports) {
      await waitFor(
        async () =>
          (await run("redis-cli", ["-p", String(port), "cluster", "info"])).stdout.includes("cluster_state:ok") ||
          undefined,
        { timeoutMs: 20_000, what: `cluster_state:ok on ${port}` },
      );
    }
    cluster = new Cluster([{ host: "127.0.0.1", port: ports[0] as number }]);
    // AuthScript only defines and calls a command, which a Cluster client supports the same way.
    script = new AuthScript(cluster as unknown as Redis);
  });

  after(async () => {
    cluster?.disconnect();
    for (const node of nodes) node.kill("SIGKILL");
    await Promise.all(nodes.map((n) => new Promise((r) => (n.exitCode !== null ? r(null) : n.once("exit", r)))));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Key hashes until every master owns at least one. */
  async function hashesOnEveryMaster(): Promise<Map<string, string>> {
    const owner = new Map<string, string>();
    while (new Set(owner.values()).size < MASTERS) {
      const hash = randomBytes(32).toString("hex");
      const slot = Number(await cluster.cluster("KEYSLOT", cacheKeyFor(hash)));
      expect(Number(await cluster.cluster("KEYSLOT", rateLimitKeyFor(hash)))).to.equal(slot);
      const node = cluster.slots[slot]?.[0];
      if (node) owner.set(hash, node);
    }
    return owner;
  }

  it("authenticates and counts the rate limit of keys living on each of the three masters", async () => {
    const owner = await hashesOnEveryMaster();
    const now = Math.floor(Date.now() / 1000);
    for (const hash of owner.keys()) {
      await cluster.hset(cacheKeyFor(hash), record(hash, 3));
      for (const remaining of [2, 1, 0]) {
        const lookup = await script.run(hash, now, true);
        expect(lookup).to.deep.include({ kind: "allowed", limit: 3, remaining });
        if (lookup.kind !== "absent") expect(lookup.key.key_id).to.equal(`key_${hash.slice(0, 8)}`);
      }
      expect((await script.run(hash, now, true)).kind).to.equal("limited");
    }
    expect(new Set(owner.values()).size).to.equal(MASTERS);
  });

  it("grants and settles rate credits of keys on every master, in one call", async () => {
    const owner = await hashesOnEveryMaster();
    const now = Math.floor(Date.now() / 1000);
    const settlements = [];
    for (const hash of owner.keys()) {
      await cluster.hset(cacheKeyFor(hash), record(hash, 1_000));
      const lookup = await script.run(hash, now, true, 4);
      expect(lookup).to.deep.include({ kind: "allowed", granted: 4, remaining: 995 });
      if (lookup.kind === "absent") throw new Error("absent");
      settlements.push({
        keyHash: hash,
        nowSeconds: now,
        want: 0,
        held: [{ heldIn: lookup.heldIn, used: 1, returned: 3 }],
      });
    }
    const settled = await script.settle(settlements);
    expect(settled.map((s) => s?.remaining)).to.deep.equal([...owner.keys()].map(() => 998));
    for (const hash of owner.keys()) expect(await cluster.hget(rateLimitKeyFor(hash), "n")).to.equal("2");
  });

  it("runs the key-lease protocol: a change is acknowledged through the cluster's pub/sub", async () => {
    expect(Number(await cluster.cluster("KEYSLOT", KEY_LEASES_KEY))).to.equal(
      Number(await cluster.cluster("KEYSLOT", keyChangeAcksKeyFor("n"))),
    );
    await cluster.set(CACHE_GENERATION_KEY, "gen-lease");
    const subscriber = new Cluster([{ host: "127.0.0.1", port: ports[0] as number }]);
    const dropped: string[] = [];
    const lease = new KeyLease(cluster as unknown as Redis, subscriber as unknown as Redis, {
      ttlMs: 3_000,
      onDrop: (keys) => void dropped.push(keys === "all" ? "all" : keys.join()),
    });
    try {
      await lease.start();
      expect(lease.valid()).to.equal(true);
      const announcer = new KeyChangeAnnouncer(cluster as unknown as Redis, { leaseTtlMs: 3_000 });
      const started = performance.now();
      await announcer.announce(["abc"]);
      // Acknowledged, not waited out: well under the half lease after which it would be fenced.
      expect(performance.now() - started).to.be.below(1_500);
      expect(dropped).to.include("abc");
      expect(lease.valid()).to.equal(true);
    } finally {
      await lease.stop();
      subscriber.disconnect();
    }
  });

  it("answers absent for a key the cache does not hold", async () => {
    expect(await script.run(randomBytes(32).toString("hex"), Math.floor(Date.now() / 1000), true)).to.deep.equal({
      kind: "absent",
    });
  });

  it("stamps the control plane's resync on the cluster: marker and stamp share one slot", async () => {
    expect(Number(await cluster.cluster("KEYSLOT", CACHE_REWRITE_KEY))).to.equal(
      Number(await cluster.cluster("KEYSLOT", CACHE_GENERATION_KEY)),
    );
    const cache = new KeyCache(cluster as unknown as Redis, { leaseTtlMs: 3_000 });
    const token = await cache.beginRewrite();
    expect(await cache.stampGeneration(token, "gen-1")).to.equal(true);
    expect(await cluster.get(CACHE_GENERATION_KEY)).to.equal("gen-1");
    expect(await cache.stampGeneration(token, "gen-2")).to.equal(false);
  });

  it("would fail with CROSSSLOT if the two keys did not share a hash tag", async () => {
    const untagged = async () => {
      const name = `svc:key:${randomBytes(32).toString("hex")}`;
      return { name, slot: Number(await cluster.cluster("KEYSLOT", name)) };
    };
    const a = await untagged();
    let b = await untagged();
    while (b.slot === a.slot) b = await untagged();
    const err = await cluster.eval(AUTH_SCRIPT_SOURCE, 2, a.name, b.name, "0", "0").then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).to.match(/CROSSSLOT/);
  });
});
