/**
 * The valuation's published accuracy (issue: a valuation that earns trust, point 1; docs/valuation.md
 * section 10). Once a valuation day D has passed, its CSCP valuations are scored against what the markets
 * showed on D: the backtest's targets (`dayTargets`: every market's close of D on the cash scale, fees
 * included). Per target x of side s and the item's valuation:
 * - error |ln(x / amount_s)| (amount_s: ask_amount for asks, bid_amount for bids of two-sided items);
 * - inside: error <= u (x lies inside amount_s x e^(+-u)), where u is the side's own published uncertainty
 *   (ask_uncertainty, bid_uncertainty) for the `target` segments and the item's published uncertainty for the
 *   others (a row published before side uncertainties existed: the item's for every segment).
 * Figures per segment: `all`; `band` by the item's mid (under_1, 1_10, 10_100, over_100 CNY); `type` (the item
 * type of its market hash name, src/valuation/half-spread.ts); `sides` (one_sided, two_sided); `target` (ask,
 * bid). Each gives items, targets, the median and 90th-percentile error and the calibration share (the
 * promise is about 68 %).
 *
 * A target scored against its side's only input (issue 44, point 7): when a side's consensus had one source
 * (ask_quote_count or bid_quote_count 1) and the target is that source's market, the score only measures how much
 * that one market moved in a day, not the consensus (the bundled bids: one market, a median error of 7e-06). Such a
 * target goes to its own segment, `target` / `ask_only_input` or `bid_only_input`, and to no other: `all`, `sides`,
 * `band`, `type` and `target` / `ask`, `bid` hold the targets the consensus is tested on. The source is the side's
 * usable window close (a fee path on the day; for bids, not crossed) whose cash amount is nearest the side's amount:
 * with one source of weight above 0 the amount is that source's own (docs/valuation.md section 4). What a day
 * teaches later valuations (the learning) is unchanged: it still reads every target.
 *
 * What is scored: the valuations the service published for D (`source: published`); for a day before the
 * service published any (the bundled history on first start), the valuations the job would have published,
 * computed now from the closes before D only (`source: recomputed`). A day is scored once; a day without
 * targets, or with neither published valuations nor closes in its window, has no row.
 *
 * Each scored day also yields its learning (valuation/learning.ts `DayLearning`, stored in valuation_learning
 * with the accuracy rows): the ratios error / raw uncertainty per calibration segment (raw = published / the
 * factor the day was valued with, from its valuation_run stats), and each market's previous close (its latest
 * close in the day's window) against the day's consensus target (the per-item median of the day's closes of a
 * side). Later valuations calibrate and weigh with it.
 */
import { Decimal } from 'decimal.js';
import type { Database } from '../db/client.js';
import { toMoney, type Money } from '../lib/money.js';
import { addDays, dayRange, formatDate } from '../lib/time.js';
import { itemType } from '../search/item-type.js';
import type { CloseQuote } from './item.js';
import { DayLearner, NOTHING_LEARNED, type DayLearning, type Learned } from './learning.js';
import { median } from './robust.js';
import { dayTargets, learnCalibration, learnMarkets } from './day-targets.js';
import type { FeeBook } from './daily.js';
import { computeValuations, loadFeeBook, parseDate, windowCloses, WINDOW_DAYS } from './daily.js';

/** Item ids per page while scoring a day (its targets and window closes are read a page at a time). */
const SCORE_PAGE_IDS = 2000;

/** The segment kinds of the accuracy series, in the order they are served. */
const ACCURACY_SEGMENTS = ['all', 'target', 'sides', 'band', 'type'] as const;
export type AccuracySegmentKind = (typeof ACCURACY_SEGMENTS)[number];

/** Price bands by the item's mid in CNY (lower bound inclusive), in the order they are served. */
const PRICE_BANDS = [
  { value: 'under_1', below: new Decimal(1) },
  { value: '1_10', below: new Decimal(10) },
  { value: '10_100', below: new Decimal(100) },
  { value: 'over_100', below: null },
] as const;

/** The longest range one accuracy read may span, in days. */
export const MAX_ACCURACY_SPAN_DAYS = 366;

/** One segment's figures on one day. Errors are natural-log ratios; calibration a share of targets (0-1). */
export interface AccuracySegment {
  segment: AccuracySegmentKind;
  value: string;
  /** Items with at least one target in the segment. */
  items: number;
  targets: number;
  medianError: number;
  p90Error: number;
  /** Share of targets inside valuation x e^(+-uncertainty). */
  calibration: number;
}

