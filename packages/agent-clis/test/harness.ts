import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { type Intensity, instructionFor } from "@terse/compression";
import {
  type Endpoint,
  type ReceivedRequest,
  resultText,
  type ScriptedToolCall,
  toolResultIn,
} from "@terse/fake-provider";
import { recallKeyFor } from "@terse/keys";
import { type Account, type CreatedKey, type Rig, startRig } from "@terse/reliability";
import { REPO_ROOT, startProcess, waitFor } from "@terse/testkit";
import { expect } from "chai";

// A real coding-agent CLI run through terse: the whole system as production runs it
// (three processes, Postgres, Redis) in front of the fake provider, which scripts one
// tool call and then a final answer. Each CLI gets a home, a config and a workspace of
// its own in a temp dir, and only the environment its test gives it.

/** Where the pinned CLIs are installed (packages/agent-clis/package.json). */
export const CLI_MODULES = join(REPO_ROOT, "packages/agent-clis/node_modules");

/** The fake's usage for every model call (its default): what each usage event must carry. */
export const TOKENS_PER_CALL = { input: 11, output: 7 };

/** Longer than any CLI run is allowed (AGENT_RUN_MS), so a hung CLI fails as a timeout with its output. */
export const TEST_TIMEOUT_MS = 240_000;
const AGENT_RUN_MS = 150_000;

export interface AgentRig {
  rig: Rig;
  /** The account the keys are made in, signed in. */
  account: Account;
  serviceKey: string;
  keyId: string;
  close(): Promise<void>;
}

async function startAgentRig(label: string): Promise<AgentRig> {
  // The fake records every request (startRig's default is counts only); info-level logs
  // give the data plane's line per answer (method, path, status), refusals included.
  const rig = await startRig(label, { recordUpstream: true, env: { LOG_LEVEL: "info" } });
  try {
    const account = await rig.system.createAccount(`${label}@example.com`);
    const key = await rig.system.createKey(account, label);
    return { rig, account, serviceKey: key.raw_key, keyId: key.id, close: () => rig.close() };
  } catch (err) {
    await rig.close();
    throw err;
  }
}

export interface AgentContext {
  agent: AgentRig;
  ws: Workspace;
}

/**
 * The hooks of one CLI's suite: the system and a workspace made before its tests
 * (`prepare` writes the CLI's config), removed after. Fields are set once `before` ran.
 */
export function withAgentRig(label: string, prepare?: (ctx: AgentContext) => Promise<void>): AgentContext {
  const ctx = {} as AgentContext;
  before(async () => {
    // One at a time: a rig that fails to start must not leave a workspace nobody removes.
    ctx.ws = await makeWorkspace();
    ctx.agent = await startAgentRig(label);
    await prepare?.(ctx);
  });
  after(async () => {
    await ctx.agent?.close();
    await ctx.ws?.remove();
  });
  return ctx;
}

/** The exchange each test scripts: call `tool` on the workspace's file, then answer with what it holds. */
export function readNotesScript(ws: Workspace, tool: string, args: Record<string, unknown>): ScriptedToolCall {
  return { name: tool, arguments: args, answer: `The code word is ${ws.marker}.` };
}

/**
 * What every agent test checks once its CLI finished: the provider got only known
 * paths, its own key and never the service key, the scripted round trip with terse's
 * instruction; terse answered everything with a success, metered every model call and
 * logged no key.
 */
export async function expectAgentTraffic(
  ctx: AgentContext,
  script: ScriptedToolCall,
  providerKey: string,
): Promise<void> {
  const { agent, ws } = ctx;
  const received = agent.rig.fake.received;
  expect(agent.rig.fake.unrouted).to.deep.equal([]);
  expectCredentialsSwapped(received, agent.serviceKey, providerKey);
  expectToolRoundTrip(received, script, ws.marker);
  await expectUsageRecorded(agent, received);
  await expectEveryAnswerOk(agent, received.length);
  expectNoSecretsLogged(agent, [agent.serviceKey, providerKey]);
}

/** A project directory holding one file the agent must read, and a home for the CLI's config. */
export interface Workspace {
  dir: string;
  home: string;
  notes: string;
  /** The file's unique content: proof that the tool really ran and its result came back. */
  marker: string;
  remove(): Promise<void>;
}

