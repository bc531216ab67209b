import { clear, h, svg, uid } from "./dom.ts";
import { formatDay } from "./format.ts";

// A bar chart per UTC day, drawn as inline SVG at the width its box really has (phones
// included), bars side by side for each series. Each bar carries its exact value in
// data-value (a negative value is drawn as no bar), each day a title for screen readers.

const CHART_HEIGHT = 240;
const MARGIN = { top: 12, right: 12, bottom: 28, left: 56 };

export interface Series<D> {
  /** The bar's class beside `bar` (its colour in styles.css, and the legend's swatch). */
  cls: string;
  legend: string;
  value(day: D): number;
}

export interface DayChart<D extends { day: string }> {
  box: HTMLElement;
  days: D[];
  series: Series<D>[];
  /** An axis tick's label (compact). */
  tick(v: number): string;
  /** One day's title: every figure of that day, in words. */
  describe(day: D): string;
  /** The chart's title, what it shows. */
  title: string;
  /** Shown instead when every value is 0. */
  empty: string;
  /** Extra class of the <svg>, to tell charts apart. */
  cls?: string;
}

/** Draws into `c.box` (replacing what was there); returns the width drawn at. */
export function drawDayChart<D extends { day: string }>(c: DayChart<D>): number {
  const width = Math.max(280, c.box.clientWidth || 640);
  clear(c.box);
  if (c.days.every((d) => c.series.every((s) => s.value(d) === 0))) {
    c.box.append(h("p", { class: "empty" }, c.empty));
    return width;
  }
  const titleId = uid("chart-title");
  const innerW = width - MARGIN.left - MARGIN.right;
  const innerH = CHART_HEIGHT - MARGIN.top - MARGIN.bottom;
  const max = niceMax(Math.max(0, ...c.days.flatMap((d) => c.series.map((s) => s.value(d)))));
  const y = (v: number) => MARGIN.top + innerH - (max === 0 ? 0 : (Math.max(0, v) / max) * innerH);
  const slot = c.days.length > 0 ? innerW / c.days.length : innerW;
  const n = c.series.length;
  const barW = Math.max(1, Math.min(18, (slot - 2) / n));

  const grid = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const v = max * f;
    return svg(
      "g",
      { class: "tick" },
      svg("line", { x1: MARGIN.left, x2: width - MARGIN.right, y1: y(v), y2: y(v), class: "grid" }),
      svg("text", { x: MARGIN.left - 6, y: y(v), class: "axis-label y", "dominant-baseline": "middle" }, c.tick(v)),
    );
  });

  const labelEvery = Math.max(1, Math.ceil(c.days.length / Math.max(1, Math.floor(innerW / 64))));
  const bars = c.days.map((d, i) => {
    const x0 = MARGIN.left + i * slot + (slot - barW * n) / 2;
    return svg(
      "g",
      { class: "day", "data-day": d.day },
      svg("title", {}, c.describe(d)),
      ...c.series.map((s, k) => {
        const v = s.value(d);
        return svg("rect", {
          class: `bar ${s.cls}`,
          x: x0 + k * barW,
          y: y(v),
          width: barW,
          height: y(0) - y(v),
          "data-value": v,
        });
      }),
      i % labelEvery === 0
        ? svg(
            "text",
            {
              x: MARGIN.left + i * slot + slot / 2,
              y: CHART_HEIGHT - 8,
              class: "axis-label x",
              "text-anchor": "middle",
            },
            formatDay(d.day),
          )
        : null,
    );
  });

  const chart = svg(
    "svg",
    {
      class: c.cls ? `chart ${c.cls}` : "chart",
      width,
      height: CHART_HEIGHT,
      viewBox: `0 0 ${width} ${CHART_HEIGHT}`,
      role: "img",
      "aria-labelledby": titleId,
    },
    svg("title", { id: titleId }, c.title),
    ...grid,
    svg("line", { x1: MARGIN.left, x2: width - MARGIN.right, y1: y(0), y2: y(0), class: "baseline" }),
    ...bars,
  );
  const legend = h(
    "ul",
    { class: "legend" },
    ...c.series.map((s) => h("li", {}, h("span", { class: `swatch ${s.cls}`, "aria-hidden": "true" }), s.legend)),
  );
  c.box.append(legend, chart);
  return width;
}

/** Redraws `draw` whenever `box` changes width (a phone turned, a window resized). */
export function redrawOnResize(box: HTMLElement, draw: () => number | undefined): void {
  let lastWidth = 0;
  new ResizeObserver(() => {
    const width = box.clientWidth;
    if (width > 0 && Math.abs(width - lastWidth) > 1) lastWidth = draw() ?? lastWidth;
  }).observe(box);
}

/** 0, or a round number at or above v (1, 2, 2.5, 5 times a power of ten). */
function niceMax(v: number): number {
  if (v <= 0) return 0;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