/** One scored day. */
export interface AccuracyDay {
  /** The valuation day (UTC, YYYY-MM-DD). */
  date: string;
  source: 'published' | 'recomputed';
  segments: AccuracySegment[];
}

/** A scored day with what it teaches later valuations. */
export interface ScoredDay extends AccuracyDay {
  learning: DayLearning;
}

/** What one item's valuation of the day says, whichever way it was obtained. */
export interface DayValuation {
  itemId: number;
  name: string;
  mid: Money;
  ask: Money;
  bid: Money | null;
  /** Sources of each side with a weight above 0 (valuation ask_quote_count, bid_quote_count). */
  askQuoteCount: number;
  bidQuoteCount: number;
  /** Published uncertainties: the item's, and each side's (null: not published, the item's is used). */
  uncertainty: number;
  askUncertainty: number | null;
  bidUncertainty: number | null;
  /** Before calibration. */
  raw: { uncertainty: number; ask: number; bid: number | null };
  twoSided: boolean;
}

const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

/** The q-quantile of sorted `xs` by linear interpolation between closest ranks (q in [0, 1]); NaN when empty. */
function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo);
}

function bandOf(mid: Money): string {
  for (const b of PRICE_BANDS) if (b.below === null || mid.lt(b.below)) return b.value;
  return PRICE_BANDS[PRICE_BANDS.length - 1]!.value;
}

/**
 * The valuations published for `day`, or none, with their raw uncertainties: published / the factor the day was
 * valued with (its valuation_run stats `learned.factors`; 1 when the run recorded none).
 */
async function publishedValuations(db: Pick<Database, 'query'>, day: string): Promise<DayValuation[]> {
  const [run] = await db.query<{ factors: Partial<Learned['factors']> | null }>(`SELECT stats->'learned'->'factors' AS factors FROM valuation_run WHERE valuation_date = $1::date`, [day]);
  const k = { ...NOTHING_LEARNED.factors, ...(run?.factors ?? {}) };
  const rows = await db.query<{ item_id: number; name: string; mid: string; ask: string; bid: string | null; u: number; ua: number | null; ub: number | null; two: boolean; na: number; nb: number }>(
    `SELECT v.item_id, i.market_hash_name AS name, v.mid_amount::text AS mid, v.ask_amount::text AS ask, v.bid_amount::text AS bid,
            v.uncertainty AS u, v.ask_uncertainty AS ua, v.bid_uncertainty AS ub, v.is_two_sided AS two,
            v.ask_quote_count AS na, v.bid_quote_count AS nb
       FROM valuation v JOIN item i ON i.id = v.item_id WHERE v.valuation_date = $1::date`,
    [day],
  );
  return rows.map((r) => {
    const rawU = r.u / (r.two ? k.two_sided : k.one_sided);
    return {
      itemId: r.item_id,
      name: r.name,
      mid: toMoney(r.mid),
      ask: toMoney(r.ask),
      bid: r.bid === null ? null : toMoney(r.bid),
      askQuoteCount: r.na,
      bidQuoteCount: r.nb,
      uncertainty: r.u,
      askUncertainty: r.ua,
      bidUncertainty: r.ub,
      raw: { uncertainty: rawU, ask: r.ua === null ? rawU : r.ua / k.ask, bid: r.ub === null ? (r.bid === null ? null : rawU) : r.ub / k.bid },
      twoSided: r.two,
    };
  });
}

/**
 * The market of the only source of side `side` of valuation `v`, or null when the side had more than one (or
 * none, or no usable window close is left to name it). The source is the side's usable window close (a fee path in
 * `book`; a bid not crossed by its market's ask in the same currency, valueSides in valuation/item.ts) whose cash
 * amount is nearest the side's amount in log terms: with a single source of weight above 0 the consensus amount is
 * that source's cash amount (docs/valuation.md section 4), so the nearest is it.
 */
