import type { ModelPrice } from "@terse/prices";

// Money from stored tokens, at read time (docs/savings.md): a corrected price applies to
// every past request, and nothing but tokens is stored per event.
//
// What a request cost is exact given the price: each input part at its own rate (fresh,
// read from the cache, written to it), output at the output rate.
//
// What it would have cost without terse is an ESTIMATE, priced from the split the data
// plane stored per request (its domain/without-terse.ts): the input uncompressed (the
// provider's count plus what compression saved, one upstream call), and of it what the
// provider's cache would have held: the request minus its newest turn, which the previous
// request of the session sent, read from the cache; the rest written where the request
// marks it (Anthropic). The compressed request is priced as the provider billed it, so a
// prefix compression broke (fewer reads, more writes) is charged to terse, and recall
// rounds are terse's cost. Output is taken as it was (shorter answers are not counted as
// savings).

/** Token sums of some requests of one model, as stored, plus the estimate's cache parts before compression. */
export interface TokenSums {
  requests: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Input tokens before compression (input + saved). */
  before: number;
  /** Of `before`, the estimated parts read from and written to the cache (as stored per request). */
  cacheReadBefore: number;
  cacheWriteBefore: number;
  /**
   * Input tokens compression removed, each request's never below 0 (before - input, where
   * terse's additions or a recall round made a request dearer, is 0 for it): a sum over
   * requests, so groups add up to their totals however the report groups them.
   */
  saved: number;
}

export interface Money {
  /** What the requests cost, USD. */
  cost_usd: number;
  /** Estimate: what they would have cost uncompressed, USD. */
  cost_without_terse_usd: number;
  /** Estimate: the difference, net of cache writes; negative when compression cost more. */
  saved_usd: number;
}

const PER_MILLION = 1e6;

/** USD of input split into fresh, cache-read and cache-written tokens, plus output. */
function priced(p: ModelPrice, input: number, read: number, write: number, output: number): number {
  const fresh = Math.max(0, input - read - write);
  return (fresh * p.input + read * p.cached_input + write * p.cache_write + output * p.output) / PER_MILLION;
}

export function moneyOf(p: ModelPrice, t: TokenSums): Money {
  const cost = priced(p, t.input, t.cacheRead, t.cacheWrite, t.output);
  const without = priced(p, t.before, t.cacheReadBefore, t.cacheWriteBefore, t.output);
  return { cost_usd: cost, cost_without_terse_usd: without, saved_usd: without - cost };
}

export const NO_MONEY: Money = { cost_usd: 0, cost_without_terse_usd: 0, saved_usd: 0 };

export function addMoney(a: Money, b: Money): Money {
  return {
    cost_usd: a.cost_usd + b.cost_usd,
    cost_without_terse_usd: a.cost_without_terse_usd + b.cost_without_terse_usd,
    saved_usd: a.saved_usd + b.saved_usd,
  };
}

/** Micro-dollars are the finest figure a person reads; more digits would only be float noise. */
export interface Micros {
  cost: number;
  without: number;
}

export const NO_MICROS: Micros = { cost: 0, without: 0 };

/** A group's money rounded to whole micro-dollars, the figures a report shows and sums. */
export function microsOf(m: Money): Micros {
  return { cost: Math.round(m.cost_usd * 1e6), without: Math.round(m.cost_without_terse_usd * 1e6) };
}

export const addMicros = (a: Micros, b: Micros): Micros => ({ cost: a.cost + b.cost, without: a.without + b.without });

/**
 * Money as the report shows it: from whole micro-dollars, so the rows add up to the totals
 * to the last digit and a saving is exactly the difference of the two costs shown.
 */
export function moneyOfMicros(m: Micros): Money {
  return { cost_usd: m.cost / 1e6, cost_without_terse_usd: m.without / 1e6, saved_usd: (m.without - m.cost) / 1e6 };
}
