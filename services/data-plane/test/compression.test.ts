import { INSTRUCTIONS } from "@terse/compression";
import { waitFor } from "@terse/testkit";
import { expect } from "chai";
import { type Harness, startHarness, sdkClients } from "./harness.ts";

// The key's compression settings reach the upstream body, the caller sees the level
// chosen, and the usage event carries it with the token counts.

describe("data plane: compression applied per key", () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());
  beforeEach(() => h.fake.reset());

  const client = (rawKey: string) => sdkClients(h.url, rawKey).openai();

  it("sends the key's level to the upstream and names it in X-Compression-Intensity", async () => {
    const { rawKey } = await h.addKey({ intensity: "lite", smart_detect_enabled: false });
    const { response } = await client(rawKey)
      .chat.completions.create({
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "Summarise the plot of Hamlet" }],
      })
      .withResponse();
    expect(response.headers.get("x-compression-intensity")).to.equal("lite");
    const sent = h.fake.received[0]?.body.messages as { role: string; content: string }[];
    expect(sent[0]).to.deep.equal({ role: "user", content: "Summarise the plot of Hamlet" });
    expect(sent[1]?.role).to.equal("system");
    expect(sent[1]?.content).to.include(INSTRUCTIONS.lite);
    const event = await waitFor(async () => (await h.events()).find((e) => e.intensity === "lite"));
    expect(event.compression_reason).to.equal("key setting");
    // Nothing to cut, an instruction added: the request without terse is the smaller one.
    const saved = Number(response.headers.get("x-terse-input-tokens-saved"));
    expect(saved).to.be.below(0);
    expect(event.input_tokens_before_compression).to.equal(Math.max(0, event.input_tokens + saved));
  });

  it("lets smart detect pick ultra for a short question, and skips structured output", async () => {
    const { rawKey } = await h.addKey({ intensity: "full", smart_detect_enabled: true });
    const { response } = await client(rawKey)
      .chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Is Pluto a planet?" }] })
      .withResponse();
    expect(response.headers.get("x-compression-intensity")).to.equal("ultra");
    h.fake.reset();
    const json = await client(rawKey)
      .chat.completions.create({
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "Is Pluto a planet?" }],
        response_format: { type: "json_object" },
      })
      .withResponse();
    expect(json.response.headers.get("x-compression-intensity")).to.equal(null);
    expect(h.fake.received[0]?.body.messages).to.have.length(1);
  });
});
