/**
 * Backtest of the CSCP valuation on the stored daily closes (`quotegate backtest`, docs/valuation.md).
 *
 * For each day D that has closes and at least one close day in the window D-7 .. D-1, the valuations of
 * D are computed exactly as the job would (computeValuations: only closes before D) and scored against
 * what the markets showed on D: every market's close of day D (listed, with a price), put on the same
 * scale with the same fee path (ask: cash cost CNY, bid: cash received CNY). Per target quote x of side s:
 * - consensus error |ln(x / consensus_s)| (ask_amount for asks, bid_amount for bids of two-sided items);
 * - single-market error |ln(x / prev_M)| for every market M with a previous close on side s (its latest
 *   close in the window: the same close the valuation used), scored on the same targets;
 * - plain median error |ln(x / median of the previous closes on side s)|, unweighted, every market kept;
 * - calibration: x inside consensus_s x e^(+-u), by kind of item with u = the item's published uncertainty
 *   (equivalently the target moved onto the mid scale lies inside mid x e^(+-u)), by target side with u = that
 *   side's published uncertainty (ask_uncertainty, bid_uncertainty).
 * Each day also yields its learning (valuation/learning.ts, the same definitions as the published accuracy:
 * valuation/accuracy.ts), which the walk-forward feeds to the later days.
 * Each competitor is compared with the consensus on exactly the targets it has (paired medians).
 * A second target, the per-item median of the day-D quotes of a side, is reported too.
 */
import type { Database } from '../db/client.js';
import { formatDate } from '../lib/time.js';
import { DayLearner, LEARNING_WINDOW_DAYS, learnFrom, NOTHING_LEARNED, type DayLearning, type Learned } from './learning.js';
import { median } from './robust.js';
import { dayTargets, learnCalibration, learnMarkets } from './day-targets.js';
import { BIWEIGHT_C_PRIOR } from './consensus.js';
import { computeValuations, loadFeeBook, parseDate, WINDOW_DAYS } from './daily.js';

const DAY_MS = 86_400_000;
/** The constant of the walk-forward's first day (it only trains): the prior, not the constant it later chose. */
const BIWEIGHT_C_FIRST_DAY = BIWEIGHT_C_PRIOR;

/** A paired comparison: the competitor's and the consensus's median absolute log error on the same targets. */
export interface Paired {
  n: number;
  mdae: number;
  consensus_mdae: number;
}

/** One day's figures. */
export interface BacktestDay {
  date: string;
  valued_items: number;
  targets: number;
  consensus_mdae: number;
  plain_median_mdae: number;
  calibration: number;
}

/** The whole backtest. */
export interface BacktestResult {
  days: BacktestDay[];
  targets: number;
  /** Consensus median absolute log error over every target. */
  consensus_mdae: number;
  plain_median: Paired;
  /** Per `MARKET/side` previous close as the predictor. */
  markets: Record<string, Paired>;
  /** Share of targets inside consensus x e^(+-u), overall and by kind. */
  calibration: { share: number; n: number; two_sided: number; one_sided: number; ask_targets: number; bid_targets: number };
  /** Target = the per-item median of day D's quotes on a side. */
  day_median_target: { n: number; consensus_mdae: number; plain_median: Paired; markets: Record<string, Paired> };
  /** What each day teaches the later ones (valuation/learning.ts). */
  learnings: DayLearning[];
}

interface Acc {
  cons: number[];
  comp: number[];
}
const acc = (): Acc => ({ cons: [], comp: [] });
const paired = (a: Acc): Paired => ({ n: a.cons.length, mdae: r6(median(a.comp)), consensus_mdae: r6(median(a.cons)) });
const r6 = (x: number) => (Number.isFinite(x) ? Math.round(x * 1e6) / 1e6 : NaN);

/** The days that can be backtested: close days with at least one close day in their window. */
export async function backtestDays(db: Pick<Database, 'query'>): Promise<Date[]> {
  const days = (await db.query<{ day: string }>(`SELECT DISTINCT day::text AS day FROM daily_close ORDER BY 1`)).map((r) => parseDate(r.day));
  return days.filter((d) => days.some((e) => e.getTime() < d.getTime() && e.getTime() >= d.getTime() - WINDOW_DAYS * DAY_MS));
}

/**
 * Runs the backtest over `dates` (default: every backtestable day). Reads only; stores nothing.
 * `opts.biweightC` values each day with another biweight constant and `opts.learned` with what earlier days
 * taught (a value, or one per day: the walk-forward); default C = BIWEIGHT_C and nothing learned (the raw
 * method: uncalibrated uncertainties, weights from the run's own dispersions).
 */
