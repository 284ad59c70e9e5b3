/**
 * The per-run model the consensus weights come from, fitted on the run's own closes (a sample of items):
 *
 * - market dispersion sigma(market, side): for items with at least 3 markets on a side, each market's
 *   latest close (log cash CNY) minus the item's cross-market median on that side; sigma = the 68.27th
 *   percentile of |residual| over the sample (1 sd for normal errors; robust to the wild third, and
 *   right for fat tails and for quotes that often do not move at all). It measures how far that
 *   market's quotes usually sit from the others (noise, staleness and systematic premium together), so
 *   a market that usually disagrees weighs less. Fewer than MIN_RESIDUALS residuals: the side's pooled
 *   value, then both sides pooled, then DEFAULT_SIGMA. Clamped to [SIGMA_FLOOR, 1].
 * - daily drift tau: consecutive closes of the same market and side, (y_later - y_earlier) /
 *   sqrt(days between); tau = the 68.27th percentile of |.|, at least TAU_FLOOR (DEFAULT_TAU with fewer than
 *   MIN_RESIDUALS pairs). A close d days old gets tau^2 * d of extra variance.
 * All numbers here are log-scale statistics (plain floats), never money: the sample's log cash amounts are
 * computed in floating point (valuation/daily.ts), since they only size weights and dispersions.
 */
import { median, q68 } from './robust.js';

/** Residuals a market (or pool) needs before its own dispersion is used. */
const MIN_RESIDUALS = 30;
/** Dispersion used when nothing can be fitted (5 %). */
const DEFAULT_SIGMA = 0.05;
/** Smallest dispersion (quotes 2-decimal rounded, feeds refreshed at different times). */
const SIGMA_FLOOR = 0.01;
/** Daily drift used when nothing can be fitted, and the smallest allowed. */
const DEFAULT_TAU = 0.02;
const TAU_FLOOR = 0.005;

/** One market-side history of a sampled item: closes as (day number, ln cash CNY), oldest first. */
export interface SampleSeries {
  market: string;
  side: 'ask' | 'bid';
  closes: { day: number; y: number }[];
}

/** The fitted model of one run (JSON-serializable: stored in valuation_run.stats). */
export interface FittedModel {
  /** `MARKET/side` -> {sigma, n residuals}; only markets with their own fit. */
  markets: Record<string, { sigma: number; n: number }>;
  /** Pooled per side and over both sides. */
  pooled: { ask: number | null; bid: number | null; all: number | null };
  tau: number;
  tauPairs: number;
  sampleItems: number;
}

const clamp = (x: number) => Math.min(1, Math.max(SIGMA_FLOOR, x));
const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

/**
 * Accumulates sampled items one at a time (only their residuals and drifts are kept, so a sample of
 * thousands of items x 40 markets x 7 days stays small), then fits. The result does not depend on the order the
 * items (or an item's series) are added in: an item's residuals are taken against its own median, and every
 * fitted figure is a percentile of the collected values (q68 sorts them).
 */
export class ModelFitter {
  private readonly residuals = new Map<string, number[]>();
  private readonly bySide: Record<'ask' | 'bid', number[]> = { ask: [], bid: [] };
  /** Day-to-day drifts, in a growable typed array (millions at full scale; off the JS heap). */
  private drifts = new Float64Array(1 << 16);
  private driftCount = 0;
  private items = 0;

  /** Adds one sampled item's market-side series. */
  addItem(series: readonly SampleSeries[]): void {
    this.items += 1;
    for (const side of ['ask', 'bid'] as const) {
      const latest = series.filter((s) => s.side === side && s.closes.length > 0).map((s) => ({ market: s.market, y: s.closes[s.closes.length - 1]!.y }));
      if (latest.length < 3) continue;
      const med = median(latest.map((l) => l.y));
      for (const l of latest) {
        const key = `${l.market}/${side}`;
        let list = this.residuals.get(key);
        if (!list) this.residuals.set(key, (list = []));
        list.push(l.y - med);
        this.bySide[side].push(l.y - med);
      }
    }
    for (const s of series) {
      for (let k = 1; k < s.closes.length; k++) {
        const dt = s.closes[k]!.day - s.closes[k - 1]!.day;
        if (dt <= 0) continue;
        if (this.driftCount === this.drifts.length) {
          const grown = new Float64Array(this.drifts.length * 2);
          grown.set(this.drifts);
          this.drifts = grown;
        }
        this.drifts[this.driftCount++] = (s.closes[k]!.y - s.closes[k - 1]!.y) / Math.sqrt(dt);
      }
    }
  }

  /** The fitted model of everything added. */
  result(): FittedModel {
    const fit = (xs: number[]) => (xs.length >= MIN_RESIDUALS ? r6(clamp(q68(xs))) : null);
    const markets: FittedModel['markets'] = {};
    for (const [key, list] of [...this.residuals.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const s = fit(list);
      if (s !== null) markets[key] = { sigma: s, n: list.length };
    }
    const drifts = this.drifts.subarray(0, this.driftCount);
    const tau = drifts.length >= MIN_RESIDUALS ? r6(Math.max(TAU_FLOOR, q68(drifts))) : DEFAULT_TAU;
    return {
      markets,
      pooled: { ask: fit(this.bySide.ask), bid: fit(this.bySide.bid), all: fit([...this.bySide.ask, ...this.bySide.bid]) },
      tau,
      tauPairs: this.driftCount,
      sampleItems: this.items,
    };
  }
}

/** sigma(market, side) of a fitted model, with the fallbacks of the module rule. */
export function marketSigma(m: FittedModel, market: string, side: 'ask' | 'bid'): number {
  const other = side === 'ask' ? 'bid' : 'ask';
  return m.markets[`${market}/${side}`]?.sigma ?? m.pooled[side] ?? m.markets[`${market}/${other}`]?.sigma ?? m.pooled.all ?? DEFAULT_SIGMA;
}
