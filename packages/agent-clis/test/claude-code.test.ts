import { expect } from "chai";
import {
  type AgentContext,
  type AgentRun,
  expectAgentTraffic,
  expectRecallTraffic,
  modelCalls,
  prepareRecall,
  readNotesScript,
  recallDeclaration,
  runCli,
  TEST_TIMEOUT_MS,
  withAgentRig,
} from "./harness.ts";

// Claude Code 2.1 (`claude -p`) through terse, set up as docs/agents.md tells a user to:
// the service key as ANTHROPIC_AUTH_TOKEN (sent as Authorization: Bearer), the provider
// key in ANTHROPIC_CUSTOM_HEADERS. It runs its native binary through the package's own
// wrapper (pnpm does not run the postinstall that would copy the binary into place).

const PROVIDER_KEY = "sk-ant-agent-provider-0123456789abcdef";

/** `claude -p prompt` in the workspace with `serviceKey`, nothing but the model calls leaving. */
function claude(ctx: AgentContext, serviceKey: string, prompt: string): Promise<AgentRun> {
  const { agent, ws } = ctx;
  return runCli(
    "@anthropic-ai/claude-code/cli-wrapper.cjs",
    ["-p", prompt, "--output-format", "json", "--model", "claude-sonnet-4-5"],
    {
      ANTHROPIC_BASE_URL: agent.rig.system.dataPlaneUrl,
      ANTHROPIC_AUTH_TOKEN: serviceKey,
      ANTHROPIC_CUSTOM_HEADERS: `X-Provider-Key: ${PROVIDER_KEY}`,
      HOME: ws.home,
      CLAUDE_CONFIG_DIR: `${ws.home}/.claude`,
      // No network here: nothing but the model calls may leave.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
    },
    ws.dir,
  );
}

/** The final answer of a run that exited 0 without an error. */
function answerOf(run: AgentRun): string {
  expect(run.exit, run.output).to.equal(0);
  const result = JSON.parse(run.stdout) as { is_error: boolean; result: string };
  expect(result.is_error, run.output).to.equal(false);
  return result.result;
}

describe("Claude Code through terse", function () {
  this.timeout(TEST_TIMEOUT_MS);
  const ctx = withAgentRig("agent_claude");

  it("reads a file with its Read tool and answers from it, every call compressed, keyed and metered", async () => {
    const { agent, ws } = ctx;
    const script = readNotesScript(ws, "Read", { file_path: ws.notes });
    agent.rig.fake.set({ toolCall: script });

    const run = await claude(ctx, agent.serviceKey, "What is the code word in notes.txt?");
    expect(answerOf(run)).to.equal(script.answer);

    await expectAgentTraffic(ctx, script, PROVIDER_KEY);
    for (const call of modelCalls(agent.rig.fake.received)) {
      // Claude Code's beta flags and its `?beta=true` reach the provider unchanged.
      expect(call.path).to.equal("/v1/messages");
      expect(call.query).to.deep.equal({ beta: "true" });
      expect(call.headers["anthropic-beta"]).to.include("claude-code-20250219");
    }
  });

  it("with context compression on, gets terse's answer to a terse_recall call and one clean answer, streamed", async () => {
    const recall = await prepareRecall(ctx, "agent_claude_recall");

    const run = await claude(ctx, recall.key.raw_key, "What do lines 17-18 of the kept build log say?");
    expect(answerOf(run)).to.equal(recall.answer);

    const { first } = await expectRecallTraffic(ctx, recall, PROVIDER_KEY, run);
    expect(first.body.stream, "Claude Code streams").to.equal(true);
    expect(recallDeclaration(first)).to.have.all.keys("name", "description", "input_schema");
    expect(recallDeclaration(first)?.input_schema).to.include({ type: "object" });
  });
});