function onlyInputMarket(
  v: Pick<DayValuation, 'ask' | 'bid' | 'askQuoteCount' | 'bidQuoteCount'>,
  side: 'ask' | 'bid',
  closes: readonly CloseQuote[],
  book: Pick<FeeBook, 'path'>,
): string | null {
  const amount = side === 'ask' ? v.ask : v.bid;
  const count = side === 'ask' ? v.askQuoteCount : v.bidQuoteCount;
  if (count !== 1 || amount === null || !amount.gt(0)) return null;
  const target = Math.log(amount.toNumber());
  let best: { market: string; distance: number } | null = null;
  for (const c of closes) {
    if (c.side !== side) continue;
    if (side === 'bid') {
      const ask = closes.find((a) => a.side === 'ask' && a.market === c.market);
      if (ask && ask.currency === c.currency && c.price.gt(ask.price)) continue; // crossed: not a source
    }
    const p = book.path(c.market, c.side, c.currency);
    if (!p) continue;
    const x = p.a.times(c.price).plus(p.b);
    if (!x.gt(0)) continue;
    const distance = Math.abs(Math.log(x.toNumber()) - target);
    if (best === null || distance < best.distance) best = { market: c.market, distance };
  }
  return best?.market ?? null;
}

/**
 * Scores the valuations of `date` against the closes of that day (see the module doc) and returns the day, or
 * null when nothing can be scored. Stores nothing.
 */
async function scoreValuationDay(db: Pick<Database, 'query'>, date: Date): Promise<ScoredDay | null> {
  const day = formatDate(date);
  let source: AccuracyDay['source'] = 'published';
  let valuations = await publishedValuations(db, day);
  if (valuations.length === 0) {
    source = 'recomputed';
    valuations = (await computeValuations(db, date)).items.map((v) => ({
      itemId: v.itemId,
      name: v.marketHashName,
      mid: v.mid,
      ask: v.askAmount,
      bid: v.bidAmount,
      askQuoteCount: v.askQuoteCount,
      bidQuoteCount: v.bidQuoteCount,
      uncertainty: v.uncertainty,
      askUncertainty: v.askUncertainty,
      bidUncertainty: v.bidUncertainty,
      raw: v.raw,
      twoSided: v.isTwoSided,
    }));
  }
  if (valuations.length === 0) return null;
  const book = await loadFeeBook(db, date);
  const learner = new DayLearner(day);
  // segment -> value -> errors, inside count, items
  const acc = new Map<string, { segment: AccuracySegmentKind; value: string; errors: number[]; inside: number; items: Set<number> }>();
  const add = (segment: AccuracySegmentKind, value: string, itemId: number, error: number, inside: boolean) => {
    const key = `${segment}\u0000${value}`;
    let a = acc.get(key);
    if (!a) acc.set(key, (a = { segment, value, errors: [], inside: 0, items: new Set() }));
    a.errors.push(error);
    if (inside) a.inside += 1;
    a.items.add(itemId);
  };
  // A page of item ids at a time (the day's targets and the window's closes of those items only), so memory holds
  // the errors, not every target object of the catalogue at once.
  valuations.sort((a, b) => a.itemId - b.itemId);
  for (let i = 0; i < valuations.length; ) {
    const lo = valuations[i]!.itemId;
    const hi = lo + SCORE_PAGE_IDS - 1;
    const targets = await dayTargets(db, date, book, { lo, hi });
    const closes = await windowCloses(db, lo, hi, date);
    for (; i < valuations.length && valuations[i]!.itemId <= hi; i++) {
      const v = valuations[i]!;
      const list = targets.get(v.itemId);
      if (!list) continue;
      const band = bandOf(v.mid);
      const type = itemType(v.name);
      const sides = v.twoSided ? 'two_sided' : 'one_sided';
      learnCalibration(learner, v, list);
      // Market learning: the item's latest closes in the window against the day's consensus target.
      const window = closes.get(v.itemId)?.closes;
      if (window) learnMarkets(learner, window, list, book);
      const onlyInput = { ask: onlyInputMarket(v, 'ask', window ?? [], book), bid: onlyInputMarket(v, 'bid', window ?? [], book) };
      for (const t of list) {
        const amount = t.side === 'ask' ? v.ask : v.bid;
        if (amount === null || !amount.gt(0)) continue;
        const error = Math.abs(t.y - Math.log(amount.toNumber()));
        const inside = error <= v.uncertainty;
        const sideU = (t.side === 'ask' ? v.askUncertainty : v.bidUncertainty) ?? v.uncertainty;
        if (onlyInput[t.side] === t.market) {
          // Scored against the side's only input: its own segment, in no other figure (module doc).
          add('target', `${t.side}_only_input`, v.itemId, error, error <= sideU);
          continue;
        }
        add('all', 'all', v.itemId, error, inside);
        add('target', t.side, v.itemId, error, error <= sideU);
        add('sides', sides, v.itemId, error, inside);
        add('band', band, v.itemId, error, inside);
        add('type', type, v.itemId, error, inside);
      }
    }
  }
  if (acc.size === 0) return null;
  const order = (s: { segment: AccuracySegmentKind; value: string }) => {
    const bandIndex = PRICE_BANDS.findIndex((b) => b.value === s.value);
    return [ACCURACY_SEGMENTS.indexOf(s.segment), s.segment === 'band' ? bandIndex : 0, s.value] as const;
  };
  const segments = [...acc.values()]
    .map((a): AccuracySegment => {
      const sorted = a.errors.sort((x, y) => x - y);
      return {
        segment: a.segment,
        value: a.value,
        items: a.items.size,
        targets: sorted.length,
        medianError: r6(median(sorted)),
        p90Error: r6(quantile(sorted, 0.9)),
        calibration: r6(a.inside / sorted.length),
      };
    })
    .sort((x, y) => {
      const [a1, a2, a3] = order(x);
      const [b1, b2, b3] = order(y);
      return a1 - b1 || a2 - b2 || (a3 < b3 ? -1 : a3 > b3 ? 1 : 0);
    });
  return { date: day, source, segments, learning: learner.result() };
}