async function makeWorkspace(): Promise<Workspace> {
  const root = await mkdtemp(join(tmpdir(), "terse-agent-"));
  const dir = join(root, "project");
  const home = join(root, "home");
  await Promise.all([mkdir(dir), mkdir(home)]);
  const marker = `PELICAN-${process.pid}-${Date.now()}`;
  const notes = join(dir, "notes.txt");
  await writeFile(notes, `The code word is ${marker}.\n`);
  return { dir, home, notes, marker, remove: () => rm(root, { recursive: true, force: true }) };
}

export interface AgentRun {
  exit: number | string;
  /** What it printed on stdout alone (its answer). */
  stdout: string;
  /** stdout and stderr as they came, for failure messages. */
  output: string;
}

/** Runs a CLI's JavaScript entry point (a path under CLI_MODULES) under this Node: see runProgram. */
export function runCli(entry: string, args: string[], env: Record<string, string>, cwd: string): Promise<AgentRun> {
  return runProgram(process.execPath, [join(CLI_MODULES, entry), ...args], env, cwd);
}

/**
 * Runs a CLI with exactly `env` (plus PATH), in `cwd`. Its process group is killed if it
 * outlives AGENT_RUN_MS (an agent that retries a failing endpoint can take minutes), and
 * the run resolves with what it printed.
 */
export async function runProgram(
  file: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<AgentRun> {
  const proc = startProcess(file, args, env, { cwd });
  let stdout = "";
  proc.child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const timer = setTimeout(() => void proc.stop("SIGKILL"), AGENT_RUN_MS);
  try {
    const exit = await proc.exited;
    return { exit, stdout, output: proc.output() };
  } finally {
    clearTimeout(timer);
  }
}

const MODEL_CALLS: ReadonlySet<Endpoint> = new Set([
  "chat.completions",
  "responses",
  "messages",
  "generateContent",
  "streamGenerateContent",
]);

/** The requests terse forwarded that were model calls (metered), as opposed to counts and model lists. */
export function modelCalls(received: readonly ReceivedRequest[]): ReceivedRequest[] {
  return received.filter((r) => MODEL_CALLS.has(r.endpoint));
}

/** Where the provider key must arrive upstream, per provider. */
function providerKeyOf(request: ReceivedRequest): string | undefined {
  if (request.provider === "anthropic") return request.headers["x-api-key"] as string | undefined;
  if (request.provider === "openai") return request.headers.authorization?.replace(/^Bearer /, "");
  return request.query.key;
}

/** No request upstream carries the service key anywhere; each carries the provider key where its provider wants it. */
function expectCredentialsSwapped(received: readonly ReceivedRequest[], serviceKey: string, providerKey: string): void {
  expect(received).not.to.be.empty;
  for (const request of received) {
    expect(JSON.stringify([request.url, request.headers]), request.url).not.to.include(serviceKey);
    expect(JSON.stringify(request.body), request.url).not.to.include(serviceKey);
    expect(request.headers, request.url).not.to.have.property("x-provider-key");
    expect(providerKeyOf(request), request.url).to.equal(providerKey);
  }
}

const LEVELS: readonly Intensity[] = ["lite", "full", "ultra"];

/** True when the body carries terse's response-compression instruction (at whichever level smart detection chose). */
export function carriesInstruction(request: ReceivedRequest): boolean {
  const body = JSON.stringify(request.body);
  return LEVELS.some((level) => body.includes(JSON.stringify(instructionFor(level)).slice(1, -1)));
}

/**
 * The exchange the fake scripted happened: a model call offering the tool got the
 * call, a later one carried its result (the file's marker in it), both with the
 * compression instruction.
 */
function expectToolRoundTrip(received: readonly ReceivedRequest[], script: ScriptedToolCall, marker: string): void {
  const calls = modelCalls(received);
  const withResult = calls.filter((r) => toolResultIn(r.endpoint, r.body, script) !== undefined);
  expect(withResult, "a request carrying the tool's result").not.to.be.empty;
  const result = toolResultIn(withResult[0]!.endpoint, withResult[0]!.body, script);
  expect(JSON.stringify(result)).to.include(marker);
  const first = calls.indexOf(withResult[0]!);
  const asked = calls.slice(0, first).filter((r) => toolResultIn(r.endpoint, r.body, script) === undefined);
  expect(asked, "a request before it, answered with the tool call").not.to.be.empty;
  expect(carriesInstruction(asked[asked.length - 1]!), "compression instruction in the first agent turn").to.equal(
    true,
  );
  expect(carriesInstruction(withResult[0]!), "compression instruction in the turn with the result").to.equal(true);
}

interface AnswerLine {
  method: string;
  path: string;
  status: number;
}

/** The data plane's log line for each request it answered. */
function answers(agent: AgentRig): AnswerLine[] {
  return agent.rig.system
    .process("dataPlane")
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Partial<AnswerLine>)
    .filter((l): l is AnswerLine => typeof l.path === "string" && typeof l.status === "number");
}