export async function runBacktest(
  db: Pick<Database, 'query'>,
  dates?: Date[],
  onDay?: (d: BacktestDay) => void,
  opts: { biweightC?: number | ((date: Date) => number); learned?: Learned | ((date: Date) => Learned) } = {},
): Promise<BacktestResult> {
  const all: number[] = [];
  const plain = acc();
  const markets = new Map<string, Acc>();
  const cal = { inside: 0, n: 0, two: [0, 0], one: [0, 0], ask: [0, 0], bid: [0, 0] };
  const dm = { cons: [] as number[], plain: acc(), markets: new Map<string, Acc>() };
  const days: BacktestDay[] = [];
  const learnings: DayLearning[] = [];
  for (const date of dates ?? (await backtestDays(db))) {
    const book = await loadFeeBook(db, date); // the schedules in force on the day scored
    const biweightC = typeof opts.biweightC === 'function' ? opts.biweightC(date) : opts.biweightC;
    const learned = (typeof opts.learned === 'function' ? opts.learned(date) : opts.learned) ?? NOTHING_LEARNED;
    const c = await computeValuations(db, date, { keepCloses: true, learned, ...(biweightC === undefined ? {} : { biweightC }) });
    const learner = new DayLearner(formatDate(date));
    const targets = await dayTargets(db, date, book);
    const dayCons: number[] = [];
    const dayPlain: number[] = [];
    let dayIn = 0;
    let dayN = 0;
    for (const v of c.items) {
      const t = targets.get(v.itemId);
      if (!t) continue;
      learnCalibration(learner, { ask: v.askAmount, bid: v.bidAmount, raw: v.raw, twoSided: v.isTwoSided }, t);
      learnMarkets(learner, v.closes ?? [], t, book);
      const prev: Record<'ask' | 'bid', { market: string; y: number }[]> = { ask: [], bid: [] };
      for (const cl of v.closes ?? []) {
        const p = book.path(cl.market, cl.side, cl.currency);
        if (!p) continue;
        const x = p.a.times(cl.price).plus(p.b);
        if (x.gt(0)) prev[cl.side].push({ market: cl.market, y: Math.log(x.toNumber()) });
      }
      for (const side of ['ask', 'bid'] as const) {
        const amount = side === 'ask' ? v.askAmount : v.bidAmount;
        if (amount === null) continue;
        const cons = Math.log(amount.toNumber());
        const med = prev[side].length > 0 ? median(prev[side].map((p) => p.y)) : NaN;
        const ys = t.filter((x) => x.side === side).map((x) => x.y);
        for (const y of ys) {
          const e = Math.abs(y - cons);
          all.push(e);
          dayCons.push(e);
          const inside = e <= v.uncertainty ? 1 : 0;
          cal.inside += inside;
          cal.n += 1;
          dayIn += inside;
          dayN += 1;
          const kind = v.isTwoSided ? cal.two : cal.one;
          kind[0]! += inside;
          kind[1]! += 1;
          const bySide = side === 'ask' ? cal.ask : cal.bid;
          bySide[0]! += e <= ((side === 'ask' ? v.askUncertainty : v.bidUncertainty) ?? v.uncertainty) ? 1 : 0;
          bySide[1]! += 1;
          if (Number.isFinite(med)) {
            plain.cons.push(e);
            plain.comp.push(Math.abs(y - med));
            dayPlain.push(Math.abs(y - med));
          }
          for (const p of prev[side]) {
            const key = `${p.market}/${side}`;
            let a = markets.get(key);
            if (!a) markets.set(key, (a = acc()));
            a.cons.push(e);
            a.comp.push(Math.abs(y - p.y));
          }
        }
        if (ys.length > 0) {
          const target = median(ys);
          const e = Math.abs(target - cons);
          dm.cons.push(e);
          if (Number.isFinite(med)) {
            dm.plain.cons.push(e);
            dm.plain.comp.push(Math.abs(target - med));
          }
          for (const p of prev[side]) {
            const key = `${p.market}/${side}`;
            let a = dm.markets.get(key);
            if (!a) dm.markets.set(key, (a = acc()));
            a.cons.push(e);
            a.comp.push(Math.abs(target - p.y));
          }
        }
      }
    }
    const day: BacktestDay = {
      date: formatDate(date),
      valued_items: c.items.length,
      targets: dayN,
      consensus_mdae: r6(median(dayCons)),
      plain_median_mdae: r6(median(dayPlain)),
      calibration: r6(dayN ? dayIn / dayN : NaN),
    };
    days.push(day);
    learnings.push(learner.result());
    onDay?.(day);
  }
  const share = (x: number[]) => r6(x[1] ? x[0]! / x[1]! : NaN);
  const byMarket = Object.fromEntries([...markets.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, a]) => [k, paired(a)]));
  const dmMarkets = Object.fromEntries([...dm.markets.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, a]) => [k, paired(a)]));
  return {
    days,
    targets: all.length,
    consensus_mdae: r6(median(all)),
    plain_median: paired(plain),
    markets: byMarket,
    calibration: { share: r6(cal.n ? cal.inside / cal.n : NaN), n: cal.n, two_sided: share(cal.two), one_sided: share(cal.one), ask_targets: share(cal.ask), bid_targets: share(cal.bid) },
    day_median_target: { n: dm.cons.length, consensus_mdae: r6(median(dm.cons)), plain_median: paired(dm.plain), markets: dmMarkets },
    learnings,
  };
}

