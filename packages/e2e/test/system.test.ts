import { execFile } from "node:child_process";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { promisify } from "node:util";
import { type System, startSystem } from "@terse/reliability";
import {
  close,
  createTestDatabase,
  freshRedis,
  listen,
  REPO_ROOT,
  type TestDatabase,
  testRedisUrl,
  waitFor,
} from "@terse/testkit";
import { expect } from "chai";
import type { Redis } from "ioredis";
import OpenAI from "openai";

// The whole system as it runs in production: three separate processes (each service's
// real main.ts), real Postgres, Redis, BullMQ and gRPC, the official OpenAI SDK as the
// client and a fake OpenAI upstream that bills a fixed number of tokens per call.

const run = promisify(execFile);
const PROVIDER_KEY = "sk-e2e-provider-0123456789abcdefXYZ";
const PROMPT_TOKENS = 400;
const COMPLETION_TOKENS = 200;
// Two calls (1,200 tokens) cross this; the third must be refused.
const MONTHLY_TOKENS = 1_000;

interface Upstream {
  url: string;
  server: Server;
  seen: { authorization: string | undefined; body: Record<string, unknown> }[];
}

async function fakeOpenAi(): Promise<Upstream> {
  const seen: Upstream["seen"] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" }).end('{"object":"list","data":[]}');
      return;
    }
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw) as Record<string, unknown>;
    seen.push({ authorization: req.headers.authorization, body });
    const usage = { prompt_tokens: PROMPT_TOKENS, completion_tokens: COMPLETION_TOKENS, total_tokens: 600 };
    res.writeHead(200, { "content-type": "application/json", "x-request-id": "req_upstream" });
    res.end(
      JSON.stringify({
        id: "chatcmpl-e2e",
        object: "chat.completion",
        created: 1_700_000_000,
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: "Paris." }, finish_reason: "stop" }],
        usage,
      }),
    );
  });
  return { url: await listen(server), server, seen };
}

