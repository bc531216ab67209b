import { mkdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { expect } from "chai";
import {
  type AgentContext,
  type AgentRun,
  CLI_MODULES,
  compressingKey,
  expectAgentTraffic,
  expectRecallTraffic,
  modelCalls,
  prepareRecall,
  readNotesScript,
  recallDeclaration,
  runProgram,
  TEST_TIMEOUT_MS,
  withAgentRig,
} from "./harness.ts";

// OpenCode 1.18 (`opencode run`) through terse, set up as docs/agents.md tells a user to:
// its Anthropic provider pointed at terse in ~/.config/opencode/opencode.json, with the
// service key (as Authorization: Bearer) and the provider key in its `headers`, both read
// from the environment by the config's `{env:..}`. OpenCode also sends the provider key as
// `x-api-key`, from ANTHROPIC_API_KEY as always; terse drops that header. (Its `authToken`
// option would send the bearer instead, but it fails to start beside an ANTHROPIC_API_KEY.)

const PROVIDER_KEY = "sk-ant-agent-provider-0123456789abcdef";

/** The config docs/agents.md gives, plus nothing that would call home. */
const CONFIG = {
  $schema: "https://opencode.ai/config.json",
  model: "anthropic/claude-sonnet-4-5",
  provider: {
    anthropic: {
      options: {
        baseURL: "{env:TERSE_URL}/v1",
        headers: { Authorization: "Bearer {env:TERSE_KEY}", "X-Provider-Key": "{env:ANTHROPIC_API_KEY}" },
      },
    },
    // The same for its OpenAI provider (`--model openai/..`), which speaks the Responses API.
    openai: {
      options: {
        baseURL: "{env:TERSE_URL}/v1",
        headers: { Authorization: "Bearer {env:TERSE_KEY}", "X-Provider-Key": "{env:OPENAI_API_KEY}" },
      },
    },
  },
  autoupdate: false,
  share: "disabled",
};

/**
 * The native binary. The `opencode-ai` package copies it into place in a postinstall that
 * pnpm does not run; it comes in a package per platform, and the x64 "baseline" build runs
 * on any x64 machine (the other needs AVX2).
 */
function opencodeBinary(): string {
  const arch = process.arch === "x64" ? "x64-baseline" : process.arch;
  const fromOpencode = createRequire(createRequire(join(CLI_MODULES, "_")).resolve("opencode-ai/package.json"));
  return join(fromOpencode.resolve(`opencode-${process.platform}-${arch}/package.json`), "..", "bin", "opencode");
}

/** `opencode run prompt` in the workspace with `serviceKey` (and any further flags), commands allowed (no one is at a prompt). */
function opencode(ctx: AgentContext, serviceKey: string, prompt: string, flags: string[] = []): Promise<AgentRun> {
  const { agent, ws } = ctx;
  return runProgram(
    opencodeBinary(),
    ["run", "--auto", ...flags, prompt],
    {
      TERSE_URL: agent.rig.system.dataPlaneUrl,
      TERSE_KEY: serviceKey,
      ANTHROPIC_API_KEY: PROVIDER_KEY,
      OPENAI_API_KEY: PROVIDER_KEY,
      HOME: ws.home,
      // No network here: the models' catalogue comes from the binary, not models.dev.
      OPENCODE_DISABLE_MODELS_FETCH: "1",
    },
    ws.dir,
  );
}

/** The final answer of a run that exited 0: what it printed last. */
function answerOf(run: AgentRun): string {
  expect(run.exit, run.output).to.equal(0);
  return run.stdout.trim();
}

/** The text of every tool result of `tool_use_id` that the model calls carried. */
function resultsOf(ctx: AgentContext, id: string): string[] {
  return modelCalls(ctx.agent.rig.fake.received).flatMap((r) =>
    (r.body.messages as { content: string | { type: string; tool_use_id?: string; content?: unknown }[] }[])
      .flatMap((m) => (typeof m.content === "string" ? [] : m.content))
      .flatMap((b) => (b.type === "tool_result" && b.tool_use_id === id ? [String(b.content)] : [])),
  );
}

/** The suite's system, with OpenCode's config written where it reads it. */
const withOpencodeRig = (label: string) =>
  withAgentRig(label, async ({ ws }) => {
    await mkdir(join(ws.home, ".config", "opencode"), { recursive: true });
    await writeFile(join(ws.home, ".config", "opencode", "opencode.json"), JSON.stringify(CONFIG));
  });

describe("OpenCode through terse", function () {
  this.timeout(TEST_TIMEOUT_MS);
  const ctx = withOpencodeRig("agent_opencode");

  it("reads a file with its read tool and answers from it, every call compressed, keyed and metered", async () => {
    const { agent, ws } = ctx;
    const script = readNotesScript(ws, "read", { filePath: ws.notes });
    agent.rig.fake.set({ toolCall: script });

    const run = await opencode(ctx, agent.serviceKey, "What is the code word in notes.txt?");
    expect(answerOf(run)).to.include(script.answer);

    await expectAgentTraffic(ctx, script, PROVIDER_KEY);
    for (const call of modelCalls(agent.rig.fake.received)) expect(call.path).to.equal("/v1/messages");
  });

  it("with context compression on, a long file it reads reaches the model cut as a view, OpenCode's envelope kept", async () => {
    const { agent, ws } = ctx;
    const key = await compressingKey(agent, "agent_opencode_read");
    const lines = Array.from({ length: 900 }, (_, i) =>
      i % 30 === 0 ? `export function step${i}(input: string): string {` : `  const value${i} = input.trim(); // ${i}`,
    );
    const file = join(ws.dir, "steps.ts");
    await writeFile(file, `${lines.join("\n")}\n`);
    const script = { name: "read", arguments: { filePath: file }, answer: "900 lines." };
    agent.rig.fake.reset();
    agent.rig.fake.set({ toolCall: script });

    const run = await opencode(ctx, key.raw_key, "How long is steps.ts?");
    expect(answerOf(run)).to.include(script.answer);
    const results = resultsOf(ctx, "toolu_fake_01");
    expect(results, "the read's result reached the model").not.to.be.empty;
    for (const result of results) {
      // OpenCode's own form (1.18): the path, the type and the numbered lines in a
      // `<content>` block that ends on its count of the file's lines.
      expect(
        result.startsWith(`<path>${file}</path>\n<type>file</type>\n<content>\n1: ${lines[0]}\n`),
        result,
      ).to.equal(true);
      expect(
        result.endsWith(`${lines.length}: ${lines.at(-1)}\n\n(End of file - total 900 lines)\n</content>`),
      ).to.equal(true);
      expect(result.length).to.be.below(lines.join("\n").length / 2);
      // The cut names the lines it stands for and the handle that brings them back.
      expect(result).to.match(/\[terse: [^\]]*recall [0-9a-f]{12} lines \d+-\d+\]/);
    }
  });

  it("with context compression on, gets terse's answer to a terse_recall call and one clean answer, streamed", async () => {
    const recall = await prepareRecall(ctx, "agent_opencode_recall");

    // A title given: OpenCode then asks the model for none. That side call (no tools of its
    // own, so terse_recall its only one) would get the fake's scripted recall call too.
    const prompt = "What do lines 17-18 of the kept build log say?";
    const run = await opencode(ctx, recall.key.raw_key, prompt, ["--title", "build log"]);
    expect(answerOf(run)).to.include(recall.answer);

    const { first } = await expectRecallTraffic(ctx, recall, PROVIDER_KEY, run);
    expect(first.body.stream, "OpenCode streams").to.equal(true);
    expect(recallDeclaration(first)).to.have.all.keys("name", "description", "input_schema");
  });
});

