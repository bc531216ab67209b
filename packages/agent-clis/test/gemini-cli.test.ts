import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "chai";
import {
  carriesInstruction,
  expectAgentTraffic,
  modelCalls,
  readNotesScript,
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
    expect(result.response).to.equal(script.answer);

    await expectAgentTraffic(ctx, script, PROVIDER_KEY);
    const calls = modelCalls(agent.rig.fake.received);
    // The model router's call asks for JSON and got it (the run would have failed otherwise);
    // terse leaves structured-output calls without its instruction, which would fight the schema.
    const routing = calls.filter(
      (r) =>
        (r.body.generationConfig as { responseMimeType?: string } | undefined)?.responseMimeType === "application/json",
    );
    expect(routing, "the JSON-mode routing call").not.to.be.empty;
    for (const call of routing) expect(carriesInstruction(call), "instruction in a JSON-mode call").to.equal(false);
    expect(calls.map((r) => r.endpoint)).to.include("streamGenerateContent");
  });
});