/**
 * The valuation days that can be scored and are not yet: days before `today` (UTC) with closes, no accuracy
 * rows, and either published valuations or closes in their window. Oldest first.
 */
export async function pendingAccuracyDays(db: Pick<Database, 'query'>, today: Date): Promise<Date[]> {
  const rows = await db.query<{ day: string; published: boolean; windowed: boolean }>(
    `SELECT d.day::text AS day,
            EXISTS (SELECT 1 FROM valuation v WHERE v.valuation_date = d.day) AS published,
            EXISTS (SELECT 1 FROM daily_close w WHERE w.day < d.day AND w.day >= d.day - $2::int) AS windowed
       FROM (SELECT DISTINCT day FROM daily_close WHERE day < $1::date) d
      WHERE NOT EXISTS (SELECT 1 FROM valuation_accuracy a WHERE a.valuation_date = d.day)
      ORDER BY 1`,
    [formatDate(today), WINDOW_DAYS],
  );
  return rows.filter((r) => r.published || r.windowed).map((r) => parseDate(r.day));
}

/** Stores a scored day (its rows and its learning replace any of that day), in one transaction. */
export async function storeAccuracyDay(db: Database, day: ScoredDay, computedAt: Date): Promise<void> {
  const s = day.segments;
  await db.prisma.$transaction([
    db.prisma.$executeRawUnsafe(`DELETE FROM valuation_accuracy WHERE valuation_date = $1::date`, day.date),
    db.prisma.$executeRawUnsafe(
      `INSERT INTO valuation_learning (valuation_date, stats, computed_at) VALUES ($1::date, $2::jsonb, $3::timestamptz)
       ON CONFLICT (valuation_date) DO UPDATE SET stats = EXCLUDED.stats, computed_at = EXCLUDED.computed_at`,
      day.date,
      JSON.stringify(day.learning),
      computedAt,
    ),
    db.prisma.$executeRawUnsafe(
      `INSERT INTO valuation_accuracy (valuation_date, segment, value, source, items, targets, median_error, p90_error, calibration, computed_at)
       SELECT $1::date, t.segment, t.value, $2, t.items, t.targets, t.median_error, t.p90_error, t.calibration, $3::timestamptz
         FROM unnest($4::text[], $5::text[], $6::int[], $7::int[], $8::float8[], $9::float8[], $10::float8[])
           AS t(segment, value, items, targets, median_error, p90_error, calibration)`,
      day.date,
      day.source,
      computedAt,
      s.map((x) => x.segment),
      s.map((x) => x.value),
      s.map((x) => x.items),
      s.map((x) => x.targets),
      s.map((x) => x.medianError),
      s.map((x) => x.p90Error),
      s.map((x) => x.calibration),
    ),
  ]);
}

/**
 * Scores and stores every pending day (`pendingAccuracyDays`) under the `quotegate:valuation-accuracy` lock (one
 * replica at a time; the others skip). Returns the days stored (empty when locked or nothing was pending).
 * `opts.stopped` is asked between days (a stopping service leaves the rest for its next start). Run
 * by the valuation job after each run and at start, so the series fills from the bundled data on first start.
 */