// A system of its own: the traffic checks count the usage of the suite's one key.
describe("OpenCode's OpenAI provider through terse", function () {
  this.timeout(TEST_TIMEOUT_MS);
  const ctx = withOpencodeRig("agent_opencode_openai");

  it("reads a file over the Responses API and answers from it, every call compressed, keyed and metered", async () => {
    const { agent, ws } = ctx;
    const script = readNotesScript(ws, "read", { filePath: ws.notes });
    agent.rig.fake.set({ toolCall: script });

    const run = await opencode(ctx, agent.serviceKey, "What is the code word in notes.txt?", [
      "--model",
      "openai/gpt-5.1",
    ]);
    expect(answerOf(run)).to.include(script.answer);

    await expectAgentTraffic(ctx, script, PROVIDER_KEY);
    const calls = modelCalls(agent.rig.fake.received);
    expect(calls.map((r) => r.endpoint)).to.deep.equal(calls.map(() => "responses"));
    // The whole conversation in every request (no response stored at OpenAI to continue
    // from), and the session's cache key passed on as sent.
    const turns = calls.filter((r) => r.body.model === "gpt-5.1");
    expect(turns).to.have.length(2);
    for (const turn of turns) {
      expect(turn.body.store).to.equal(false);
      expect(turn.body).not.to.have.property("previous_response_id");
      expect(turn.body.prompt_cache_key).to.be.a("string").and.equal(turns[0]?.body.prompt_cache_key);
    }
  });
});
