/**
 * Backtest of the CSCP valuation on the price history (`quotegate backtest --history <series>`,
 * docs/valuation.md "Backtest on the price history").
 *
 * The live backtest (backtest.ts) scores the cross-market consensus on the daily closes, which live a few
 * days. The history holds longer series, usually of one market at a time (the bundled Steam daily sales,
 * the Buff163 bi-weekly listing minimum). Here every day D with candles of the chosen series is valued from
 * the history candles of D-7 .. D-1 with the valuation's own pure code, and scored against D's candles:
 *
 * - sources: per item, market and series kind, the latest candle of the window (delisted or without a
 *   price: no source), as a CloseQuote of side `ask` (series ask, sales, listing_minimum) or `bid`; its age
 *   runs from the middle of its day to D 00:00 (a candle of D-1 is half a day old). Series `bid` reads the
 *   ask candles too (a valuation needs an ask); every other series reads only its own kind. Every market
 *   with candles of the kind takes part, so where several markets overlap in time the consensus is the
 *   cross-market one; `market` narrows the read (window and targets) to one market.
 * - the model: a ModelFitter fitted per day on the window's candles of a sample of items (every k-th item
 *   with history, up to SAMPLE_ITEMS), one candle per market, side and day, listed and priced, as the job's
 *   fitSample does; the fee paths in force on D (loadFeeBook(db, D)).
 * - valueSides, and the side's consensus (ask, or bid for series `bid`) with its own uncertainty u.
 * - targets: each market's candle close of D (listed, priced) on the same cash scale (cash CNY = a x close + b
 *   through the market's path of D). Per target, |ln(target / prediction)| of three predictors: the
 *   consensus, the same market's previous close (its latest window candle: the close the valuation used),
 *   the median of the same market's window closes (log cash, the 7-day median). Calibration: target inside
 *   consensus x e^(+-u) (and e^(+-2u)).
 *
 * A day is scored when some item has a candle of the series on it and any candle in its window; the other days
 * with candles are returned as `unscored_days` (e.g. the first day of a series, or every day of a series whose
 * points are further apart than the window).
 *
 * Money stays decimal up to the cash amounts; the errors, u and the model are float statistics.
 * Reads: one pass over the items to find the days, then per chunk of up to CHUNK_DAYS days one pass over the
 * sample (fit) and one over every item (value and score), each in pages of PAGE_IDS items. Memory: one page of
 * candles over a chunk, a fitter per day of the chunk, and the per-target errors kept for the medians.
 */
import type { Database } from '../db/client.js';
import { toMoney } from '../lib/money.js';
import { formatDate } from '../lib/time.js';
import { valueSides, type CloseQuote, type ValuationModel } from './item.js';
import { marketSigma, ModelFitter, type SampleSeries } from './model.js';
import { median, q68 } from './robust.js';
import type { Paired } from './backtest.js';
import { readDayCandles, type HistorySeriesKind, type ItemDayCandle } from '../history/candles.js';
import type { FeePath } from './fee-path.js';
import { loadFeeBook, SAMPLE_ITEMS, WINDOW_DAYS, type FeeBook } from './daily.js';

/** The series a history backtest scores. */
export const HISTORY_BACKTEST_SERIES = ['sales', 'listing_minimum', 'ask', 'bid'] as const;
export type HistoryBacktestSeries = (typeof HISTORY_BACKTEST_SERIES)[number];

export interface HistoryBacktestOptions {
  series: HistoryBacktestSeries;
  /** Only this market's candles (window and targets); default every market with the series. */
  market?: string;
  /** First and last day scored (YYYY-MM-DD, inclusive); default the whole history of the series. */
  from?: string;
  to?: string;
}

/** One scored day. */
export interface HistoryBacktestDay {
  date: string;
  /** Items with a consensus on the scored side from the window. */
  valued_items: number;
  targets: number;
  consensus_mdae: number;
  previous_close_mdae: number;
  median7_mdae: number;
  /** Share of targets inside consensus x e^(+-u). */
  calibration: number;
  /** The day's fitted drift and its pairs; the per-market sigmas fitted (absent: the fallback was used). */
  tau: number;
  tau_pairs: number;
  sigmas: Record<string, number>;
}

