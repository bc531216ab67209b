import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { resultText, toolResultIn } from "@terse/fake-provider";
import { expect } from "chai";
import {
  type AgentContext,
  type AgentRun,
  compressingKey,
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

// Continue's CLI 1.5 (`cn -p`) through terse, set up as docs/agents.md tells a user to: a
// config file whose Anthropic model has terse as its `apiBase`, the service key as a bearer
// and the provider key in its `requestOptions.headers`.

const PROVIDER_KEY = "sk-ant-agent-provider-0123456789abcdef";

/** The config docs/agents.md gives, for `serviceKey`. */
function configFor(ctx: AgentContext, serviceKey: string): string {
  return [
    "name: terse",
    "version: 1.0.0",
    "schema: v1",
    "models:",
    "  - name: Claude through terse",
    "    provider: anthropic",
    "    model: claude-sonnet-4-5",
    `    apiKey: ${PROVIDER_KEY}`,
    `    apiBase: ${ctx.agent.rig.system.dataPlaneUrl}/v1/`,
    "    roles: [chat]",
    "    requestOptions:",
    "      headers:",
    `        Authorization: Bearer ${serviceKey}`,
    `        X-Provider-Key: ${PROVIDER_KEY}`,
    "",
  ].join("\n");
}

/** `cn -p prompt` in the workspace with a config for `serviceKey`, every tool allowed (no one is at a prompt). */
async function cn(ctx: AgentContext, serviceKey: string, prompt: string): Promise<AgentRun> {
  const { ws } = ctx;
  const config = join(ws.home, "config.yaml");
  await writeFile(config, configFor(ctx, serviceKey));
  return runCli("@continuedev/cli/dist/cn.js", ["-p", "--auto", "--config", config, prompt], { HOME: ws.home }, ws.dir);
}

/** The final answer of a run that exited 0. */
function answerOf(run: AgentRun): string {
  expect(run.exit, run.output).to.equal(0);
  return run.stdout.trim();
}

describe("Continue's CLI through terse", function () {
  this.timeout(TEST_TIMEOUT_MS);
  const ctx = withAgentRig("agent_continue");

  it("reads a file with its Read tool and answers from it, every call compressed, keyed and metered", async () => {
    const { agent, ws } = ctx;
    const script = readNotesScript(ws, "Read", { filepath: ws.notes });
    agent.rig.fake.set({ toolCall: script });

    const run = await cn(ctx, agent.serviceKey, "What is the code word in notes.txt?");
    expect(answerOf(run)).to.equal(script.answer);

    await expectAgentTraffic(ctx, script, PROVIDER_KEY);
    for (const call of modelCalls(agent.rig.fake.received)) {
      expect(call.path).to.equal("/v1/messages");
      // Its beta flag reaches Anthropic unchanged.
      expect(call.headers["anthropic-beta"]).to.include("prompt-caching-2024-07-31");
    }
  });

  it("with context compression on, a long output it cut to its tail reaches the model shortened, its note kept", async () => {
    const { agent, ws } = ctx;
    const key = await compressingKey(agent, "agent_continue_log");
    const log = Array.from({ length: 3000 }, (_, i) =>
      i === 2500
        ? `ERROR ${ws.marker}: module_${i} failed to link`
        : `[build ${i}] compiled module_${i} in ${i % 97} ms`,
    );
    await writeFile(join(ws.dir, "build.log"), `${log.join("\n")}\n`);
    // A command whose output is the log (`cat` of it would be a file's view).
    await writeFile(join(ws.dir, "build.sh"), "cat build.log\n");
    const script = { name: "Bash", arguments: { command: "sh build.sh" }, answer: "The build failed." };
    agent.rig.fake.reset();
    agent.rig.fake.set({ toolCall: script });

    const run = await cn(ctx, key.raw_key, "Did the build pass?");
    expect(answerOf(run)).to.equal(script.answer);
    const results = modelCalls(agent.rig.fake.received).flatMap((r) => {
      const result = toolResultIn(r.endpoint, r.body, script);
      return result === undefined ? [] : [resultText(r.endpoint, result)];
    });
    expect(results, "the command's result reached the model").not.to.be.empty;
    for (const result of results) {
      // Continue's own cut (1.5): its note, then the output's last lines.
      const note = /^\(previous (\d+) lines truncated\)\n\n/.exec(result);
      expect(note, result.slice(0, 200)).to.not.equal(null);
      const kept = log.slice(Number(note?.[1])).join("\n");
      // terse shortened what Continue kept, as a log: its error line stays, and the last line.
      expect(result.length).to.be.below(kept.length / 2);
      expect(result).to.include(log[2500]).and.include(log.at(-1));
      expect(result).to.match(/\[terse: [^\]]*recall [0-9a-f]{12} lines \d+-\d+\]/);
    }
  });

  it("with context compression on, gets terse's answer to a terse_recall call and one clean answer, streamed", async () => {
    const recall = await prepareRecall(ctx, "agent_continue_recall");

    const run = await cn(ctx, recall.key.raw_key, "What do lines 17-18 of the kept build log say?");
    expect(answerOf(run)).to.equal(recall.answer);

    const { first } = await expectRecallTraffic(ctx, recall, PROVIDER_KEY, run);
    expect(first.body.stream, "Continue streams").to.equal(true);
    expect(recallDeclaration(first)).to.have.all.keys("name", "description", "input_schema");
  });
});
