/**
 * The valuation of one item from its closes (spec: ValuationOut): both sides' consensus, the mid and
 * its uncertainty. Pure: the fitted model (model.ts) and the fee paths come in as arguments.
 *
 * Sources: for each market and side, its latest close in the window (src/valuation/daily.ts picks
 * it). Rules applied here:
 * - crossed bids: a buy order priced above the same market's sell listing (same close window, compared
 *   in the market's own currency) is excluded (spec: bid_amount);
 * - each source is put on the common scale with its fee path (fee-path.ts) and gets
 *   sigma^2 = sigma_market^2 + tau^2 * age_days + allowance^2 (model dispersion of its market and side,
 *   drift since its close, unknown-fee allowance), all on the log scale;
 * - two-sided (both sides have a consensus): mid = (ask + bid) / 2, rounded half-even to 6 decimals;
 *   uncertainty u = sqrt((n_ask u_ask^2 + n_bid u_bid^2) / (n_ask + n_bid)), the pooled spread of
 *   every contributing source around its side's consensus;
 * - one-sided (no usable bid): mid = ask x e^(-h) with h the typical half-spread of comparable items
 *   (half-spread.ts), u = sqrt(u_ask^2 + s_h^2); bid_amount null, bid count 0.
 * Calibration (learning.ts): the published u is the raw u above times the factor of its kind (one_sided or
 * two_sided), learned on earlier scored days; each side's own uncertainty (the side's consensus u times the
 * `ask` or `bid` factor) is published beside it. Raw figures are kept for the scoring.
 * Credibility is e^(-u) (computed where it is published). Every u is rounded to 6 decimals.
 */
import { Money } from '../lib/money.js';
import { AMOUNT_DP, consensus, type SideConsensus, type Source } from './consensus.js';
import type { FeePath } from './fee-path.js';
import { halfSpreadFactor, type HalfSpread } from './half-spread.js';
import { NOTHING_LEARNED, type CalibrationSegment } from './learning.js';

/** Calibration factors by segment (learning.ts `Learned.factors`). */
export type CalibrationFactors = Readonly<Record<CalibrationSegment, number>>;

/** A market's latest close on one side, as read from daily_close. */
export interface CloseQuote {
  market: string;
  provider: string;
  side: 'ask' | 'bid';
  currency: string;
  price: Money;
  /** Days from the close's confirmation to the valuation time (>= 0). */
  ageDays: number;
}

/** What a run fitted (model.ts) plus the fee paths, as the item valuation needs them. */
export interface ValuationModel {
  /** Dispersion (log sd) of a market's quotes around the cross-market consensus, per side. */
  marketSigma(market: string, side: 'ask' | 'bid'): number;
  /** Daily drift: log sd of a quote's change over one day. */
  tau: number;
  /** The fee path of a market, side and quote currency; null when it cannot be computed. */
  path(market: string, side: 'ask' | 'bid', currency: string): FeePath | null;
  /** The biweight constant C (default BIWEIGHT_C); the walk-forward backtest tries others. */
  biweightC?: number;
}

/** Both sides of an item before the one-sided rule is applied. */
export interface SidesResult {
  ask: SideConsensus;
  bid: SideConsensus | null;
  /** Markets whose bid was excluded as crossed (priced above that market's ask). */
  crossed: string[];
  /** Quotes whose fee path could not be computed (market: reason). */
  unpriced: string[];
}

