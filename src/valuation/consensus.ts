/**
 * The weighted robust consensus of one side of one item (spec: ValuationOut.ask_amount / bid_amount and
 * the counts), with its log-scale uncertainty.
 *
 * Input: sources = one quote per market on this side, already on the common scale (cash CNY, fee path
 * applied), each with its standard uncertainty on a log scale `sigma` (market dispersion, age of its
 * close, unknown-fee allowance; see item.ts).
 *
 * 1. Unknown fees: when at least MIN_KNOWN_FEE_MARKETS sources have every fee on their path known,
 *    sources with an unknown (null) slot are left out; otherwise every source is kept and its sigma
 *    already carries the allowance of the unknown fee (fee-path.ts).
 * 2. Precision weights v_i = 1 / sigma_i^2.
 * 3. Robust location: Tukey's biweight M-estimate on the log scale, started from the weighted median of
 *    ln(amount) and iterated (IRLS) with weights w_i = v_i * (1 - z_i^2)^2 for |z_i| < 1 else 0, where
 *    z_i = ln(amount_i / consensus) / (C * sigma_i) and C = BIWEIGHT_C = 1.5.
 *    A source more than C sigma away (a stale or fat-fingered quote) gets weight 0: it cannot move the
 *    consensus at all; one closer moves it by a bounded amount. When every weight is 0 (sources that
 *    all disagree beyond C sigma) the plain precision weights are used.
 *    The consensus amount is the weighted mean of the decimal amounts with the final weights (rounded
 *    to 6 significant digits), sum(w_i * amount_i) / sum(w_i), rounded half-even to 6 decimals, so it
 *    is reproducible by hand from the amounts and weights.
 * 4. Uncertainty (log scale, "plausible values": the spread of market prices around the consensus),
 *    over the n used sources (an outlier included: its quote is a plausible value too), residuals
 *    r_i = ln(amount_i / consensus):
 *      observed D = the v-weighted 68.27th percentile of |r_i|       (0 when n = 1)
 *      expected P^2 = sum(v_i sigma_i^2) / sum(v_i)
 *      u^2 = (NU0 * P^2 + (n - 1) * D^2) / (NU0 + n - 1)
 *    i.e. the observed disagreement of the sources, shrunk towards what the fitted model expects with
 *    NU0 = 3 pseudo-sources (a single source gets exactly its expected sigma). A percentile, not a
 *    variance, so one wild quote widens it little.
 * Count: sources with a weight above 0.
 */
import { Money } from '../lib/money.js';
import { biweight, weightedMedian, weightedQ68 } from './robust.js';

/**
 * Biweight tuning constant, in units of each source's sigma, used by the daily job. The textbook 4.685 (95 %
 * efficiency at the normal) lets a market's habitual premium pull the consensus; cross-market quotes are skewed
 * and heavy-tailed. Chosen out of sample: the walk-forward backtest (docs/valuation.md section 8,
 * `quotegate backtest --walk-forward`) picks among 1.5, 2, 3 and 4.685 on each day by the earlier days' errors
 * only, and chose 1.5 on every day it could choose (2026-07-13, 14 and 16 of the bundled data).
 */
export const BIWEIGHT_C = 1.5;
/**
 * The constant before any day was scored (the method's first guess, set before the backtest existed). The
 * walk-forward's first day, which has no earlier day to choose from, trains with it.
 */
export const BIWEIGHT_C_PRIOR = 2;
/** Markets with fully known fees needed before sources with an unknown fee are left out. */
export const MIN_KNOWN_FEE_MARKETS = 2;
/** Prior pseudo-sources in the uncertainty (shrinkage of the observed dispersion towards the model). */
export const NU0 = 3;
/**
 * Decimal places of published amounts (CNY). 6, not 4 (before 2026-11-25): at 4 the rounding alone (up to
 * 0.00005 CNY, 0.1 % of a 0.05 CNY item) made a one-market side's consensus score worse than that market's own
 * previous close in the backtest (docs/valuation.md section 8).
 */
export const AMOUNT_DP = 6;

/** One source of a side, on the common scale. */
export interface Source {
  market: string;
  provider: string;
  /** Cash in CNY (ask: cost to buy, fees included; bid: received after fees). */
  amount: Money;
  /** Standard uncertainty of this source, log scale. */
  sigma: number;
  /** True when every fee on the source's path is known (no null slot). */
  feesKnown: boolean;
}

