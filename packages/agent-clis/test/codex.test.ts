import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "chai";
import { expectAgentTraffic, modelCalls, readNotesScript, runCli, TEST_TIMEOUT_MS, withAgentRig } from "./harness.ts";

// Codex CLI 0.169 (`codex exec`) through terse, set up as docs/agents.md tells a user to:
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
    const lastMessage = join(ws.home, "last-message.txt");

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
        "What is the code word in notes.txt?",
      ],
      {
        CODEX_HOME: join(ws.home, ".codex"),
        HOME: ws.home,
        TERSE_API_KEY: agent.serviceKey,
        TERSE_PROVIDER_KEY: PROVIDER_KEY,
      },
      ws.dir,
    );

    expect(run.exit, run.output).to.equal(0);
    expect((await readFile(lastMessage, "utf8")).trim()).to.equal(script.answer);

    await expectAgentTraffic(ctx, script, PROVIDER_KEY);
    for (const call of modelCalls(agent.rig.fake.received)) {
      expect(call.path).to.equal("/v1/responses");
      expect(call.body.stream).to.equal(true);
    }
  });
});