/**
 * terse answered everything the agent sent (its answers from the `since`th on) with a
 * success (no 404 for an endpoint it lacks, no 4xx from a check). Log lines reach stdout
 * in batches (packages/logger): the line of every forwarded request is waited for.
 */
async function expectEveryAnswerOk(agent: AgentRig, forwarded: number, since = 0): Promise<void> {
  const lines = await waitFor(
    () => {
      const found = answers(agent).slice(since);
      return found.length >= forwarded && found;
    },
    { what: `a log line for each of the ${forwarded} forwarded requests` },
  );
  const failed = lines.filter((l) => l.status >= 300).map((l) => `${l.method} ${l.path} -> ${l.status}`);
  expect(failed, "requests terse did not answer with a success").to.deep.equal([]);
}

/** Neither key appears in anything the three services printed (info-level logs). */
function expectNoSecretsLogged(agent: AgentRig, secrets: readonly string[]): void {
  for (const name of ["controlPlane", "dataPlane", "worker"] as const) {
    const output = agent.rig.system.process(name).output();
    for (const secret of secrets) expect(output.includes(secret), `a key in the ${name} logs`).to.equal(false);
  }
}

/** One usage event per model call that reached the fake, each with the fake's usage, recorded in Postgres. */
async function expectUsageRecorded(agent: AgentRig, received: readonly ReceivedRequest[]): Promise<void> {
  const calls = modelCalls(received).length;
  const perCall = TOKENS_PER_CALL.input + TOKENS_PER_CALL.output;
  const recorded = await waitFor(
    async () => {
      const r = await agent.rig.system.recorded([agent.keyId]);
      return r.events >= calls && r;
    },
    { timeoutMs: 30_000, what: `${calls} usage events` },
  );
  expect(recorded.events).to.equal(calls);
  expect(recorded.byStatus).to.deep.equal({ 200: calls });
  expect(recorded.estimated).to.equal(0);
  expect(recorded.tokens).to.equal(calls * perCall);
}

// Recall (issue 18): a key with context compression on gets terse_recall among its tools;
// when the model calls it, terse answers the call from the original it kept, asks the
// upstream again and gives the CLI one answer. The original is put in Redis where the data
// plane keeps one (recallKeyFor in @terse/keys), so the test knows its handle and lines
// without a cut having to happen first.

export const RECALL = "terse_recall";

/** What the fake answers once the call's result is in: the recalled lines quoted. */
const RECALL_ANSWER = "The recalled line says: {result}";

/** The lines of the kept original the model asks for (1-based, inclusive). */
const RECALL_LINES = { from: 17, to: 18 };

const exec = promisify(execFile);

/** A recall exchange set up for one CLI run. */
export interface RecallCase {
  /** A key of the rig's account with context compression on. */
  key: CreatedKey;
  script: ScriptedToolCall;
  /** The lines asked for, as terse must return them. */
  recalled: string;
  /** The lines either side of them: never returned. */
  around: string[];
  /** What the CLI must answer: the fake's answer with the recalled lines in it. */
  answer: string;
  /** The data plane's answers logged before the run (the suite's earlier tests made them). */
  answersBefore: number;
}

