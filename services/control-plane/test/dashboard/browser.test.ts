import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { isWellFormedKey } from "@terse/keys";
import { waitFor } from "@terse/testkit";
import { eventsOfBatch, USAGE_QUEUE, type UsageEvent } from "@terse/usage-events";
import { Queue } from "bullmq";
import { expect } from "chai";
import { Redis } from "ioredis";
import jwt from "jsonwebtoken";
import type { Locator, Page } from "playwright-core";
import { UsageRecorder } from "../../src/domain/usage-recorder.ts";
import {
  type Browser,
  createAccount,
  launchBrowser,
  PASSWORD,
  SCREENSHOT_DIR,
  type Stack,
  startStack,
  useOnProxy,
} from "./harness.ts";

// A person's whole visit, in order, in Chromium against the real control plane and
// proxy: sign in, create (and use the key on the proxy), the 409 and 403 messages,
// edit, rotate, revoke, Not found, the usage chart, a phone screen, an expired session,
// sign out. Each screen is saved under docs/screenshots/ for the README.

const DAY_MS = 86_400_000;
// Run in the page (as source text: this file is compiled without the DOM types).
const HORIZONTAL_OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth";
const TOO_WIDE = `[...document.querySelectorAll("body *")]
  .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5)
  .map((el) => el.tagName.toLowerCase() + "." + el.className).slice(0, 5)`;

