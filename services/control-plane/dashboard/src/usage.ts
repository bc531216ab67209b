import { type Api, ApiFailure, type Key, type UsageDay, type UsageReport } from "./api.ts";
import { drawDayChart, redrawOnResize } from "./chart.ts";
import { clear, h, uid } from "./dom.ts";
import { DAY_MS, formatCompact, formatDay, formatInt, toDateInput } from "./format.ts";
import { savingsSection } from "./savings.ts";

// Usage: tokens per day, used beside saved by compression, for the account or one key,
// over a chosen range of UTC days. The chart is inline SVG drawn here; the same figures
// are also a table for screen readers and for copying.

const DEFAULT_DAYS = 30;
const MAX_DAYS = 366;

export interface UsageSection {
  element: HTMLElement;
  /** Cost and savings in money for the same range and key, a card of its own. */
  savings: HTMLElement;
  /** Re-reads the key list for the key picker (names, revoked keys included). */
  setKeys(keys: Key[]): void;
  load(): Promise<void>;
}

export function usageSection(api: Api): UsageSection {
  const today = new Date();
  const fromInput = h("input", { type: "date", id: uid("usage-from"), required: true });
  const toInput = h("input", { type: "date", id: uid("usage-to"), required: true });
  fromInput.value = toDateInput(new Date(today.getTime() - (DEFAULT_DAYS - 1) * DAY_MS));
  toInput.value = toDateInput(today);
  const keySelect = h("select", { id: uid("usage-key") }, h("option", { value: "" }, "All keys"));
  const formError = h("p", { class: "notice error", role: "alert", hidden: true });
  const summary = h("p", { class: "usage-summary", "aria-live": "polite" });
  const chartBox = h("div", { class: "chart-box" });
  const tableBox = h("div", { class: "table-scroll" });
  const form = h(
    "form",
    { class: "usage-form", novalidate: true },
    h("div", { class: "field" }, h("label", { for: fromInput.id }, "From"), fromInput),
    h("div", { class: "field" }, h("label", { for: toInput.id }, "To (inclusive)"), toInput),
    h("div", { class: "field" }, h("label", { for: keySelect.id }, "Key"), keySelect),
    h("div", { class: "field field-button" }, h("button", { type: "submit", class: "button secondary" }, "Show")),
  );
  const element = h(
    "section",
    { class: "card usage", "aria-labelledby": "usage-heading" },
    h("h2", { id: "usage-heading" }, "Usage"),
    h("p", { class: "hint" }, "Tokens per day (UTC): tokens used beside input tokens saved by compression."),
    form,
    formError,
    summary,
    chartBox,
    h("details", { class: "usage-table" }, h("summary", {}, "Show the figures as a table"), tableBox),
  );

  const savings = savingsSection(api);
  let report: UsageReport | null = null;
  let seq = 0;

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void load();
  });
  keySelect.addEventListener("change", () => void load());

  // Redrawn at the width the chart really has (phones included), not scaled text.
  redrawOnResize(chartBox, () => (report ? drawChart(report.data) : undefined));

  async function load(): Promise<void> {
    formError.hidden = true;
    const from = new Date(`${fromInput.value}T00:00:00Z`);
    const toDay = new Date(`${toInput.value}T00:00:00Z`);
    if (Number.isNaN(from.getTime()) || Number.isNaN(toDay.getTime())) {
      return showError("Choose a start and an end date.");
    }
    const to = new Date(toDay.getTime() + DAY_MS);
    if (from >= to) return showError("The start date must be on or before the end date.");
    if ((to.getTime() - from.getTime()) / DAY_MS > MAX_DAYS) {
      return showError(`Choose a range of at most ${MAX_DAYS} days.`);
    }
    const mine = ++seq;
    element.setAttribute("aria-busy", "true");
    try {
      const answer = await api.usage(from, to, keySelect.value || null);
      if (mine !== seq) return;
      report = answer;
      render(answer);
      await savings.show(answer, from, to, keySelect.value || null);
    } catch (err) {
      if (mine !== seq) return;
      if (err instanceof ApiFailure && err.status === 401) return;
      showError(err instanceof ApiFailure ? usageMessage(err) : "Usage could not be loaded.");
    } finally {
      if (mine === seq) element.removeAttribute("aria-busy");
    }
  }

  function showError(message: string) {
    formError.textContent = message;
    formError.hidden = false;
  }

  function render(r: UsageReport) {
    const t = r.totals;
    const used = t.input_tokens + t.output_tokens;
    const share = t.input_tokens_before_compression > 0 ? t.tokens_saved / t.input_tokens_before_compression : 0;
    const scope = keySelect.value ? `Key “${keySelect.selectedOptions[0]?.textContent ?? ""}”` : "All keys";
    summary.textContent =
      t.requests === 0
        ? `${scope}: no requests in this range.`
        : `${scope}: ${formatInt(t.requests)} requests, ${formatInt(used)} tokens used ` +
          `(${formatInt(t.input_tokens)} input, ${formatInt(t.output_tokens)} output); compression saved ` +
          `${formatInt(t.tokens_saved)} input tokens (${Math.round(share * 100)}% of ${formatInt(t.input_tokens_before_compression)}).`;
    drawChart(r.data);
    drawTable(r.data);
  }

  function drawChart(days: UsageDay[]): number {
    return drawDayChart({
      box: chartBox,
      days,
      series: [
        { cls: "used", legend: "Tokens used (input + output)", value: (d) => d.input_tokens + d.output_tokens },
        { cls: "saved", legend: "Input tokens saved by compression", value: (d) => d.tokens_saved },
      ],
      tick: formatCompact,
      describe: (d) =>
        `${formatDay(d.day, true)}: ${formatInt(d.input_tokens + d.output_tokens)} tokens used, ${formatInt(d.tokens_saved)} saved`,
      title: `Tokens used and saved per day. ${summary.textContent ?? ""}`,
      empty: "No tokens in this range.",
    });
  }

  function drawTable(days: UsageDay[]) {
    clear(tableBox);
    tableBox.append(
      h(
        "table",
        { class: "data usage-days" },
        h("caption", { class: "visually-hidden" }, "Usage per day"),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ...["Day", "Requests", "Input tokens", "Output tokens", "Input before compression", "Tokens saved"].map(
              (c) => h("th", { scope: "col" }, c),
            ),
          ),
        ),
        h(
          "tbody",
          {},
          ...days.map((d) =>
            h(
              "tr",
              {},
              h("th", { scope: "row" }, d.day),
              h("td", {}, formatInt(d.requests)),
              h("td", {}, formatInt(d.input_tokens)),
              h("td", {}, formatInt(d.output_tokens)),
              h("td", {}, formatInt(d.input_tokens_before_compression)),
              h("td", {}, formatInt(d.tokens_saved)),
            ),
          ),
        ),
      ),
    );
  }

  return {
    element,
    savings: savings.element,
    setKeys(keys) {
      const selected = keySelect.value;
      keySelect.replaceChildren(
        h("option", { value: "" }, "All keys"),
        ...keys.map((k) =>
          h(
            "option",
            { value: k.id, selected: k.id === selected },
            `${k.name} (${k.key_prefix}…)${k.is_active ? "" : " revoked"}`,
          ),
        ),
      );
    },
    load,
  };
}

function usageMessage(err: ApiFailure): string {
  if (err.code === "not_found") return "Not found: that key no longer exists.";
  return err.message;
}
