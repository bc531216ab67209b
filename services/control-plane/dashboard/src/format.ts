// Dates and numbers as people read them, in their own locale.

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const shortThisYear = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});
const shortOtherYear = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric" });
const dayLabel = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", timeZone: "UTC" });
const longDay = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });
const integer = new Intl.NumberFormat();
const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });

export function formatDateTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dateTime.format(d);
}

/** Compact, for table cells: the year only when it is not this one. */
export function formatShort(iso: string, now = new Date()): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return (d.getFullYear() === now.getFullYear() ? shortThisYear : shortOtherYear).format(d);
}

/** "2026-11-03" (a UTC day) -> "Nov 3". */
export function formatDay(day: string, long = false): string {
  const d = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(d.getTime())) return day;
  return (long ? longDay : dayLabel).format(d);
}

export function formatInt(n: number): string {
  return integer.format(n);
}

const usdSmall = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD", maximumFractionDigits: 4 });
const usd = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD" });
const usdCompact = new Intl.NumberFormat(undefined, {
  style: "currency",
  currency: "USD",
  notation: "compact",
  maximumFractionDigits: 2,
});

/** Dollars: cents, or tenths of a cent under a dollar (one request costs fractions of one). */
export function formatUsd(n: number): string {
  return (Math.abs(n) < 1 ? usdSmall : usd).format(n);
}

/** Dollars on a chart axis: compact from a dollar up, tenths of a cent below. */
export function formatUsdCompact(n: number): string {
  return (Math.abs(n) < 1 ? usdSmall : usdCompact).format(n);
}

export function formatCompact(n: number): string {
  return compact.format(n);
}

/** A Date -> the value of an <input type="date">, in UTC. */
export function toDateInput(d: Date): string {
  return d.toISOString().slice(0, 10);
}

export const DAY_MS = 86_400_000;