/** The biweight constants the walk-forward chooses from (docs/valuation.md section 8: the sensitivity table). */
export const BIWEIGHT_CANDIDATES = [1.5, 2, 3, 4.685] as const;

/** One day of the walk-forward: the constant chosen on the days before it, and every candidate's error that day. */
export interface WalkForwardDay {
  date: string;
  /** The constant chosen on the earlier days; null for the first day (it only trains). */
  chosen_c: number | null;
  /** Each candidate's median error on this day alone (what later days choose from). */
  by_c: Record<string, number>;
  /** What the earlier days taught this one: calibration factors and the markets with a measured accuracy. */
  learned: { factors: Learned['factors']; markets: Learned['markets']; days: string[] };
}

/** The walk-forward backtest: the constants chosen on earlier days only, the scored days' figures in the backtest's shape. */
export interface WalkForwardResult {
  candidates: number[];
  days: WalkForwardDay[];
  /** The backtest of every day but the first, each valued with the constant and learning from before it. */
  scored: BacktestResult;
}

/**
 * Walk-forward evaluation (issue: a valuation that earns trust, points 2 and 3). Days of `dates` in order; for
 * day D_k:
 * - C is the candidate with the lowest mean of the earlier days' median errors (ties: the smaller C);
 * - the calibration factors and market accuracies are learned (valuation/learning.ts `learnFrom`) from the
 *   earlier days in D_k's learning window, each day's learning taken from its run with its own chosen C and
 *   learning, exactly as the job learns from its published days;
 * - D_k is scored with both. The first day has no earlier day: it only trains (C = BIWEIGHT_C_PRIOR, nothing
 *   learned). So no day is scored with anything chosen or fitted on itself.
 * `opts.marketAccuracy: false` learns the calibration only (the weights stay the run's own dispersions), for the
 * comparison in docs/valuation.md. Reads only; values each day once per candidate plus once scored.
 */
export async function runWalkForward(
  db: Pick<Database, 'query'>,
  dates?: Date[],
  candidates: readonly number[] = BIWEIGHT_CANDIDATES,
  opts: { marketAccuracy?: boolean } = {},
): Promise<WalkForwardResult> {
  const all = dates ?? (await backtestDays(db));
  const days: WalkForwardDay[] = [];
  const chosen = new Map<number, number>();
  const learnedBy = new Map<number, Learned>();
  const learnings: DayLearning[] = [];
  for (const [k, date] of all.entries()) {
    let choice: number | null = null;
    if (k > 0) {
      let best = Infinity;
      for (const c of candidates) {
        const earlier = days.map((d) => d.by_c[String(c)]!).filter(Number.isFinite);
        const mean = earlier.reduce((a, b) => a + b, 0) / earlier.length;
        if (mean < best) {
          best = mean;
          choice = c;
        }
      }
      chosen.set(date.getTime(), choice!);
    }
    const windowStart = formatDate(new Date(date.getTime() - LEARNING_WINDOW_DAYS * DAY_MS));
    let learned = learnFrom(learnings.filter((l) => l.date >= windowStart));
    if (opts.marketAccuracy === false) learned = { ...learned, markets: {} };
    learnedBy.set(date.getTime(), learned);
    const run = choice ?? BIWEIGHT_C_FIRST_DAY;
    const byC: Record<string, number> = {};
    let own: DayLearning | undefined;
    for (const c of new Set([...candidates, run])) {
      const r = await runBacktest(db, [date], undefined, { biweightC: c, learned });
      if (candidates.includes(c)) byC[String(c)] = r.consensus_mdae;
      if (c === run) own = r.learnings[0];
    }
    if (own) learnings.push(own);
    days.push({ date: formatDate(date), chosen_c: choice, by_c: byC, learned: { factors: learned.factors, markets: learned.markets, days: learned.days } });
  }
  const scoredDates = all.slice(1);
  const scored = await runBacktest(db, scoredDates, undefined, { biweightC: (d) => chosen.get(d.getTime())!, learned: (d) => learnedBy.get(d.getTime())! });
  return { candidates: [...candidates], days, scored };
}