export async function runValuationAccuracy(db: Database, today: Date, opts: { now?: () => Date; stopped?: () => boolean } = {}): Promise<ScoredDay[]> {
  const now = opts.now ?? (() => new Date());
  const r = await db.withLock('quotegate:valuation-accuracy', async () => {
    const stored: ScoredDay[] = [];
    for (const date of await pendingAccuracyDays(db, today)) {
      if (opts.stopped?.()) break; // the service is stopping: the rest waits for the next start
      const day = await scoreValuationDay(db, date);
      if (!day) continue;
      await storeAccuracyDay(db, day, now());
      stored.push(day);
    }
    return stored;
  });
  return r.acquired ? r.result : [];
}

/** Days in the default range of an accuracy read. */
export const DEFAULT_ACCURACY_DAYS = 90;

/**
 * The range of an accuracy read. Without `from` and `to`: the DEFAULT_ACCURACY_DAYS days ending at `lastScored`,
 * the last scored day (issue 44, point 7: the latest figures, wherever they are; the bundled history is months
 * old), or ending yesterday when no day is scored yet. Otherwise `to` defaults to yesterday (the last day that can
 * be scored) and `from` to 89 days before `to`. Throws 422 `validation_failed` when `from` is after `to` or the
 * range spans more than MAX_ACCURACY_SPAN_DAYS days. Days are YYYY-MM-DD, already checked to exist.
 */
export function accuracyRange(from: string | null | undefined, to: string | null | undefined, today: Date, lastScored?: string | null): { from: string; to: string } {
  const yesterday = addDays(formatDate(today), -1);
  const defaultTo = from == null && to == null && lastScored ? lastScored : yesterday;
  return dayRange(from, to, { defaultTo, defaultSpanDays: DEFAULT_ACCURACY_DAYS, maxSpanDays: MAX_ACCURACY_SPAN_DAYS, tooLongHint: `at most ${MAX_ACCURACY_SPAN_DAYS}` });
}

/** The first and last scored valuation days (UTC, YYYY-MM-DD), or null before the first day is scored. */
export async function scoredDayBounds(db: Pick<Database, 'query'>): Promise<{ first: string; last: string } | null> {
  const [row] = await db.query<{ first: string | null; last: string | null }>(
    `SELECT min(valuation_date)::text AS first, max(valuation_date)::text AS last FROM valuation_accuracy`,
  );
  return row?.first && row.last ? { first: row.first, last: row.last } : null;
}

/**
 * The range of a read (`accuracyRange`) and, when it needed them (no `from` and no `to`), the scored days' bounds:
 * one statement more only for the default range.
 */
export async function resolveAccuracyRange(
  db: Pick<Database, 'query'>,
  from: string | null | undefined,
  to: string | null | undefined,
  today: Date,
): Promise<{ from: string; to: string }> {
  const bounds = from == null && to == null ? await scoredDayBounds(db) : null;
  return accuracyRange(from, to, today, bounds?.last);
}

/** The stored accuracy days in [from, to] (UTC days), oldest first, each with its segments in serving order. */
export async function readValuationAccuracy(db: Pick<Database, 'query'>, from: string, to: string): Promise<AccuracyDay[]> {
  const rows = await db.query<{ day: string; segment: AccuracySegmentKind; value: string; source: AccuracyDay['source']; items: number; targets: number; m: number; p: number; c: number }>(
    `SELECT valuation_date::text AS day, segment, value, source, items, targets, median_error AS m, p90_error AS p, calibration AS c
       FROM valuation_accuracy WHERE valuation_date BETWEEN $1::date AND $2::date ORDER BY valuation_date`,
    [from, to],
  );
  const days = new Map<string, AccuracyDay>();
  for (const r of rows) {
    let d = days.get(r.day);
    if (!d) days.set(r.day, (d = { date: r.day, source: r.source, segments: [] }));
    d.segments.push({ segment: r.segment, value: r.value, items: r.items, targets: r.targets, medianError: r.m, p90Error: r.p, calibration: r.c });
  }
  const rank = (s: AccuracySegment) => ACCURACY_SEGMENTS.indexOf(s.segment) * 1000 + (s.segment === 'band' ? PRICE_BANDS.findIndex((b) => b.value === s.value) : 0);
  for (const d of days.values()) d.segments.sort((a, b) => rank(a) - rank(b) || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  return [...days.values()];
}