/** Figures of a group of targets (a price band, an age). */
export interface HistoryBacktestGroup {
  label: string;
  n: number;
  consensus_mdae: number;
  previous_close_mdae: number;
  median7_mdae: number;
  calibration: number;
}

export interface HistoryBacktestResult {
  series: HistoryBacktestSeries;
  market: string | null;
  /** The consensus side scored. */
  side: 'ask' | 'bid';
  days: HistoryBacktestDay[];
  /** Days of the range with candles of the series where nothing could be scored (no window, no valuation). */
  unscored_days: string[];
  targets: number;
  consensus_mdae: number;
  /** The same market's previous close, paired with the consensus on the same targets. */
  previous_close: Paired;
  /** The median of the same market's window closes, paired likewise. */
  median7: Paired;
  calibration: {
    n: number;
    /** Inside consensus x e^(+-u) (about 68 % intended). */
    share: number;
    /** Inside consensus x e^(+-2u). */
    share_2u: number;
    median_u: number;
    /** The 68.27th percentile of |error| / u: the factor u would need for 68 % coverage. */
    u_factor_68: number;
  };
  /** By the consensus amount: under 1, 1-10, 10-100, over 100 CNY. */
  bands: HistoryBacktestGroup[];
  /** By the age of the market's previous close: 1 day, 2 days, 3-7 days (D minus its day). */
  ages: HistoryBacktestGroup[];
}

const DAY_MS = 86_400_000;
/** Days valued together (one fitter each, one read of a page of candles for all of them). */
const CHUNK_DAYS = 14;
/** Item ids per read. */
const PAGE_IDS = 250;
const BANDS: { label: string; below: number }[] = [
  { label: 'under 1 CNY', below: 1 },
  { label: '1-10 CNY', below: 10 },
  { label: '10-100 CNY', below: 100 },
  { label: 'over 100 CNY', below: Infinity },
];
const AGES: { label: string; upTo: number }[] = [
  { label: '1 day', upTo: 1 },
  { label: '2 days', upTo: 2 },
  { label: '3-7 days', upTo: WINDOW_DAYS },
];

const r6 = (x: number) => (Number.isFinite(x) ? Math.round(x * 1e6) / 1e6 : NaN);
const dayNumber = (d: string) => Date.parse(`${d}T00:00:00Z`) / DAY_MS;
const dateOf = (n: number) => formatDate(new Date(n * DAY_MS));

/** Per-target errors of a group: consensus, previous close and 7-day median (NaN when absent), inside. */
class Errors {
  cons: number[] = [];
  prev: number[] = [];
  med7: number[] = [];
  inside = 0;
  add(e: number, prev: number, med7: number, inside: boolean): void {
    this.cons.push(e);
    this.prev.push(prev);
    this.med7.push(med7);
    if (inside) this.inside += 1;
  }
  group(label: string): HistoryBacktestGroup {
    const n = this.cons.length;
    return {
      label,
      n,
      consensus_mdae: r6(median(this.cons)),
      previous_close_mdae: r6(median(this.prev.filter(Number.isFinite))),
      median7_mdae: r6(median(this.med7.filter(Number.isFinite))),
      calibration: r6(n ? this.inside / n : NaN),
    };
  }
  /** A competitor paired with the consensus on the targets it has. */
  paired(comp: number[]): Paired {
    const keep = comp.map((_c, i) => i).filter((i) => Number.isFinite(comp[i]!));
    return { n: keep.length, mdae: r6(median(keep.map((i) => comp[i]!))), consensus_mdae: r6(median(keep.map((i) => this.cons[i]!))) };
  }
}

/** The side a series kind's candles quote. */
const sideOf = (kind: HistorySeriesKind): 'ask' | 'bid' => (kind === 'bid' ? 'bid' : 'ask');