/** What happened to a source in the consensus. */
export interface SourceOutcome {
  source: Source;
  /** Final weight (0 = did not contribute), 6 significant digits. */
  weight: Money;
  /** ln(amount / consensus). */
  residual: number;
  /** Why a source did not contribute, when it did not. */
  reason: 'unknown_fee' | 'outlier' | null;
}

/** The consensus of one side. */
export interface SideConsensus {
  amount: Money;
  /** Log-scale standard uncertainty (>= 0). */
  uncertainty: number;
  /** Sources with a weight above 0. */
  count: number;
  outcomes: SourceOutcome[];
}

const ln = (x: Money) => Math.log(x.toNumber());

function weightedMean(amounts: Money[], weights: Money[]): Money {
  let num = new Money(0);
  let den = new Money(0);
  for (let i = 0; i < amounts.length; i++) {
    num = num.plus(amounts[i]!.times(weights[i]!));
    den = den.plus(weights[i]!);
  }
  return num.div(den);
}

/**
 * The consensus of one side's sources, or null when no source is usable (none, or none with a positive
 * amount). Sources with an amount <= 0 (fees larger than the price) are ignored. `c` is the biweight
 * constant (default BIWEIGHT_C; the walk-forward backtest tries others).
 */
export function consensus(all: readonly Source[], c: number = BIWEIGHT_C): SideConsensus | null {
  const positive = all.filter((s) => s.amount.gt(0) && Number.isFinite(s.sigma) && s.sigma > 0);
  if (positive.length === 0) return null;
  const knownMarkets = new Set(positive.filter((s) => s.feesKnown).map((s) => s.market));
  const dropUnknown = knownMarkets.size >= MIN_KNOWN_FEE_MARKETS;
  const used = dropUnknown ? positive.filter((s) => s.feesKnown) : positive;

  const floats = used.map((s) => s.amount.toNumber());
  const y = floats.map((a) => Math.log(a)); // = ln(s.amount)
  const v = used.map((s) => 1 / (s.sigma * s.sigma));
  const weightsAt = (mu: number) => used.map((s, i) => v[i]! * biweight((y[i]! - mu) / (c * s.sigma)));
  let mu = weightedMedian(y, v);
  let w = weightsAt(mu);
  for (let iter = 0; iter < 100; iter++) {
    const total = w.reduce((a, b) => a + b, 0);
    if (total === 0) break;
    const next = Math.log(floats.reduce((acc, a, i) => acc + a * w[i]!, 0) / total);
    const done = Math.abs(next - mu) < 1e-13;
    mu = next;
    w = weightsAt(mu);
    if (done) break;
  }
  if (w.every((x) => x === 0)) w = v; // every source beyond C sigma: plain precision weights
  const weights = w.map((x) => new Money(x).toSignificantDigits(6));
  const amount = weightedMean(
    used.map((s) => s.amount),
    weights,
  ).toDecimalPlaces(AMOUNT_DP);
  const center = ln(amount);
  const r = y.map((yi) => yi - center);
  // Observed dispersion: the v-weighted 68.27th percentile of |r| over every used source (rejected ones
  // included: their quotes are plausible values too), shrunk towards the model's expectation.
  const n = used.length;
  const observed = n > 1 ? weightedQ68(r.map(Math.abs), v) : 0;
  const vSum = v.reduce((a, b) => a + b, 0);
  const expected2 = v.reduce((a, vi, i) => a + (vi / vSum) * used[i]!.sigma ** 2, 0);
  const u2 = (NU0 * expected2 + (n - 1) * observed ** 2) / (NU0 + n - 1);

  const outcomes: SourceOutcome[] = positive.map((s) => {
    const i = used.indexOf(s);
    if (i < 0) return { source: s, weight: new Money(0), residual: ln(s.amount) - center, reason: 'unknown_fee' as const };
    return { source: s, weight: weights[i]!, residual: r[i]!, reason: weights[i]!.isZero() ? ('outlier' as const) : null };
  });
  return { amount, uncertainty: Math.sqrt(u2), count: weights.filter((x) => x.gt(0)).length, outcomes };
}