/** A finished valuation of one item (amounts CNY). */
export interface ItemValuation {
  isTwoSided: boolean;
  mid: Money;
  askAmount: Money;
  bidAmount: Money | null;
  /** Published (calibrated) uncertainty of the mid, log scale. */
  uncertainty: number;
  /** Published (calibrated) uncertainty of ask_amount and bid_amount (null when one-sided), log scale. */
  askUncertainty: number;
  bidUncertainty: number | null;
  /** The uncertainties before calibration (what the scoring learns the factors from). */
  raw: { uncertainty: number; ask: number; bid: number | null };
  askQuoteCount: number;
  bidQuoteCount: number;
  /** The half-spread used (one-sided only). */
  halfSpread: HalfSpread | null;
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/** Sources of one side on the common scale. */
function sideSources(quotes: readonly CloseQuote[], model: ValuationModel, unpriced: string[]): Source[] {
  const out: Source[] = [];
  for (const q of quotes) {
    const path = model.path(q.market, q.side, q.currency);
    if (!path) {
      unpriced.push(`${q.market}/${q.side}`);
      continue;
    }
    const sm = model.marketSigma(q.market, q.side);
    const sigma = Math.sqrt(sm * sm + model.tau * model.tau * Math.max(0, q.ageDays) + path.allowanceSigma ** 2);
    out.push({ market: q.market, provider: q.provider, amount: path.a.times(q.price).plus(path.b), sigma, feesKnown: path.unknown.length === 0 });
  }
  return out;
}

/**
 * Both sides' consensus of an item, or null when no sell listing is usable (no valuation then).
 * `closes`: at most one per market and side.
 */
export function valueSides(closes: readonly CloseQuote[], model: ValuationModel): SidesResult | null {
  const asks = closes.filter((c) => c.side === 'ask');
  const askByMarket = new Map(asks.map((c) => [c.market, c]));
  const crossed: string[] = [];
  const bids = closes.filter((c) => {
    if (c.side !== 'bid') return false;
    const ask = askByMarket.get(c.market);
    if (ask && ask.currency === c.currency && c.price.gt(ask.price)) {
      crossed.push(c.market);
      return false;
    }
    return true;
  });
  const unpriced: string[] = [];
  const ask = consensus(sideSources(asks, model, unpriced), model.biweightC);
  if (!ask) return null;
  const bid = consensus(sideSources(bids, model, unpriced), model.biweightC);
  return { ask, bid, crossed, unpriced };
}

/** The two-sided valuation (requires `sides.bid`); `factors` calibrate the published uncertainties. */
export function twoSided(sides: SidesResult, factors: CalibrationFactors = NOTHING_LEARNED.factors): ItemValuation {
  const { ask, bid } = sides;
  if (!bid) throw new Error('twoSided needs a bid consensus');
  const u2 = (ask.count * ask.uncertainty ** 2 + bid.count * bid.uncertainty ** 2) / (ask.count + bid.count);
  const raw = { uncertainty: round6(Math.sqrt(u2)), ask: round6(ask.uncertainty), bid: round6(bid.uncertainty) };
  return {
    isTwoSided: true,
    mid: ask.amount.plus(bid.amount).div(2).toDecimalPlaces(AMOUNT_DP),
    askAmount: ask.amount,
    bidAmount: bid.amount,
    uncertainty: round6(raw.uncertainty * factors.two_sided),
    askUncertainty: round6(raw.ask * factors.ask),
    bidUncertainty: round6(raw.bid * factors.bid),
    raw,
    askQuoteCount: ask.count,
    bidQuoteCount: bid.count,
    halfSpread: null,
  };
}

/** The one-sided valuation: ask less the typical half-spread `hs` of comparable items; `factors` as twoSided. */
export function oneSided(ask: SideConsensus, hs: HalfSpread, factors: CalibrationFactors = NOTHING_LEARNED.factors): ItemValuation {
  const raw = { uncertainty: round6(Math.sqrt(ask.uncertainty ** 2 + hs.s ** 2)), ask: round6(ask.uncertainty), bid: null };
  return {
    isTwoSided: false,
    mid: ask.amount.times(halfSpreadFactor(hs.h)).toDecimalPlaces(AMOUNT_DP),
    askAmount: ask.amount,
    bidAmount: null,
    uncertainty: round6(raw.uncertainty * factors.one_sided),
    askUncertainty: round6(raw.ask * factors.ask),
    bidUncertainty: null,
    raw,
    askQuoteCount: ask.count,
    bidQuoteCount: 0,
    halfSpread: hs,
  };
}

/** Log half-spread of a two-sided valuation: ln(ask / mid). */
export function logHalfSpread(v: ItemValuation): number {
  return Math.log(v.askAmount.div(v.mid).toNumber());
}