/** A candle with its day number (days since 1970-01-01) and its last log cash amount with the path it used. */
type Dated = ItemDayCandle & { n: number; path?: FeePath | null; y?: number };

/** ln(a x close + b) of a listed candle through `path` (NaN without a path or a positive cash amount); memoized per path. */
function logCash(c: Dated, path: FeePath | null): number {
  if (c.path !== path || c.y === undefined) {
    const x = path && path.a.times(toMoney(c.close!)).plus(path.b);
    c.path = path;
    c.y = x && x.gt(0) ? Math.log(x.toNumber()) : NaN;
  }
  return c.y;
}

/** The candles of each item, by `market\0kind`, each list in day order. */
function byMarket(candles: readonly ItemDayCandle[]): Map<number, Map<string, Dated[]>> {
  const out = new Map<number, Map<string, Dated[]>>();
  for (const raw of candles) {
    const c: Dated = Object.assign(raw, { n: dayNumber(raw.date) });
    let item = out.get(c.itemId);
    if (!item) out.set(c.itemId, (item = new Map()));
    const k = `${c.market}\u0000${c.series}`;
    let list = item.get(k);
    if (!list) item.set(k, (list = []));
    list.push(c);
  }
  return out;
}

const usable = (c: ItemDayCandle) => !c.delisted && c.close !== null;

/**
 * Runs the backtest on the stored history (reads only; stores nothing). `onDay` sees each scored day as soon
 * as its chunk is done. Throws only on a database error.
 */
