import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ReceivedRequest } from "@terse/fake-provider";
import { expect } from "chai";
import {
  type AgentContext,
  type AgentRun,
  carriesInstruction,
  compressingKey,
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

// Gemini CLI 0.61 (`gemini -p`) through terse, set up as docs/agents.md tells a user to:
// GOOGLE_GEMINI_BASE_URL, the service key as GEMINI_API_KEY sent as a bearer token
// (GEMINI_API_KEY_AUTH_MECHANISM=bearer), the provider key in GEMINI_CLI_CUSTOM_HEADERS,
// the API-key auth type chosen in its settings file, the workspace trusted.

const PROVIDER_KEY = "AIza-agent-provider-0123456789abcdef";

/** ~/.gemini/settings.json: API-key auth, and nothing that would call home. */
const SETTINGS = {
  security: { auth: { selectedType: "gemini-api-key" } },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
};

/** `gemini -p prompt` in the trusted workspace with `serviceKey` (and any further flags). */
function gemini(ctx: AgentContext, serviceKey: string, prompt: string, flags: string[] = []): Promise<AgentRun> {
  const { agent, ws } = ctx;
  return runCli(
    "@google/gemini-cli/bundle/gemini.js",
    ["-p", prompt, "--output-format", "json", ...flags],
    {
      GOOGLE_GEMINI_BASE_URL: agent.rig.system.dataPlaneUrl,
      GEMINI_API_KEY: serviceKey,
      GEMINI_API_KEY_AUTH_MECHANISM: "bearer",
      GEMINI_CLI_CUSTOM_HEADERS: `X-Provider-Key: ${PROVIDER_KEY}`,
      GEMINI_CLI_TRUST_WORKSPACE: "true",
      HOME: ws.home,
    },
    ws.dir,
  );
}

/** The final answer of a run that exited 0. */
function answerOf(run: AgentRun): string {
  expect(run.exit, run.output).to.equal(0);
  return (JSON.parse(run.stdout) as { response: string }).response;
}

/** The JSON-mode calls among the model calls (the model router's). */
const jsonModeCalls = (calls: ReceivedRequest[]) =>
  calls.filter(
    (r) =>
      (r.body.generationConfig as { responseMimeType?: string } | undefined)?.responseMimeType === "application/json",
  );

describe("Gemini CLI through terse", function () {
  this.timeout(TEST_TIMEOUT_MS);
  const ctx = withAgentRig("agent_gemini", async ({ ws }) => {
    await mkdir(join(ws.home, ".gemini"));
    await writeFile(join(ws.home, ".gemini", "settings.json"), JSON.stringify(SETTINGS));
  });

  it("routes with a JSON-mode call, reads a file with read_file and answers from it, every call compressed, keyed and metered", async () => {
    const { agent, ws } = ctx;
    const script = readNotesScript(ws, "read_file", { file_path: ws.notes });
    agent.rig.fake.set({ toolCall: script });

    const run = await gemini(ctx, agent.serviceKey, "What is the code word in notes.txt?");
    expect(answerOf(run)).to.equal(script.answer);

    await expectAgentTraffic(ctx, script, PROVIDER_KEY);
    const calls = modelCalls(agent.rig.fake.received);
    // The model router's call asks for JSON and got it (the run would have failed otherwise);
    // terse leaves structured-output calls without its instruction, which would fight the schema.
    const routing = jsonModeCalls(calls);
    expect(routing, "the JSON-mode routing call").not.to.be.empty;
    for (const call of routing) expect(carriesInstruction(call), "instruction in a JSON-mode call").to.equal(false);
    expect(calls.map((r) => r.endpoint)).to.include("streamGenerateContent");
  });

  it("with context compression on, a command's long JSON output reaches the model shortened as JSON, Gemini CLI's report and process group kept", async () => {
    const { agent, ws } = ctx;
    const key = await compressingKey(agent, "agent_gemini_shell");
    const items = Array.from({ length: 400 }, (_, i) => ({ number: i, title: `issue title ${i}`, state: "open" }));
    const json = JSON.stringify({ total: 400, failed: ws.marker, items }, null, 2);
    // A tool whose answer the command prints (`cat` of it would be a file's view, cut as one).
    await writeFile(join(ws.dir, "issues.json"), json);
    await writeFile(join(ws.dir, "issues.sh"), "cat issues.json\n");
    const script = { name: "run_shell_command", arguments: { command: "sh issues.sh" }, answer: "400 issues." };
    agent.rig.fake.reset();
    agent.rig.fake.set({ toolCall: script });

    // --yolo: a command runs without asking, as it must with no one at a prompt.
    const run = await gemini(ctx, key.raw_key, "How many issues are open?", ["--yolo"]);
    expect(answerOf(run)).to.equal(script.answer);
    const outputs = modelCalls(agent.rig.fake.received).flatMap((r) =>
      (r.body.contents as { parts?: { functionResponse?: { name: string; response: { output?: string } } }[] }[])
        .flatMap((c) => c.parts ?? [])
        .flatMap((p) => (p.functionResponse?.name === "run_shell_command" ? [p.functionResponse.response.output] : [])),
    );
    expect(outputs, "the command's result reached the model").not.to.be.empty;
    for (const output of outputs) {
      // Gemini CLI's own form (0.61): the output starts on its report's line, its process group
      // after it, all in its envelope of outside content.
      const parts = /^<untrusted_context>\nOutput: ([\s\S]*)\nProcess Group PGID: \d+\n<\/untrusted_context>$/.exec(
        output ?? "",
      );
      expect(parts, output?.slice(0, 300)).to.not.equal(null);
      const answer = parts?.[1] ?? "";
      expect(answer.length).to.be.below(json.length / 3);
      // Shortened as JSON between Gemini CLI's lines, it is still JSON.
      expect(JSON.parse(answer)).to.deep.include({ total: 400, failed: ws.marker });
    }
  });

  it("with context compression on, gets terse's answer to a terse_recall call and one clean answer, streamed", async () => {
    const recall = await prepareRecall(ctx, "agent_gemini_recall");

    const run = await gemini(ctx, recall.key.raw_key, "What do lines 17-18 of the kept build log say?");
    expect(answerOf(run)).to.equal(recall.answer);

    const { first } = await expectRecallTraffic(ctx, recall, PROVIDER_KEY, run);
    expect(first.endpoint, "Gemini CLI streams").to.equal("streamGenerateContent");
    // Gemini's own tool format (a Schema with types in capitals), in a tool of its own.
    const tools = first.body.tools as { functionDeclarations?: { name: string }[] }[];
    expect(tools.at(-1)?.functionDeclarations?.map((d) => d.name)).to.deep.equal([RECALL]);
    expect(recallDeclaration(first)).to.have.all.keys("name", "description", "parameters");
    expect(recallDeclaration(first)?.parameters).to.include({ type: "OBJECT" });
    // Gemini refuses function declarations beside a JSON response type (400 INVALID_ARGUMENT
    // on the 2.x models): the router's JSON-mode call goes without terse_recall.
    const routing = jsonModeCalls(modelCalls(ctx.agent.rig.fake.received));
    expect(routing, "the JSON-mode routing call").not.to.be.empty;
    for (const call of routing) expect(recallDeclaration(call), "terse_recall in a JSON-mode call").to.equal(undefined);
  });
});
