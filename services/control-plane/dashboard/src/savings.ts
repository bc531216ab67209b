import type { Api, UsageDay, UsageFigures, UsageReport, UsageRow } from "./api.ts";
import { drawDayChart, redrawOnResize } from "./chart.ts";
import { clear, h } from "./dom.ts";
import { formatDay, formatInt, formatUsd, formatUsdCompact } from "./format.ts";

// Cost and savings in money for the range and key the usage form chose: per day (chart
// and table), per key and per model. What terse saved is an estimate and says so
// everywhere it appears; models the price table does not know are named, and their
// requests are left out of every money figure (docs/savings.md).

export interface SavingsSection {
  element: HTMLElement;
  /** Shows the day report the usage form loaded, and reads the same range per key and per model. */
  show(day: UsageReport, from: Date, to: Date, keyId: string | null): Promise<void>;
}

const ESTIMATE = "estimate";

export function savingsSection(api: Api): SavingsSection {
  const summary = h("p", { class: "savings-summary", "aria-live": "polite" });
  const unpriced = h("p", { class: "notice info unpriced", role: "status", hidden: true });
  const chartBox = h("div", { class: "chart-box" });
  const dayTable = h("div", { class: "table-scroll" });
  const keyTable = h("div", { class: "table-scroll" });
  const modelTable = h("div", { class: "table-scroll" });
  const about = h("p", { class: "hint savings-about" });
  const element = h(
    "section",
    { class: "card savings", "aria-labelledby": "savings-heading" },
    h("h2", { id: "savings-heading" }, "Cost and savings ", h("span", { class: "badge estimate" }, ESTIMATE)),
    h(
      "p",
      { class: "hint" },
      "What your requests cost at the providers' list prices, and what terse estimates they would have cost " +
        "without compression, prompt caching counted.",
    ),
    summary,
    unpriced,
    chartBox,
    h("details", { class: "usage-table" }, h("summary", {}, "Show cost per day as a table"), dayTable),
    h("h3", {}, "Per key"),
    keyTable,
    h("h3", {}, "Per model"),
    modelTable,
    about,
  );

  let days: UsageDay[] | null = null;
  let seq = 0;
  redrawOnResize(chartBox, () => (days ? drawChart(days) : undefined));

  async function show(day: UsageReport, from: Date, to: Date, keyId: string | null): Promise<void> {
    const mine = ++seq;
    days = day.data;
    renderSummary(day);
    drawChart(day.data);
    drawTable(dayTable, "Cost per day", "Day", day.data, (d) => d.day ?? "");
    const [byKey, byModel] = await Promise.all([
      api.usage(from, to, keyId, "key"),
      api.usage(from, to, keyId, "model"),
    ]);
    if (mine !== seq) return;
    drawTable(keyTable, "Cost per key", "Key", byKey.data, (r) => `${r.key_name ?? ""} (${r.key_prefix ?? ""}…)`);
    drawTable(modelTable, "Cost per model", "Model", byModel.data, (r) => r.model ?? "");
  }

  function renderSummary(r: UsageReport) {
    const t = r.totals;
    const priced = t.requests - t.unpriced_requests;
    summary.textContent =
      priced === 0
        ? "No priced requests in this range."
        : `Cost ${formatUsd(t.cost_usd)}; without terse about ${formatUsd(t.cost_without_terse_usd)} (${ESTIMATE}); ` +
          `saved about ${formatUsd(t.saved_usd)} (${ESTIMATE}), net of prompt-cache reads and writes. ` +
          `Of the input, ${formatInt(t.cache_read_tokens)} tokens were read from and ${formatInt(t.cache_write_tokens)} ` +
          "written to the providers' prompt caches.";
    unpriced.hidden = r.unpriced_models.length === 0;
    unpriced.textContent =
      `No price for ${r.unpriced_models.join(", ")}: their ${formatInt(t.unpriced_requests)} requests are in the ` +
      "token figures but not in the money ones. An operator can price them with TERSE_PRICES.";
    about.textContent =
      `Prices: the providers' list prices as of ${r.money.prices_as_of} unless your operator changed them. ` +
      "“Without terse” and “saved” are estimates: the input before compression is terse's tokenizer count of " +
      "what compression removed, added to what the provider billed, with the part the previous request of the " +
      "session sent read from the prompt cache (so a compression that broke the cache shows as a loss); output is " +
      "taken as it was. Cost is what the providers reported, at those prices.";
  }

  function drawChart(data: UsageDay[]): number {
    return drawDayChart({
      box: chartBox,
      cls: "money",
      days: data,
      series: [
        { cls: "cost", legend: "Cost", value: (d) => d.cost_usd },
        { cls: "saved", legend: `Saved by terse (${ESTIMATE})`, value: (d) => d.saved_usd },
      ],
      tick: formatUsdCompact,
      describe: (d) =>
        `${formatDay(d.day, true)}: cost ${formatUsd(d.cost_usd)}, saved about ${formatUsd(d.saved_usd)} (${ESTIMATE})`,
      title: `Cost and money saved per day (${ESTIMATE}). ${summary.textContent ?? ""}`,
      empty: "No cost in this range.",
    });
  }

  return { element, show };
}

/** One row per group: its requests, cache tokens and money; "no price" where none of it is priced. */
function drawTable<R extends UsageRow>(
  box: HTMLElement,
  caption: string,
  first: string,
  rows: R[],
  name: (r: R) => string,
): void {
  clear(box);
  const money = (r: UsageFigures, usd: number) =>
    r.requests > 0 && r.unpriced_requests === r.requests ? "no price" : formatUsd(usd);
  const columns = [
    first,
    "Requests",
    "Cache read tokens",
    "Cache write tokens",
    "Cost",
    `Without terse (${ESTIMATE})`,
    `Saved (${ESTIMATE})`,
  ];
  box.append(
    h(
      "table",
      { class: "data money-table" },
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, h("tr", {}, ...columns.map((c) => h("th", { scope: "col" }, c)))),
      h(
        "tbody",
        {},
        ...rows.map((r) =>
          h(
            "tr",
            {},
            h("th", { scope: "row" }, name(r)),
            h("td", {}, formatInt(r.requests)),
            h("td", {}, formatInt(r.cache_read_tokens)),
            h("td", {}, formatInt(r.cache_write_tokens)),
            h("td", { "data-usd": r.cost_usd }, money(r, r.cost_usd)),
            h("td", {}, money(r, r.cost_without_terse_usd)),
            h("td", { "data-usd": r.saved_usd }, money(r, r.saved_usd)),
          ),
        ),
      ),
    ),
  );
}
