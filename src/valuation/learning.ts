/**
 * What a valuation day learns from the scored days before it (issue: a valuation that earns trust, point 3;
 * docs/valuation.md section 11). Pure: the scored days come in as arguments.
 *
 * Each scored day D (valuation/accuracy.ts, the backtest) yields a `DayLearning`:
 * - calibration: per segment, the 68.27th percentile of error / raw uncertainty over the day's targets
 *   (`q`, with the count `n`). Segments: `one_sided` and `two_sided` (the item's uncertainty against its
 *   targets), `ask` and `bid` (the side's own uncertainty against that side's targets). A raw uncertainty
 *   multiplied by q would have put exactly 68.27 % of that day's targets inside `amount x e^(+-u)`.
 * - markets: per `MARKET/side`, how well the market's previous close (its latest close in the window, the
 *   one the valuation used) predicted the day's consensus target, the per-item median of the day's closes of
 *   that side (cash scale): `q` = the 68.27th percentile of |ln(target / previous close)| over the items, `n`
 *   the items.
 *
 * A valuation of day D then uses `learnFrom` of the scored days in [D - LEARNING_WINDOW_DAYS, D - 1] (never D
 * itself: walk-forward by construction):
 * - calibration factor per segment: the n-weighted mean of the days' q, when they hold at least
 *   MIN_CALIBRATION_TARGETS targets (else 1), clamped to [FACTOR_MIN, FACTOR_MAX]; published uncertainty =
 *   raw x factor (item.ts);
 * - market accuracy per `MARKET/side`: the n-weighted mean of the days' q with at least
 *   MIN_MARKET_ITEMS items (else none). A source's market term becomes sqrt((sigma_dispersion^2 +
 *   accuracy^2) / 2) (`marketTerm`): a market that predicted the consensus target poorly over the last
 *   weeks gets a larger sigma and so a smaller weight (1 / sigma^2); one that predicted it well, a larger one.
 */
import { q68 } from './robust.js';

/** Days of scored history a valuation learns from (about four weeks). */
export const LEARNING_WINDOW_DAYS = 28;
/** Targets a calibration segment needs over the window before its factor leaves 1. */
export const MIN_CALIBRATION_TARGETS = 200;
/** Items a market-side needs over the window before its measured accuracy is used. */
export const MIN_MARKET_ITEMS = 30;
/** Bounds of a calibration factor (a factor outside means the model is broken, not miscalibrated). */
export const FACTOR_MIN = 0.01;
export const FACTOR_MAX = 10;

/** The calibration segments: the item's uncertainty by kind of item, and each side's own uncertainty. */
export const CALIBRATION_SEGMENTS = ['one_sided', 'two_sided', 'ask', 'bid'] as const;
export type CalibrationSegment = (typeof CALIBRATION_SEGMENTS)[number];

/** One figure learned on one day: a 68.27th percentile `q` over `n` values. */
export interface Learned68 {
  q: number;
  n: number;
}

/** What one scored day yields (JSON-serializable: stored in valuation_learning.stats). */
export interface DayLearning {
  /** The scored valuation day (YYYY-MM-DD). */
  date: string;
  calibration: Partial<Record<CalibrationSegment, Learned68>>;
  /** `MARKET/side` -> accuracy of its previous close against the day's consensus target. */
  markets: Record<string, Learned68>;
}

/** What a valuation day uses (JSON-serializable: recorded in valuation_run.stats.learned). */
export interface Learned {
  /** Multipliers of the raw uncertainties (1 = uncalibrated). */
  factors: Record<CalibrationSegment, number>;
  /** `MARKET/side` -> measured accuracy (log scale, a 68.27th percentile) and the items behind it. */
  markets: Record<string, { accuracy: number; n: number }>;
  /** The scored days it was learned from, oldest first. */
  days: string[];
}

/** Nothing learned: factors 1, no market accuracy (the first day, or a backtest of the raw method). */
export const NOTHING_LEARNED: Learned = Object.freeze({ factors: { one_sided: 1, two_sided: 1, ask: 1, bid: 1 }, markets: {}, days: [] });

const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

/** The n-weighted mean of `figures`' q, or null when their n sum to less than `minN`. */
function pooled(figures: readonly (Learned68 | undefined)[], minN: number): { q: number; n: number } | null {
  let n = 0;
  let s = 0;
  for (const f of figures) {
    if (!f || !(f.n > 0) || !Number.isFinite(f.q)) continue;
    n += f.n;
    s += f.q * f.n;
  }
  return n >= minN && n > 0 ? { q: s / n, n } : null;
}

/** What the scored `days` (those of the learning window before the valued day) teach; see the module doc. */
export function learnFrom(days: readonly DayLearning[]): Learned {
  const sorted = [...days].sort((a, b) => (a.date < b.date ? -1 : 1));
  const factors = { ...NOTHING_LEARNED.factors };
  for (const seg of CALIBRATION_SEGMENTS) {
    const p = pooled(
      sorted.map((d) => d.calibration[seg]),
      MIN_CALIBRATION_TARGETS,
    );
    if (p) factors[seg] = r6(Math.min(FACTOR_MAX, Math.max(FACTOR_MIN, p.q)));
  }
  const keys = [...new Set(sorted.flatMap((d) => Object.keys(d.markets)))].sort();
  const markets: Learned['markets'] = {};
  for (const key of keys) {
    const p = pooled(
      sorted.map((d) => d.markets[key]),
      MIN_MARKET_ITEMS,
    );
    if (p) markets[key] = { accuracy: r6(p.q), n: p.n };
  }
  return { factors, markets, days: sorted.map((d) => d.date) };
}

/**
 * A source's market term (log sd): its market's fitted dispersion, blended with the market's measured
 * accuracy when there is one (quadratic mean; see the module doc). `accuracy` undefined: the dispersion alone.
 */
export function marketTerm(dispersion: number, accuracy: number | undefined): number {
  return accuracy === undefined ? dispersion : Math.sqrt((dispersion * dispersion + accuracy * accuracy) / 2);
}

/** Accumulates one day's learning (ratios per segment, errors per market), then summarizes it. */
export class DayLearner {
  private readonly ratios = new Map<CalibrationSegment, number[]>();
  private readonly errors = new Map<string, number[]>();

  constructor(private readonly date: string) {}

  /** One target's |error| against a raw uncertainty of `segment` (ignored unless the uncertainty is positive). */
  addRatio(segment: CalibrationSegment, error: number, rawUncertainty: number): void {
    if (!(rawUncertainty > 0) || !Number.isFinite(error)) return;
    let list = this.ratios.get(segment);
    if (!list) this.ratios.set(segment, (list = []));
    list.push(error / rawUncertainty);
  }

  /** One item's |ln(consensus target / previous close)| for `MARKET/side`. */
  addMarketError(key: string, error: number): void {
    if (!Number.isFinite(error)) return;
    let list = this.errors.get(key);
    if (!list) this.errors.set(key, (list = []));
    list.push(error);
  }

  /** The day's learning. */
  result(): DayLearning {
    const calibration: DayLearning['calibration'] = {};
    for (const seg of CALIBRATION_SEGMENTS) {
      const xs = this.ratios.get(seg);
      if (xs && xs.length > 0) calibration[seg] = { q: r6(q68(xs)), n: xs.length };
    }
    const markets: DayLearning['markets'] = {};
    for (const key of [...this.errors.keys()].sort()) {
      const xs = this.errors.get(key)!;
      markets[key] = { q: r6(q68(xs)), n: xs.length };
    }
    return { date: this.date, calibration, markets };
  }
}