/** The account's id: its access token's subject. */
function accountIdOf(account: Account): string {
  const payload = account.token.split(".")[1] ?? "";
  return (JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { sub: string }).sub;
}

/** A new key of the rig's account with context compression turned on as a user does it: PATCH /v1/auth/keys/{id}. */
/** A key of the agent's account with context compression on. */
export async function compressingKey(agent: AgentRig, name: string): Promise<CreatedKey> {
  const key = await agent.rig.system.createKey(agent.account, name);
  const res = await fetch(`${agent.rig.system.controlPlaneUrl}/v1/auth/keys/${key.id}`, {
    method: "PATCH",
    headers: { authorization: `Bearer ${agent.account.token}`, "content-type": "application/json" },
    body: JSON.stringify({ context_compress: true }),
  });
  const record = (await res.json()) as { context_compress?: boolean };
  expect(res.status, JSON.stringify(record)).to.equal(200);
  expect(record.context_compress).to.equal(true);
  return key;
}

/**
 * A compressing key, an original kept under its account (a 40-line build log, under a
 * fresh handle), and the fake scripted to call terse_recall on two of its lines and then
 * quote them. The fake's record starts empty here.
 */
export async function prepareRecall(ctx: AgentContext, name: string): Promise<RecallCase> {
  const { agent } = ctx;
  const key = await compressingKey(agent, name);
  const handle = randomBytes(6).toString("hex");
  const tag = `BITTERN-${process.pid}-${Date.now()}`;
  const lines = Array.from(
    { length: 40 },
    (_, i) => `[build ${String(i + 1).padStart(4, "0")}] ${tag} linked step ${i + 1}`,
  );
  const kept = recallKeyFor(accountIdOf(agent.account), handle);
  const set = await exec("redis-cli", ["-u", agent.rig.redis.url, "SET", kept, lines.join("\n"), "EX", "3600"]);
  expect(set.stdout.trim()).to.equal("OK");
  const { from, to } = RECALL_LINES;
  const recalled = lines.slice(from - 1, to).join("\n");
  const script: ScriptedToolCall = {
    name: RECALL,
    arguments: { handle, lines: `${from}-${to}` },
    answer: RECALL_ANSWER,
  };
  agent.rig.fake.reset();
  agent.rig.fake.set({ toolCall: script });
  return {
    key,
    script,
    recalled,
    around: [lines[from - 2] as string, lines[to] as string],
    answer: RECALL_ANSWER.replace("{result}", recalled),
    answersBefore: answers(agent).length,
  };
}

/** The field of a request holding its conversation: what a recall round appends to. */
function conversationField(request: ReceivedRequest): string {
  if (request.endpoint === "responses") return "input";
  return request.provider === "gemini" ? "contents" : "messages";
}

function conversationOf(request: ReceivedRequest): unknown[] {
  const items = request.body[conversationField(request)];
  return Array.isArray(items) ? items : [];
}

/** The functions a request declares, in order, each in its provider's own format. */
function declarationsOf(request: ReceivedRequest): Record<string, unknown>[] {
  const tools = Array.isArray(request.body.tools) ? (request.body.tools as Record<string, unknown>[]) : [];
  if (request.provider === "gemini")
    return tools.flatMap((t) => (Array.isArray(t.functionDeclarations) ? t.functionDeclarations : []));
  return request.endpoint === "chat.completions" ? tools.map((t) => t.function as Record<string, unknown>) : tools;
}

/** The terse_recall declaration a request carries, in its provider's own format. */
export function recallDeclaration(request: ReceivedRequest): Record<string, unknown> | undefined {
  return declarationsOf(request).find((d) => d?.name === RECALL);
}

/** The two upstream calls of the CLI's turn: the one answered with the recall call, and terse's round after it. */
export interface RecallTurn {
  first: ReceivedRequest;
  second: ReceivedRequest;
}

/**
 * What every recall test checks once its CLI finished: nothing of the call reached the
 * CLI; the turn was two upstream calls, the first declaring terse_recall last, the second,
 * streamed or not as the first,
 * same request with the call and its result (exactly the lines asked for) appended, and no
 * other call (the CLI's side calls) made a recall round; one usage event per request the
 * CLI sent, the turn's with both calls' tokens, and /v1/usage counting one recall round;
 * every answer a success, no key logged.
 */
