import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ScriptedToolCall } from "@terse/fake-provider";
import { expect } from "chai";
import {
  type AgentRig,
  carriesInstruction,
  expectCredentialsSwapped,
  expectEveryAnswerOk,
  expectNoSecretsLogged,
  expectToolRoundTrip,
  expectUsageRecorded,
  makeWorkspace,
  modelCalls,
  runCli,
  startAgentRig,
  TEST_TIMEOUT_MS,
  type Workspace,
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

describe("Gemini CLI through terse", function () {
  this.timeout(TEST_TIMEOUT_MS);

  let agent: AgentRig;
  let ws: Workspace;

  before(async () => {
    [agent, ws] = await Promise.all([startAgentRig("agent_gemini"), makeWorkspace()]);
    await mkdir(join(ws.home, ".gemini"));
    await writeFile(join(ws.home, ".gemini", "settings.json"), JSON.stringify(SETTINGS));
  });

  after(async () => {
    await agent?.close();
    await ws?.remove();
  });

  it("routes with a JSON-mode call, reads a file with read_file and answers from it, every call compressed, keyed and metered", async () => {
    const answer = `The code word is ${ws.marker}.`;
    const script: ScriptedToolCall = { name: "read_file", arguments: { file_path: ws.notes }, answer };
    agent.rig.fake.set({ toolCall: script });

    const run = await runCli(
      "@google/gemini-cli/bundle/gemini.js",
      ["-p", "What is the code word in notes.txt?", "--output-format", "json"],
      {
        GOOGLE_GEMINI_BASE_URL: agent.rig.system.dataPlaneUrl,
        GEMINI_API_KEY: agent.serviceKey,
        GEMINI_API_KEY_AUTH_MECHANISM: "bearer",
        GEMINI_CLI_CUSTOM_HEADERS: `X-Provider-Key: ${PROVIDER_KEY}`,
        GEMINI_CLI_TRUST_WORKSPACE: "true",
        HOME: ws.home,
      },
      ws.dir,
    );

    expect(run.exit, run.output).to.equal(0);
    const result = JSON.parse(run.stdout) as { response: string };
    expect(result.response).to.equal(answer);

    const received = agent.rig.fake.received;
    expect(agent.rig.fake.unrouted).to.deep.equal([]);
    expectCredentialsSwapped(received, agent.serviceKey, PROVIDER_KEY);
    expectToolRoundTrip(received, script, ws.marker);
    // The model router's call asks for JSON and got it (the run would have failed otherwise);
    // terse leaves structured-output calls without its instruction, which would fight the schema.
    const routing = modelCalls(received).filter(
      (r) =>
        (r.body.generationConfig as { responseMimeType?: string } | undefined)?.responseMimeType === "application/json",
    );
    expect(routing, "the JSON-mode routing call").not.to.be.empty;
    for (const call of routing) expect(carriesInstruction(call), "instruction in a JSON-mode call").to.equal(false);
    expect(modelCalls(received).map((r) => r.endpoint)).to.include("streamGenerateContent");
    await expectUsageRecorded(agent, received);
    expectEveryAnswerOk(agent);
    expectNoSecretsLogged(agent, [agent.serviceKey, PROVIDER_KEY]);
  });
});
