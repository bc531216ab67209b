import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "chai";
import {
  type AgentContext,
  type AgentRun,
  expectAgentTraffic,
  expectRecallTraffic,
  modelCalls,
  prepareRecall,
  RECALL,
  readNotesScript,
  recallDeclaration,
  runCli,
  TEST_TIMEOUT_MS,
  withAgentRig,
} from "./harness.ts";

// Codex CLI 0.171 (`codex exec`) through terse, set up as docs/agents.md tells a user to:
// a `terse` model provider in $CODEX_HOME/config.toml speaking the Responses API, the
// service key from the variable its env_key names (sent as Authorization: Bearer), the
// provider key as X-Provider-Key through env_http_headers. --strict-config makes Codex
// refuse any key of that file it does not know, so the documented config stays valid.

const PROVIDER_KEY = "sk-agent-provider-0123456789abcdefXYZ";

function codexConfig(dataPlaneUrl: string): string {
  return `model = "gpt-5.1-codex"
model_provider = "terse"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.terse]
name = "terse"
base_url = "${dataPlaneUrl}/v1"
wire_api = "responses"
env_key = "TERSE_API_KEY"
env_http_headers = { "X-Provider-Key" = "TERSE_PROVIDER_KEY" }
`;
}

/** `codex exec prompt` in the workspace with `serviceKey`, and the last message it wrote. */
async function codex(
  ctx: AgentContext,
  serviceKey: string,
  prompt: string,
): Promise<AgentRun & { lastMessage: string }> {
  const { ws } = ctx;
  const lastMessage = join(ws.home, "last-message.txt");
  await rm(lastMessage, { force: true });
  const run = await runCli(
    "@openai/codex/bin/codex.js",
    [
      "exec",
      "--strict-config",
      "--skip-git-repo-check",
      "--ephemeral",
      "--color",
      "never",
      "--output-last-message",
      lastMessage,
      prompt,
    ],
    {
      CODEX_HOME: join(ws.home, ".codex"),
      HOME: ws.home,
      TERSE_API_KEY: serviceKey,
      TERSE_PROVIDER_KEY: PROVIDER_KEY,
    },
    ws.dir,
  );
  const written = await readFile(lastMessage, "utf8").catch(() => "");
  return { ...run, lastMessage: written.trim() };
}

describe("Codex CLI through terse", function () {
  this.timeout(TEST_TIMEOUT_MS);
  const ctx = withAgentRig("agent_codex", async ({ agent, ws }) => {
    await mkdir(join(ws.home, ".codex"));
    await writeFile(join(ws.home, ".codex", "config.toml"), codexConfig(agent.rig.system.dataPlaneUrl));
  });

  it("runs a shell command with exec_command and answers from its output, every call compressed, keyed and metered", async () => {
    const { agent, ws } = ctx;
    const script = readNotesScript(ws, "exec_command", { cmd: "cat notes.txt" });
    agent.rig.fake.set({ toolCall: script });

    const run = await codex(ctx, agent.serviceKey, "What is the code word in notes.txt?");
    expect(run.exit, run.output).to.equal(0);
    expect(run.lastMessage).to.equal(script.answer);

    await expectAgentTraffic(ctx, script, PROVIDER_KEY);
    for (const call of modelCalls(agent.rig.fake.received)) {
      expect(call.path).to.equal("/v1/responses");
      expect(call.body.stream).to.equal(true);
    }
  });

  it("with context compression on, gets terse's answer to a terse_recall call and one clean answer, streamed", async () => {
    const recall = await prepareRecall(ctx, "agent_codex_recall");

    const run = await codex(ctx, recall.key.raw_key, "What do lines 17-18 of the kept build log say?");
    expect(run.exit, run.output).to.equal(0);
    expect(run.lastMessage).to.equal(recall.answer);

    const { first } = await expectRecallTraffic(ctx, recall, PROVIDER_KEY, run);
    expect(first.path).to.equal("/v1/responses");
    expect(first.body.stream, "Codex streams").to.equal(true);
    expect(recallDeclaration(first)).to.include({ type: "function", name: RECALL });
    expect(recallDeclaration(first)?.parameters).to.include({ type: "object" });
  });
});