export async function expectRecallTraffic(
  ctx: AgentContext,
  recall: RecallCase,
  providerKey: string,
  run: AgentRun,
): Promise<RecallTurn> {
  const { agent } = ctx;
  const received = agent.rig.fake.received;
  expect(run.output, "what the CLI printed").not.to.include(RECALL);
  expect(run.output, "what the CLI printed").not.to.match(/(call|toolu|fc)_fake_\d\d/);
  expect(agent.rig.fake.unrouted).to.deep.equal([]);
  expectCredentialsSwapped(received, recall.key.raw_key, providerKey);

  const calls = modelCalls(received);
  const withResult = calls.filter((r) => toolResultIn(r.endpoint, r.body, recall.script) !== undefined);
  expect(withResult, "upstream calls carrying terse_recall's result").to.have.length(1);
  const second = withResult[0] as ReceivedRequest;
  const result = resultText(second.endpoint, toolResultIn(second.endpoint, second.body, recall.script) ?? {});
  expect(result, "the tool result terse sent").to.equal(recall.recalled);
  for (const line of recall.around) expect(result).not.to.include(line);
  // The round before it: the same request, which the second extends with the call and its result.
  const extended = conversationOf(second);
  const firsts = calls.filter((r) => {
    const length = conversationOf(r).length;
    if (r === second || length >= extended.length) return false;
    const prefix = { ...second.body, [conversationField(second)]: extended.slice(0, length) };
    return JSON.stringify(prefix) === JSON.stringify(r.body);
  });
  expect(firsts, "the request the recall round continued").to.have.length(1);
  const first = firsts[0] as ReceivedRequest;
  expect(second.path).to.equal(first.path);
  expect(recallDeclaration(first), "terse_recall declared in the first call").not.to.equal(undefined);
  // Last: the tools sit at the front of the provider's cache, the agent's own before it.
  expect(declarationsOf(first).at(-1)?.name, "the last tool declared").to.equal(RECALL);
  // terse's round goes as the agent's turn went (streamed or not, the same endpoint).
  expect([second.endpoint, second.body.stream]).to.deep.equal([first.endpoint, first.body.stream]);
  expect(toolResultIn(first.endpoint, first.body, recall.script)).to.equal(undefined);

  const rounds = withResult.length;
  await expectEveryAnswerOk(agent, received.length - rounds, recall.answersBefore);
  await expectRecallUsage(agent, recall.key.id, calls.length, rounds);
  expectNoSecretsLogged(agent, [recall.key.raw_key, providerKey]);
  return { first, second };
}

/** One usage event per request the CLI sent (a recall round is part of its request's), every call's tokens in them. */
async function expectRecallUsage(agent: AgentRig, keyId: string, calls: number, rounds: number): Promise<void> {
  const requests = calls - rounds;
  const perCall = TOKENS_PER_CALL.input + TOKENS_PER_CALL.output;
  await waitFor(async () => (await agent.rig.system.recorded([keyId])).events >= requests, {
    timeoutMs: 30_000,
    what: `${requests} usage events`,
  });
  // A second event of the same request would have been queued with the first: none is left to come.
  await waitFor(() => agent.rig.system.usageQueueIdle(), { what: "the usage queue drained" });
  const recorded = await agent.rig.system.recorded([keyId]);
  expect(recorded.events, "usage events").to.equal(requests);
  expect(recorded.byStatus).to.deep.equal({ 200: requests });
  expect(recorded.estimated).to.equal(0);
  expect(recorded.tokens, "tokens of every upstream call").to.equal(calls * perCall);
  const res = await fetch(`${agent.rig.system.controlPlaneUrl}/v1/usage?key_id=${keyId}`, {
    headers: { authorization: `Bearer ${agent.account.token}` },
  });
  const usage = (await res.json()) as { totals: Record<string, number> };
  expect(res.status, JSON.stringify(usage)).to.equal(200);
  expect(usage.totals).to.include({ requests, recall_rounds: rounds, requests_with_recall: 1 });
}