describe("the whole system, as separate processes", function () {
  this.timeout(120_000);

  let db: TestDatabase;
  let redis: Redis;
  let upstream: Upstream;
  let system: System;
  let controlPlane: string;
  let dataPlane: string;

  before(async () => {
    db = await createTestDatabase("e2e");
    redis = await freshRedis("e2e");
    upstream = await fakeOpenAi();
    system = await startSystem({
      redisUrl: testRedisUrl("e2e"),
      databaseUrl: db.url,
      upstreamUrl: upstream.url,
      // Info-level logs: the secrets test below reads everything the services would log.
      env: {
        NODE_ENV: "test",
        LOG_LEVEL: "info",
        TERSE_PLANS: JSON.stringify({ free: { monthly_tokens: MONTHLY_TOKENS } }),
      },
    });
    controlPlane = system.controlPlaneUrl;
    dataPlane = system.dataPlaneUrl;
  });

  after(async () => {
    await system?.close();
    await close(upstream.server);
    await redis.flushdb();
    redis.disconnect();
    await db.drop();
  });

  const email = "e2e@example.com";
  const password = "correct horse battery staple";
  let token: string;
  let rawKey: string;
  let keyId: string;

  it("creates an account with the admin CLI and signs in", async () => {
    const { stdout } = await run(
      `${REPO_ROOT}/node_modules/.bin/tsx`,
      [
        "services/control-plane/src/cli/admin.ts",
        "accounts:create",
        "--email",
        email,
        "--password",
        password,
        "--plan",
        "free",
      ],
      { cwd: REPO_ROOT, env: { ...process.env, ...system.env } },
    );
    const account = JSON.parse(stdout) as { email: string; plan: string };
    expect(account).to.include({ email, plan: "free" });
    expect(stdout).not.to.include(password);
    const login = await fetch(`${controlPlane}/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password }),
    });
    expect(login.status).to.equal(200);
    token = ((await login.json()) as { access_token: string }).access_token;
  });

  it("creates a service key over HTTP", async () => {
    const res = await fetch(`${controlPlane}/v1/auth/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "e2e" }),
    });
    expect(res.status).to.equal(201);
    const key = (await res.json()) as { id: string; raw_key: string };
    rawKey = key.raw_key;
    keyId = key.id;
    expect(rawKey).to.match(/^svc_live_/);
  });

  function client(): OpenAI {
    return new OpenAI({
      baseURL: `${dataPlane}/v1`,
      apiKey: rawKey,
      defaultHeaders: { "X-Provider-Key": PROVIDER_KEY },
      maxRetries: 0,
    });
  }

  it("proxies to the upstream with the provider key, and meters each call once", async () => {
    for (let i = 0; i < 2; i++) {
      const answer = await client().chat.completions.create({
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "Capital of France?" }],
      });
      expect(answer.choices[0]?.message.content).to.equal("Paris.");
    }
    expect(upstream.seen).to.have.length(2);
    expect(upstream.seen[0]?.authorization).to.equal(`Bearer ${PROVIDER_KEY}`);
    const rows = await waitFor(
      async () => {
        const r = await db.query<{ n: string; tokens: string }>(
          "SELECT count(*) AS n, sum(input_tokens + output_tokens) AS tokens FROM usage_events WHERE key_id = $1",
          [keyId],
        );
        return r.rows[0]?.n === "2" ? r.rows[0] : undefined;
      },
      { timeoutMs: 20_000, what: "two usage events in Postgres" },
    );
    expect(Number(rows.tokens)).to.equal(2 * (PROMPT_TOKENS + COMPLETION_TOKENS));
  });

  it("answers 429 token quota exceeded once the month's tokens pass the plan limit", async () => {
    const status = await waitFor(
      async () => {
        try {
          await client().chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
          return undefined;
        } catch (err) {
          return err instanceof OpenAI.APIError && err.status === 429 ? err : undefined;
        }
      },
      { timeoutMs: 20_000, intervalMs: 200, what: "429 token quota exceeded" },
    );
    expect(status.message).to.include("token quota exceeded");
  });

  it("lets calls through again at once after a plan upgrade (pnpm admin accounts:set-plan)", async () => {
    await run(
      `${REPO_ROOT}/node_modules/.bin/tsx`,
      ["services/control-plane/src/cli/admin.ts", "accounts:set-plan", "--email", email, "--plan", "pro"],
      { cwd: REPO_ROOT, env: { ...process.env, ...system.env } },
    );
    const answer = await waitFor(
      async () => {
        try {
          return await client().chat.completions.create({
            model: "gpt-4o-mini",
            messages: [{ role: "user", content: "hi" }],
          });
        } catch {
          return undefined;
        }
      },
      { timeoutMs: 10_000, intervalMs: 100, what: "a call after the upgrade" },
    );
    expect(answer.choices[0]?.message.content).to.equal("Paris.");
  });

  it("reports the usage and last_used_at on the control plane", async () => {
    const usage = await fetch(`${controlPlane}/v1/usage?group_by=key`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(usage.status).to.equal(200);
    const body = (await usage.json()) as { totals: { input_tokens: number; output_tokens: number } };
    expect(body.totals.output_tokens).to.be.at.least(2 * COMPLETION_TOKENS);
    const keys = (await (
      await fetch(`${controlPlane}/v1/auth/keys`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { id: string; last_used_at: string | null }[];
    expect(keys.find((k) => k.id === keyId)?.last_used_at).to.be.a("string");
  });

  it("moves last_used_at for a call no usage event records (a model list)", async () => {
    const created = await fetch(`${controlPlane}/v1/auth/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "lists-models" }),
    });
    const key = (await created.json()) as { id: string; raw_key: string };
    const models = await fetch(`${dataPlane}/v1/models`, {
      headers: { authorization: `Bearer ${key.raw_key}`, "x-provider-key": PROVIDER_KEY },
    });
    expect(models.status).to.equal(200);
    // The control plane carries the data plane's notes every 10 s.
    const used = await waitFor(
      async () => {
        const keys = (await (
          await fetch(`${controlPlane}/v1/auth/keys`, { headers: { authorization: `Bearer ${token}` } })
        ).json()) as { id: string; last_used_at: string | null }[];
        return keys.find((k) => k.id === key.id)?.last_used_at ?? undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500, what: "last_used_at of a key that only listed models" },
    );
    expect(Date.parse(used)).to.be.within(Date.now() - 60_000, Date.now());
    await fetch(`${controlPlane}/v1/auth/keys/${key.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
  });

  it("refuses a revoked key with 401 from the moment DELETE returns", async () => {
    const del = await fetch(`${controlPlane}/v1/auth/keys/${keyId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(del.status).to.equal(200);
    const res = await fetch(`${dataPlane}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${rawKey}`,
        "x-provider-key": PROVIDER_KEY,
        "content-type": "application/json",
      },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).to.equal(401);
    expect(((await res.json()) as { error: { message: string } }).error.message).to.equal("Invalid API key");
  });

  it("never writes the raw key, the provider key or the password to logs, Postgres or Redis", async () => {
    const services = ["controlPlane", "dataPlane", "worker"] as const;
    const logs = services.map((name) => system.process(name).output()).join("\n");
    expect(logs.length).to.be.greaterThan(0);
    const { stdout: dump } = await run("pg_dump", ["--data-only", db.url], { maxBuffer: 64 * 1024 * 1024 });
    expect(dump).to.include(keyId);
    const redisDump: string[] = [];
    for (const key of await redis.keys("*")) {
      const type = await redis.type(key);
      redisDump.push(key);
      if (type === "hash") redisDump.push(JSON.stringify(await redis.hgetall(key)));
      if (type === "string") redisDump.push(String(await redis.get(key)));
      if (type === "set") redisDump.push(JSON.stringify(await redis.smembers(key)));
      if (type === "zset") redisDump.push(JSON.stringify(await redis.zrange(key, 0, -1)));
      if (type === "list") redisDump.push(JSON.stringify(await redis.lrange(key, 0, -1)));
      if (type === "stream") redisDump.push(JSON.stringify(await redis.xrange(key, "-", "+")));
    }
    for (const secret of [rawKey, PROVIDER_KEY, password, token]) {
      expect(logs, "service logs").not.to.include(secret);
      expect(dump, "pg_dump").not.to.include(secret);
      expect(redisDump.join("\n"), "redis dump").not.to.include(secret);
    }
  });
});