export async function runHistoryBacktest(
  db: Pick<Database, 'query'>,
  opts: HistoryBacktestOptions,
  onDay?: (d: HistoryBacktestDay) => void,
): Promise<HistoryBacktestResult> {
  const target = opts.series;
  const kinds: HistorySeriesKind[] = target === 'bid' ? ['ask', 'bid'] : [target];
  const side = sideOf(target);
  const markets = opts.market ? [opts.market] : null;
  const ids = await historyItems(db, kinds, markets);
  const readFrom = opts.from ? dateOf(dayNumber(opts.from) - WINDOW_DAYS) : '0001-01-01';
  const readTo = opts.to ?? '9999-12-31';
  const read = (itemIds: readonly number[], from: string, to: string) => readDayCandles(db, { itemIds, series: kinds, markets, from, to });

  // Pass 0: the days with targets, and those where at least one item also has a candle in the window.
  const targetDays = new Set<number>();
  const windowed = new Set<number>();
  for (let i = 0; i < ids.length; i += PAGE_IDS) {
    for (const lists of byMarket(await read(ids.slice(i, i + PAGE_IDS), readFrom, readTo)).values()) {
      const have = new Set<number>();
      for (const list of lists.values()) for (const c of list) if (usable(c)) have.add(c.n);
      for (const list of lists.values()) {
        if (list[0]!.series !== target) continue;
        for (const c of list) {
          if (!usable(c) || (opts.from && c.date < opts.from) || (opts.to && c.date > opts.to)) continue;
          targetDays.add(c.n);
          for (let k = 1; k <= WINDOW_DAYS; k++) {
            if (have.has(c.n - k)) {
              windowed.add(c.n);
              break;
            }
          }
        }
      }
    }
  }
  const candidates = [...windowed].sort((a, b) => a - b);

  const step = Math.max(1, Math.ceil(ids.length / SAMPLE_ITEMS));
  const sample = ids.filter((_, i) => i % step === 0);
  const all = new Errors();
  const bands = BANDS.map(() => new Errors());
  const ages = AGES.map(() => new Errors());
  const us: number[] = [];
  const ratios: number[] = [];
  let inside2 = 0;
  const days: HistoryBacktestDay[] = [];
  // The fee book of a day (loadFeeBook(db, D)) changes only where a schedule version starts: one book per
  // stretch of days without a new version, so its paths (and the candles' memoized cash) are shared.
  const versions = (await db.query<{ d: string }>(`SELECT DISTINCT valid_from::text AS d FROM fee_schedule_slot`)).map((r) => dayNumber(r.d));
  let held: { day: number; book: FeeBook } | null = null;
  const bookOf = async (d: number): Promise<FeeBook> => {
    const h = held;
    if (h && h.day <= d && !versions.some((v) => v > h.day && v <= d)) return h.book;
    held = { day: d, book: await loadFeeBook(db, new Date(d * DAY_MS)) };
    return held.book;
  };

  for (let start = 0; start < candidates.length; ) {
    let end = start;
    while (end + 1 < candidates.length && candidates[end + 1]! - candidates[start]! < CHUNK_DAYS) end++;
    const chunk = candidates.slice(start, end + 1);
    start = end + 1;
    const first = chunk[0]!;
    const last = chunk[chunk.length - 1]!;
    const books = new Map<number, FeeBook>();
    for (const d of chunk) books.set(d, await bookOf(d));

    // Pass 1: each day's model from its window, on the sample (as fitSample: listed closes only, log cash as floats).
    const fitters = new Map(chunk.map((d) => [d, new ModelFitter()]));
    for (let i = 0; i < sample.length; i += PAGE_IDS) {
      const items = byMarket(await read(sample.slice(i, i + PAGE_IDS), dateOf(first - WINDOW_DAYS), dateOf(last - 1)));
      for (const lists of items.values()) {
        for (const d of chunk) {
          const book = books.get(d)!;
          const series: SampleSeries[] = [];
          for (const list of lists.values()) {
            const s = sideOf(list[0]!.series);
            const closes: SampleSeries['closes'] = [];
            for (const c of list) {
              const n = c.n;
              if (n < d - WINDOW_DAYS || n >= d || !usable(c)) continue;
              const y = logCash(c, book.path(c.market, s, c.currency));
              if (!Number.isNaN(y)) closes.push({ day: n, y });
            }
            if (closes.length > 0) series.push({ market: list[0]!.market, side: s, closes });
          }
          if (series.length > 0) fitters.get(d)!.addItem(series);
        }
      }
    }
    const models = new Map(
      chunk.map((d) => {
        const fitted = fitters.get(d)!.result();
        const book = books.get(d)!;
        const model: ValuationModel = { marketSigma: (m, s) => marketSigma(fitted, m, s), tau: fitted.tau, path: (m, s, c) => book.path(m, s, c) };
        return [d, { fitted, model }] as const;
      }),
    );
    fitters.clear();

    // Pass 2: value every item on each day of the chunk and score against the day's candles.
    const perDay = new Map(chunk.map((d) => [d, { valued: 0, errors: new Errors() }]));
    for (let i = 0; i < ids.length; i += PAGE_IDS) {
      const items = byMarket(await read(ids.slice(i, i + PAGE_IDS), dateOf(first - WINDOW_DAYS), dateOf(last)));
      for (const lists of items.values()) {
        for (const d of chunk) {
          const book = books.get(d)!;
          const closes: CloseQuote[] = [];
          /** Per market of the scored kind: its previous close and its window closes, log cash. */
          const history = new Map<string, { prev: number; age: number; window: number[] }>();
          const targets: Dated[] = [];
          for (const list of lists.values()) {
            const kind = list[0]!.series;
            const s = sideOf(kind);
            let latest: Dated | null = null;
            const window: number[] = [];
            for (const c of list) {
              const n = c.n;
              if (n === d) {
                if (kind === target && usable(c)) targets.push(c);
                continue;
              }
              if (n < d - WINDOW_DAYS || n > d) continue;
              latest = c;
              if (kind === target && usable(c)) {
                const y = logCash(c, book.path(c.market, s, c.currency));
                if (!Number.isNaN(y)) window.push(y);
              }
            }
            if (!latest) continue;
            const age = d - latest.n;
            const listed = usable(latest) && toMoney(latest.close!).gt(0);
            if (listed) closes.push({ market: latest.market, provider: latest.provider, side: s, currency: latest.currency, price: toMoney(latest.close!), ageDays: age - 0.5 });
            if (kind === target) history.set(latest.market, { prev: listed ? logCash(latest, book.path(latest.market, s, latest.currency)) : NaN, age, window });
          }
          if (closes.length === 0) continue;
          const sides = valueSides(closes, models.get(d)!.model);
          const cons = sides && (side === 'ask' ? sides.ask : sides.bid);
          if (!cons) continue;
          const day = perDay.get(d)!;
          day.valued += 1;
          const y0 = Math.log(cons.amount.toNumber());
          const u = cons.uncertainty;
          const amount = cons.amount.toNumber();
          const band = BANDS.findIndex((b) => amount < b.below);
          for (const t of targets) {
            const y = logCash(t, book.path(t.market, side, t.currency));
            if (Number.isNaN(y)) continue;
            const e = Math.abs(y - y0);
            const h = history.get(t.market);
            const prev = h ? Math.abs(y - h.prev) : NaN;
            const med7 = h && h.window.length > 0 ? Math.abs(y - median(h.window)) : NaN;
            const inside = e <= u;
            day.errors.add(e, prev, med7, inside);
            all.add(e, prev, med7, inside);
            bands[band]!.add(e, prev, med7, inside);
            if (h) ages[AGES.findIndex((a) => h.age <= a.upTo)]!.add(e, prev, med7, inside);
            us.push(u);
            ratios.push(u > 0 ? e / u : Infinity);
            if (e <= 2 * u) inside2 += 1;
          }
        }
      }
    }
    for (const d of chunk) {
      const { valued, errors } = perDay.get(d)!;
      if (errors.cons.length === 0) continue;
      const g = errors.group(dateOf(d));
      const { fitted } = models.get(d)!;
      const day: HistoryBacktestDay = {
        date: dateOf(d),
        valued_items: valued,
        targets: g.n,
        consensus_mdae: g.consensus_mdae,
        previous_close_mdae: g.previous_close_mdae,
        median7_mdae: g.median7_mdae,
        calibration: g.calibration,
        tau: fitted.tau,
        tau_pairs: fitted.tauPairs,
        sigmas: Object.fromEntries(Object.entries(fitted.markets).map(([k, v]) => [k, v.sigma])),
      };
      days.push(day);
      onDay?.(day);
    }
  }

  const scored = new Set(days.map((d) => d.date));
  const n = all.cons.length;
  return {
    series: target,
    market: opts.market ?? null,
    side,
    days,
    unscored_days: [...targetDays].sort((a, b) => a - b).map(dateOf).filter((d) => !scored.has(d)),
    targets: n,
    consensus_mdae: r6(median(all.cons)),
    previous_close: all.paired(all.prev),
    median7: all.paired(all.med7),
    calibration: { n, share: r6(n ? all.inside / n : NaN), share_2u: r6(n ? inside2 / n : NaN), median_u: r6(median(us)), u_factor_68: r6(q68(ratios)) },
    bands: BANDS.map((b, i) => bands[i]!.group(b.label)),
    ages: AGES.map((a, i) => ages[i]!.group(a.label)),
  };
}

/** The ids of the items with candles of `kinds` (of `markets`, null: any), ascending. */
async function historyItems(db: Pick<Database, 'query'>, kinds: readonly HistorySeriesKind[], markets: readonly string[] | null): Promise<number[]> {
  const rows = await db.query<{ item_id: number }>(
    `SELECT item_id FROM candle_month WHERE series::text = ANY($1::text[]) AND ($2::text[] IS NULL OR market_code = ANY($2::text[]))
     UNION
     SELECT item_id FROM daily_close WHERE side::text = ANY($1::text[]) AND ($2::text[] IS NULL OR market_code = ANY($2::text[]))
     ORDER BY 1`,
    [[...kinds], markets === null ? null : [...markets]],
  );
  return rows.map((r) => r.item_id);
}
