import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { meteringWorkerEnv, loadConfig } from "@terse/config";
import { createLogger } from "@terse/logger";
import {
  channelCredentials,
  grpc,
  INTERNAL_TOKEN_METADATA,
  loadMetering,
  type MeteringClient,
} from "@terse/metering-proto";
import { quotaExceededKeyFor, quotaMonth } from "@terse/keys";
import { freePort, waitFor } from "@terse/testkit";
import { expect } from "chai";
import { MeteringGrpcClient } from "../../../metering-worker/src/metering-client.ts";
import { MAX_EVENTS_PER_CALL, startGrpcServer } from "../../src/grpc/server.ts";
import { createAccount, startHarness, testConfig, type Harness } from "../harness.ts";

// The gRPC port is not an open door: the internal token is required, and TLS works
// when certificates are configured.

const TOKEN = "control-plane-test-grpc-token";

function makeCertificates(): { dir: string; ca: string; cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), "terse-tls-"));
  const run = (args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
  run([
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "1",
    "-subj",
    "/CN=terse-test-ca",
  ]);
  run([
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "server.key",
    "-out",
    "server.csr",
    "-subj",
    "/CN=localhost",
  ]);
  execFileSync("sh", ["-c", 'printf "subjectAltName=DNS:localhost,IP:127.0.0.1" > san.ext'], { cwd: dir });
  run([
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.pem",
    "-days",
    "1",
    "-extfile",
    "san.ext",
  ]);
  return { dir, ca: join(dir, "ca.pem"), cert: join(dir, "server.pem"), key: join(dir, "server.key") };
}

function call(
  client: MeteringClient,
  metadata: grpc.Metadata,
  events: object[] = [],
): Promise<grpc.ServiceError | null> {
  return new Promise((resolve) =>
    client.RecordUsage({ events }, metadata, { deadline: Date.now() + 5_000 }, (err) => resolve(err)),
  );
}

describe("gRPC Metering service", () => {
  let h: Harness;
  before(async () => {
    h = await startHarness("grpc");
  });
  after(() => h.stop());

  it("refuses calls without the internal token, or with a wrong one, as UNAUTHENTICATED", async () => {
    const port = await freePort();
    const server = await startGrpcServer({
      config: testConfig({ DATABASE_URL: h.db.url, GRPC_PORT: String(port) }),
      db: h.prisma,
      redis: h.appRedis,
      logger: createLogger({ service: "t", level: "silent" }),
    });
    const Metering = loadMetering().Metering;
    const client = new Metering(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as MeteringClient;
    try {
      expect((await call(client, new grpc.Metadata()))?.code).to.equal(grpc.status.UNAUTHENTICATED);
      const wrong = new grpc.Metadata();
      wrong.set(INTERNAL_TOKEN_METADATA, `${TOKEN}x`);
      expect((await call(client, wrong))?.code).to.equal(grpc.status.UNAUTHENTICATED);
      const right = new grpc.Metadata();
      right.set(INTERNAL_TOKEN_METADATA, TOKEN);
      expect(await call(client, right)).to.equal(null);
      // Too many events in one call: refused as a bad argument (never retried), nothing stored.
      const tooMany = Array.from({ length: MAX_EVENTS_PER_CALL + 1 }, (_, i) => ({ event_id: `evt_${i}` }));
      const err = await call(client, right, tooMany);
      expect(err?.code).to.equal(grpc.status.INVALID_ARGUMENT);
      expect(err?.details).to.match(/at most 1000 events/);
      expect(await h.prisma.usageEvent.count()).to.equal(0);
    } finally {
      client.close();
      await server.stop();
    }
  });

  it("clears at start the marks that no longer hold against the configured limits", async () => {
    const account = await createAccount(h, "free");
    const set = quotaExceededKeyFor(quotaMonth());
    await h.redis.sadd(set, account.id); // marked, but no usage at all this month
    const server = await startGrpcServer({
      config: testConfig({ DATABASE_URL: h.db.url, GRPC_PORT: String(await freePort()) }),
      db: h.prisma,
      redis: h.appRedis,
      logger: createLogger({ service: "t", level: "silent" }),
    });
    try {
      await waitFor(async () => (await h.redis.sismember(set, account.id)) === 0, { what: "the stale mark cleared" });
    } finally {
      await server.stop();
    }
  });

  it("serves over TLS when certificates are configured, and the worker's client connects with the CA", async () => {
    const tls = makeCertificates();
    const port = await freePort();
    const server = await startGrpcServer({
      config: testConfig({
        DATABASE_URL: h.db.url,
        GRPC_PORT: String(port),
        GRPC_TLS_CERT: tls.cert,
        GRPC_TLS_KEY: tls.key,
      }),
      db: h.prisma,
      redis: h.appRedis,
      logger: createLogger({ service: "t", level: "silent" }),
    });
    const workerConfig = loadConfig(meteringWorkerEnv, {
      CONTROL_PLANE_GRPC_URL: `localhost:${port}`,
      INTERNAL_GRPC_TOKEN: TOKEN,
      GRPC_TLS_CA: tls.ca,
    });
    const client = new MeteringGrpcClient(workerConfig);
    const plaintext = new (loadMetering().Metering)(
      `127.0.0.1:${port}`,
      channelCredentials({}),
    ) as unknown as MeteringClient;
    try {
      const res = await client.recordUsage([]);
      expect(res.results).to.deep.equal([]);
      const md = new grpc.Metadata();
      md.set(INTERNAL_TOKEN_METADATA, TOKEN);
      expect((await call(plaintext, md))?.code).to.equal(grpc.status.UNAVAILABLE);
    } finally {
      client.close();
      plaintext.close();
      await server.stop();
    }
  });
});