describe("dashboard: a visit in Chromium", function () {
  this.timeout(60_000);
  let stack: Stack;
  let browser: Browser;
  let page: Page;
  let account: { id: string; email: string };
  /** Raw keys and tokens seen during the visit: none may be in a log line or a URL. */
  const secrets: string[] = [PASSWORD];
  const requestedUrls: string[] = [];
  const pageProblems: string[] = [];
  const keys: Record<string, string> = {};

  before(async () => {
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    stack = await startStack("browser");
    account = await createAccount(stack, "free");
    browser = await launchBrowser();
    await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: stack.url });
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
    page.on("request", (r) => requestedUrls.push(r.url()));
    page.on("pageerror", (err) => pageProblems.push(`pageerror: ${err.message}`));
    page.on("console", (m) => {
      // A CSP violation is reported on the console; failed API calls (409, 403) are expected there.
      if (/Content Security Policy|Refused to/i.test(m.text())) pageProblems.push(`console: ${m.text()}`);
    });
  });

  after(async () => {
    await browser?.close();
    await stack?.stop();
  });

  const shot = (name: string) => page.screenshot({ path: join(SCREENSHOT_DIR, name) });
  const dialog = (name: string | RegExp) => page.getByRole("dialog", { name });
  const alertDialog = (name: string | RegExp) => page.getByRole("alertdialog", { name });
  const row = (name: string, state: "active" | "revoked" = "active") =>
    page
      .locator(`#keys-table tr.key.${state}`)
      .filter({ has: page.locator(".key-name-text", { hasText: new RegExp(`^${name}$`) }) });
  const cell = (r: Locator, label: string) => r.locator(`[data-label="${label}"]`);
  const isFocused = (l: Locator) => l.evaluate((el) => el === el.ownerDocument.activeElement);

  async function signIn() {
    await page.getByLabel("Email").fill(account.email);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "API keys" }).waitFor();
  }

  /** Reads the raw key from its dialog, closes it, and checks it is gone from the page. */
  async function takeRawKey(title: string): Promise<string> {
    const d = dialog(title);
    await d.waitFor();
    const raw = await d.getByLabel(/^API key for/).inputValue();
    expect(isWellFormedKey(raw), raw.slice(0, 12)).to.equal(true);
    secrets.push(raw);
    expect(await d.textContent()).to.include("It is shown only once and cannot be shown again");
    await d.getByRole("button", { name: "I have stored the key" }).click();
    await d.waitFor({ state: "detached" });
    // Every dialog goes (the form's closes after the key's): then the key is nowhere in the page.
    await waitFor(async () => ((await page.locator("[data-raw-key], dialog").count()) === 0 ? true : undefined), {
      timeoutMs: 5_000,
      what: "no dialog and no raw key left in the page",
    });
    expect(await page.content()).not.to.include(raw);
    return raw;
  }

  async function createThroughApi(token: string, name: string): Promise<string> {
    const res = await fetch(`${stack.url}/v1/auth/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ name }),
    });
    const body = (await res.json()) as { id: string; raw_key: string };
    expect(res.status).to.equal(201);
    secrets.push(body.raw_key);
    return body.id;
  }

  async function apiToken(): Promise<string> {
    const res = await fetch(`${stack.url}/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: account.email, password: PASSWORD }),
    });
    const token = ((await res.json()) as { access_token: string }).access_token;
    secrets.push(token);
    return token;
  }

  it("signs in, and refuses a wrong password in words", async () => {
    await page.goto(`${stack.url}/dashboard`);
    expect(new URL(page.url()).pathname).to.equal("/dashboard/keys");
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await isFocused(page.getByLabel("Email"))).to.equal(true);
    await shot("01-sign-in.png");

    await page.getByLabel("Email").fill(account.email);
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    const error = page.getByRole("alert");
    await error.waitFor();
    expect(await error.textContent()).to.equal("Invalid credentials: the email or the password is wrong.");
    expect(await page.getByLabel("Password").getAttribute("aria-invalid")).to.equal("true");

    await signIn();
    expect(await page.locator("#account-email").textContent()).to.equal(account.email);
    await page.getByText("No keys yet.").waitFor();
    const stored = await page.evaluate<string | null>('sessionStorage.getItem("terse.session")');
    const token = (JSON.parse(stored ?? "{}") as { token?: string }).token ?? "";
    expect(token.split(".")).to.have.length(3);
    secrets.push(token);
    expect(page.url()).to.equal(`${stack.url}/dashboard/keys`);
  });

  it("creates a key with the defaults pre-filled, shows the raw key once and keeps it nowhere", async () => {
    // By keyboard: focus lands in the dialog and goes back to the button afterwards.
    await page.getByRole("button", { name: "Create key" }).focus();
    await page.keyboard.press("Enter");
    const d = dialog("Create a key");
    await d.waitFor();
    const name = d.getByLabel("Name");
    expect(await isFocused(name)).to.equal(true);
    expect(await name.inputValue()).to.equal("Default");
    expect(await d.getByLabel("Compression intensity").inputValue()).to.equal("full");
    expect(await d.getByLabel("Compress input automatically").isChecked()).to.equal(false);
    expect(await d.getByLabel(/^Smart detection/).isChecked()).to.equal(true);
    expect(await d.getByLabel("Compress conversation context").isChecked()).to.equal(false);
    expect(await d.getByLabel("Context compression level").inputValue()).to.equal("standard");
    await page.keyboard.press("Escape");
    await d.waitFor({ state: "detached" });
    expect(await isFocused(page.getByRole("button", { name: "Create key" }))).to.equal(true);

    await page.getByRole("button", { name: "Create key" }).click();
    await d.getByLabel("Name").fill("ci-deploy");
    await d.getByLabel("Compression intensity").selectOption("ultra");
    await d.getByLabel("Compress conversation context").check();
    const request = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/v1/auth/keys"));
    await d.getByRole("button", { name: "Create key" }).click();
    expect((await request).postDataJSON()).to.deep.equal({
      name: "ci-deploy",
      intensity: "ultra",
      auto_compress_input: false,
      smart_detect_enabled: true,
      context_compress: true,
      context_compress_level: "standard",
    });

    const shown = dialog("Key created");
    await shown.waitFor();
    await shown.getByRole("button", { name: "Copy" }).click();
    await shown.getByText("Copied to the clipboard.").waitFor();
    await shot("03-create-raw-key.png");
    const raw = await takeRawKey("Key created");
    keys.ciDeploy = raw;

    // Nothing in the page's JavaScript heap still holds it either.
    const heap = await heapSnapshot(page);
    expect(heap.length).to.be.greaterThan(100_000);
    expect(heap.includes(raw.slice(9)), "raw key found in the JS heap").to.equal(false);

    // The clipboard got it (read only now: reading it puts it back in the page's memory).
    expect(await page.evaluate<string>("navigator.clipboard.readText()")).to.equal(raw);

    const r = row("ci-deploy");
    await r.waitFor();
    expect(await r.locator(".key-prefix").textContent()).to.equal(`${raw.slice(0, 17)}…`);
    expect(await cell(r, "Intensity").textContent()).to.equal("ultra");
    expect(await cell(r, "Auto-compress input").textContent()).to.equal("Off");
    expect(await cell(r, "Smart detect").textContent()).to.equal("On");
    expect(await cell(r, "Context compress").textContent()).to.equal("On");
    expect(await cell(r, "Context level").textContent()).to.equal("standard");
    expect(await cell(r, "Status").textContent()).to.equal("Active");
    expect(await cell(r, "Rate limit").textContent()).to.equal("60 rpm");
    expect(await cell(r, "Last used").textContent()).to.equal("never");
    expect(await page.locator("#status").textContent()).to.equal("Key “ci-deploy” created.");

    // The key read from the dialog works on the proxy at once.
    expect(await useOnProxy(stack, raw)).to.equal(200);
    expect(stack.fake.received).to.have.length(1);
  });

  it("says Duplicate name and API key limit reached where they happen", async () => {
    await page.getByRole("button", { name: "Create key" }).click();
    const d = dialog("Create a key");
    await d.getByLabel("Name").fill("ci-deploy");
    await d.getByRole("button", { name: "Create key" }).click();
    const alert = d.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).to.match(/^Duplicate name: an active key is already called “ci-deploy”/);
    expect(await d.getByLabel("Name").getAttribute("aria-invalid")).to.equal("true");
    expect(await isFocused(d.getByLabel("Name"))).to.equal(true);
    await shot("07-error-duplicate-name.png");

    await d.getByLabel("Name").fill("staging");
    await d.getByRole("button", { name: "Create key" }).click();
    keys.staging = await takeRawKey("Key created");

    // The free plan allows two active keys.
    await page.getByRole("button", { name: "Create key" }).click();
    await d.getByLabel("Name").fill("third");
    await d.getByRole("button", { name: "Create key" }).click();
    await alert.waitFor();
    expect(await alert.textContent()).to.equal(
      "API key limit reached. You have 2 active keys, the most your plan allows. Revoke a key you no longer use to create a new one.",
    );
    await shot("07-error-key-limit.png");
    await d.getByRole("button", { name: "Cancel" }).click();
    await d.waitFor({ state: "detached" });
    expect(await page.locator("#keys-table tbody tr").count()).to.equal(2);
  });

  it("edits a key, sending only the fields that changed", async () => {
    await page.getByRole("button", { name: "Edit key staging" }).click();
    const d = dialog("Edit “staging”");
    await d.waitFor();
    expect(await d.getByLabel("Name").inputValue()).to.equal("staging");
    await d.getByLabel("Compression intensity").selectOption("lite");
    await d.getByLabel("Compress input automatically").check();
    await shot("04-edit.png");
    const request = page.waitForRequest((r) => r.method() === "PATCH");
    await d.getByRole("button", { name: "Save changes" }).click();
    expect((await request).postDataJSON()).to.deep.equal({ intensity: "lite", auto_compress_input: true });
    await d.waitFor({ state: "detached" });
    await page.getByText("Key “staging” saved.").waitFor();
    const r = row("staging");
    expect(await cell(r, "Intensity").textContent()).to.equal("lite");
    expect(await cell(r, "Auto-compress input").textContent()).to.equal("On");
    const stored = await stack.db.query(
      "SELECT intensity, auto_compress_input FROM service_keys WHERE name = 'staging'",
    );
    expect(stored.rows).to.deep.equal([{ intensity: "lite", auto_compress_input: true }]);

    // Saving an unchanged form sends nothing.
    await page.getByRole("button", { name: "Edit key staging" }).click();
    let patched = false;
    const watch = (r: { method(): string }) => {
      if (r.method() === "PATCH") patched = true;
    };
    page.on("request", watch);
    await d.getByRole("button", { name: "Save changes" }).click();
    expect(await d.getByRole("alert").textContent()).to.equal("Nothing has changed.");
    await d.getByRole("button", { name: "Cancel" }).click();
    await d.waitFor({ state: "detached" });
    page.off("request", watch);
    expect(patched).to.equal(false);
  });

  it("rotates a key after a warning: the old key stops at once, the new one works", async () => {
    await page.getByRole("button", { name: "Rotate key ci-deploy" }).click();
    const confirm = alertDialog("Rotate “ci-deploy”?");
    await confirm.waitFor();
    expect(await confirm.textContent()).to.include("stops working at once");
    expect(await isFocused(confirm.getByRole("button", { name: "Cancel" }))).to.equal(true);
    await shot("05-rotate-confirm.png");
    await confirm.getByRole("button", { name: "Rotate key" }).click();
    const fresh = await takeRawKey("Key rotated");
    expect(fresh).not.to.equal(keys.ciDeploy);

    expect(await useOnProxy(stack, keys.ciDeploy ?? "")).to.equal(401);
    expect(await useOnProxy(stack, fresh)).to.equal(200);
    keys.ciDeploy = fresh;
    await row("ci-deploy", "revoked").waitFor();
    expect(await cell(row("ci-deploy"), "Intensity").textContent()).to.equal("ultra");
    expect(await page.locator("#status").textContent()).to.equal("Key “ci-deploy” rotated.");
  });

  it("revokes a key after a confirmation", async () => {
    await page.getByRole("button", { name: "Revoke key staging" }).click();
    const confirm = alertDialog("Revoke “staging”?");
    await confirm.waitFor();
    expect(await confirm.textContent()).to.include("stops working at once and cannot be turned back on");
    await shot("06-revoke-confirm.png");
    await confirm.getByRole("button", { name: "Revoke key" }).click();
    await confirm.waitFor({ state: "detached" });
    const r = row("staging", "revoked");
    await r.waitFor();
    expect(await cell(r, "Status").textContent()).to.equal("Revoked");
    expect(await r.getByRole("button", { name: "Edit key staging" }).count()).to.equal(0);
    expect(await page.locator("#status").textContent()).to.equal("Key “staging” revoked.");
    expect(await useOnProxy(stack, keys.staging ?? "")).to.equal(401);
    expect(await page.locator("#keys-table caption").textContent()).to.equal("1 active, 2 revoked");
    expect(await page.evaluate<number>(HORIZONTAL_OVERFLOW)).to.be.at.most(0);
    await shot("02-key-list.png");
  });

  it("says Key is revoked and Not found when the key changed elsewhere", async () => {
    const token = await apiToken();
    const revokedElsewhere = await createThroughApi(token, "temp");
    await page.reload();
    await page.getByRole("heading", { name: "API keys" }).waitFor();

    await page.getByRole("button", { name: "Edit key temp" }).click();
    const d = dialog("Edit “temp”");
    await d.waitFor();
    const revoke = await fetch(`${stack.url}/v1/auth/keys/${revokedElsewhere}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(revoke.status).to.equal(200);
    await d.getByLabel("Compression intensity").selectOption("lite");
    await d.getByRole("button", { name: "Save changes" }).click();
    await d.getByRole("alert").waitFor();
    expect(await d.getByRole("alert").textContent()).to.equal(
      "Key is revoked: a revoked key cannot be changed or rotated.",
    );
    await d.getByRole("button", { name: "Cancel" }).click();
    await row("temp", "revoked").waitFor();

    const goneElsewhere = await createThroughApi(token, "gone");
    await page.reload();
    await page.getByRole("heading", { name: "API keys" }).waitFor();
    await page.getByRole("button", { name: "Rotate key gone" }).click();
    const confirm = alertDialog("Rotate “gone”?");
    await confirm.waitFor();
    // Gone from Postgres behind the page's back (no usage refers to it yet).
    await stack.db.query("DELETE FROM service_keys WHERE id = $1", [goneElsewhere]);
    await confirm.getByRole("button", { name: "Rotate key" }).click();
    await confirm.getByRole("alert").waitFor();
    expect(await confirm.getByRole("alert").textContent()).to.equal(
      "Not found: this key no longer exists. The list has been refreshed.",
    );
    await shot("07-error-not-found.png");
    await confirm.getByRole("button", { name: "Cancel" }).click();
    await confirm.waitFor({ state: "detached" });
    expect(await page.getByRole("button", { name: "Rotate key gone" }).count()).to.equal(0);
  });

  it("charts tokens used and saved per day, for the account and for one key", async () => {
    // The proxy's own events (two successful requests above), as the worker records them.
    const queue = new Queue(USAGE_QUEUE, {
      connection: new Redis(stack.config.REDIS_URL, { maxRetriesPerRequest: null }),
    });
    const proxied = await waitFor(
      async () => {
        const jobs = await queue.getJobs(["waiting", "delayed", "active", "completed", "failed"]);
        const events = jobs.flatMap((j) => (eventsOfBatch(j.data) ?? []) as UsageEvent[]);
        return events.length >= 2 ? events : undefined;
      },
      { what: "the proxy's usage events" },
    );
    await queue.close();
    const ids = (await stack.db.query("SELECT id, name, is_active FROM service_keys")).rows as {
      id: string;
      name: string;
      is_active: boolean;
    }[];
    const ciDeploy = ids.find((k) => k.name === "ci-deploy" && k.is_active)?.id ?? "";
    const staging = ids.find((k) => k.name === "staging")?.id ?? "";
    const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
    const synthetic: UsageEvent[] = [];
    for (let d = 1; d <= 12; d++) {
      for (const [keyId, scale] of [
        [ciDeploy, 1],
        [staging, 0.5],
      ] as const) {
        const before = Math.round((2_000 + d * 350) * scale);
        synthetic.push({
          event_id: `evt_dash_${keyId}_${d}`,
          key_id: keyId,
          account_id: account.id,
          provider: "openai",
          model: "gpt-4o-mini",
          status: 200,
          streamed: false,
          input_tokens: Math.round(before * 0.7),
          output_tokens: Math.round(300 * scale),
          input_tokens_before_compression: before,
          // ci-deploy's agent hits the prompt cache for half its input; staging's never does.
          cache_read_tokens: keyId === ciDeploy ? Math.round(before * 0.35) : 0,
          cache_write_tokens: 0,
          recall_rounds: 0,
          estimated: false,
          intensity: "full",
          compression_reason: null,
          latency_ms: 120,
          started_at: new Date(today - d * DAY_MS + 12 * 3_600_000).toISOString(),
        });
      }
    }
    const recorded = await new UsageRecorder(stack.prisma, stack.config.TERSE_PLANS).record([...proxied, ...synthetic]);
    expect(recorded.results.map((r) => r.outcome)).to.deep.equal(recorded.results.map(() => "INSERTED"));

    const usage = page.locator("section.usage");
    await usage.getByRole("button", { name: "Show" }).click();
    const threeDaysAgo = new Date(today - 3 * DAY_MS).toISOString().slice(0, 10);
    const dayBars = usage.locator(`svg.chart g.day[data-day="${threeDaysAgo}"]`);
    await dayBars.waitFor();
    // Account: both keys' events of that day. 3 days ago: before 3050 and 1525.
    const used = (b: number, s: number) => Math.round(b * 0.7) + Math.round(300 * s);
    expect(await dayBars.locator("rect.used").getAttribute("data-value")).to.equal(
      String(used(3050, 1) + used(1525, 0.5)),
    );
    expect(await dayBars.locator("rect.saved").getAttribute("data-value")).to.equal(
      String(3050 - Math.round(3050 * 0.7) + (1525 - Math.round(1525 * 0.7))),
    );
    expect(Number(await dayBars.locator("rect.used").getAttribute("height"))).to.be.greaterThan(10);
    const drawn = await usage
      .locator("svg.chart rect.used")
      .evaluateAll((els) => els.filter((e) => Number(e.getAttribute("data-value")) > 0).length);
    expect(drawn).to.be.at.least(12);
    expect(await usage.locator(".usage-summary").textContent()).to.match(/^All keys: 26 requests, /);
    await usage.screenshot({ path: join(SCREENSHOT_DIR, "08-usage-chart.png") });

    // One key: only its own figures.
    await usage.getByLabel("Key", { exact: true }).selectOption({ label: await optionLabel(usage, "staging") });
    await usage.locator(".usage-summary", { hasText: /^Key “staging/ }).waitFor();
    expect(await usage.locator(".usage-summary").textContent()).to.match(/: 12 requests, /);
    expect(await dayBars.locator("rect.used").getAttribute("data-value")).to.equal(String(used(1525, 0.5)));
  });

  it("shows cost and money saved per day, per key and per model, labelled estimate, with the unpriced models named", async () => {
    const ids = (await stack.db.query("SELECT id, name FROM service_keys WHERE is_active")).rows as {
      id: string;
      name: string;
    }[];
    const ciDeploy = ids.find((k) => k.name === "ci-deploy")?.id ?? "";
    const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
    const fiveDaysAgo = new Date(today - 5 * DAY_MS + 9 * 3_600_000).toISOString();
    // A model the price table does not know: counted in tokens, named, left out of the money.
    const unpriced = [1, 2].map((n) => ({
      event_id: `evt_dash_unpriced_${n}`,
      key_id: ciDeploy,
      account_id: account.id,
      provider: "openai" as const,
      model: "acme-local-7b",
      status: 200,
      streamed: false,
      input_tokens: 1_000,
      output_tokens: 100,
      input_tokens_before_compression: 1_500,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      recall_rounds: 0,
      estimated: false,
      intensity: "full" as const,
      compression_reason: null,
      latency_ms: 90,
      started_at: fiveDaysAgo,
    }));
    await new UsageRecorder(stack.prisma, stack.config.TERSE_PLANS).record(unpriced);

    const usage = page.locator("section.usage");
    await usage.getByLabel("Key", { exact: true }).selectOption({ label: "All keys" });
    await usage.getByRole("button", { name: "Show" }).click();
    const savings = page.locator("section.savings");
    await savings.locator(".unpriced", { hasText: "acme-local-7b" }).waitFor();
    expect(await savings.getByRole("heading", { level: 2 }).textContent()).to.equal("Cost and savings estimate");

    // Three days ago, at the shipped gpt-4o-mini prices (0.15 input, 0.075 cached, 0.60 output per million):
    // ci-deploy 3050 before, 2135 sent, 1068 of them cached, 300 out; staging 1525 before, 1068 sent, 150 out.
    const threeDaysAgo = new Date(today - 3 * DAY_MS).toISOString().slice(0, 10);
    const day = savings.locator(`svg.money g.day[data-day="${threeDaysAgo}"]`);
    const cost = ((2135 - 1068) * 0.15 + 1068 * 0.075 + 300 * 0.6 + 1068 * 0.15 + 150 * 0.6) / 1e6;
    // Without terse: the cached share the same (1068 / 2135), the sent input grown to what it was.
    const ciWithout = ((3050 - 1068 * (3050 / 2135)) * 0.15 + 1068 * (3050 / 2135) * 0.075 + 300 * 0.6) / 1e6;
    const without = ciWithout + (1525 * 0.15 + 150 * 0.6) / 1e6;
    expect(Number(await day.locator("rect.cost").getAttribute("data-value"))).to.be.closeTo(cost, 1e-6);
    expect(Number(await day.locator("rect.saved").getAttribute("data-value"))).to.be.closeTo(without - cost, 1e-6);
    expect(await day.locator("title").textContent()).to.match(/cost \$0\.\d+, saved about \$0\.\d+ \(estimate\)$/);
    const summary = await savings.locator(".savings-summary").textContent();
    expect(summary).to.match(
      /^Cost \$[\d.]+; without terse about \$[\d.]+ \(estimate\); saved about \$[\d.]+ \(estimate\)/,
    );
    expect(await savings.locator(".unpriced").textContent()).to.include("their 2 requests");

    // Per key and per model, each money column labelled an estimate where it is one.
    const keyRows = savings.locator("table.money-table").nth(1).locator("tbody tr");
    await keyRows.first().waitFor();
    const keyNames = await keyRows.locator("th").allTextContents();
    expect(
      keyNames.some((n) => /^ci-deploy \(svc_live_\w+…\)$/.test(n)),
      keyNames.join(", "),
    ).to.equal(true);
    expect(
      keyNames.some((n) => n.startsWith("staging (")),
      keyNames.join(", "),
    ).to.equal(true);
    const modelTable = savings.locator("table.money-table").nth(2);
    expect(await modelTable.locator("thead th").allTextContents()).to.include.members([
      "Without terse (estimate)",
      "Saved (estimate)",
    ]);
    const acme = modelTable.locator("tbody tr", { has: page.locator("th", { hasText: "acme-local-7b" }) });
    expect(await acme.locator("td").allTextContents()).to.deep.equal([
      "2",
      "0",
      "0",
      "no price",
      "no price",
      "no price",
    ]);
    const mini = modelTable.locator("tbody tr", { has: page.locator("th", { hasText: "gpt-4o-mini" }) });
    expect(Number(await mini.locator("td[data-usd]").last().getAttribute("data-usd"))).to.be.greaterThan(0);
    await savings.screenshot({ path: join(SCREENSHOT_DIR, "10-cost-and-savings.png") });
  });

  it("fits a phone screen", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await page.getByRole("heading", { name: "API keys" }).waitFor();
    await page.locator("section.usage svg.chart").waitFor();
    const overflow = await page.evaluate<number>(HORIZONTAL_OVERFLOW);
    const wide = await page.evaluate<string[]>(TOO_WIDE);
    expect(overflow, `horizontal scrolling at 390px: ${wide.join(", ")}`).to.be.at.most(0);
    // Each key is a card: the column names move beside the values.
    const labelShown = await cell(row("ci-deploy"), "Intensity").evaluate(
      (el) => el.ownerDocument.defaultView?.getComputedStyle(el, "::before").content,
    );
    expect(labelShown).to.equal('"Intensity"');
    const chartWidth = await page.locator("section.usage svg.chart").evaluate((el) => el.getBoundingClientRect().width);
    expect(chartWidth).to.be.at.most(390);
    await page.screenshot({ path: join(SCREENSHOT_DIR, "09-phone.png"), fullPage: true });
    await page.getByRole("button", { name: "Create key" }).click();
    const box = await dialog("Create a key").boundingBox();
    expect(box?.width).to.be.at.most(390);
    await page.keyboard.press("Escape");
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it("sends an expired session back to sign-in with a message", async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = jwt.sign({ iat: now - 3_700, exp: now - 100 }, stack.config.JWT_SECRET, {
      algorithm: "HS256",
      subject: account.id,
      issuer: stack.config.JWT_ISSUER,
      audience: stack.config.JWT_AUDIENCE,
    });
    secrets.push(expired);
    // The page believes the token is still good; the API says otherwise.
    const session = JSON.stringify({ token: expired, email: account.email, expiresAt: Date.now() + 3_600_000 });
    await page.evaluate(`sessionStorage.setItem("terse.session", ${JSON.stringify(session)})`);
    await page.reload();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByText("Your session has expired. Sign in again to continue.").waitFor();
    expect(await page.evaluate<string | null>('sessionStorage.getItem("terse.session")')).to.equal(null);
    await shot("07-error-session-expired.png");
    await signIn();
  });

  it("signs out", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByText("You have signed out.").waitFor();
    expect(await page.evaluate<number>("sessionStorage.length")).to.equal(0);
    await page.reload();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
  });

  it("broke no CSP rule, and put no secret in a URL or a log line", () => {
    expect(pageProblems).to.deep.equal([]);
    expect(requestedUrls.length).to.be.greaterThan(10);
    expect(secrets.length).to.be.greaterThan(5);
    for (const secret of secrets) {
      for (const url of requestedUrls) expect(url.includes(secret), "secret in a URL").to.equal(false);
      for (const line of stack.logs) expect(line.includes(secret), "secret in a log line").to.equal(false);
    }
    expect(stack.logs.length).to.be.greaterThan(10);
  });
});

async function optionLabel(scope: Locator, keyName: string): Promise<string> {
  const labels = await scope.getByLabel("Key", { exact: true }).locator("option").allInnerTexts();
  const label = labels.find((l) => l.startsWith(`${keyName} (`));
  if (!label) throw new Error(`no option for ${keyName} in ${labels.join(", ")}`);
  return label;
}

/** The page's JavaScript heap after a full garbage collection, as one string. */
async function heapSnapshot(page: Page): Promise<string> {
  const cdp = await page.context().newCDPSession(page);
  const chunks: string[] = [];
  cdp.on("HeapProfiler.addHeapSnapshotChunk", (e) => chunks.push(e.chunk));
  await cdp.send("HeapProfiler.enable");
  await cdp.send("HeapProfiler.collectGarbage");
  await cdp.send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
  await cdp.detach();
  return chunks.join("");
}
