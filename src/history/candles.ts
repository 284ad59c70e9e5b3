/**
 * Price history (issue: price history; docs/history.md): daily candles per item, market and series, kept
 * in two tiers of PostgreSQL and read as one.
 *
 * - Hot tier, `daily_close`: the ingestion statement that applies an observation also updates the day's
 *   candle (open, high, low, close, observations, last quantity) in the same transaction as the quote.
 * - Cold tier, `candle_month`: one row per (item, market, provider, series, month) whose `data` is the
 *   month's candles in the compact encoding of src/history/candle-codec.ts. `compactHistory` copies every
 *   closed day's candles there (appending a block; a re-compacted day's newer record wins), and the
 *   history importers write whole months of imported series (`listing_minimum`, `sales`).
 *
 * A read takes the cold tier's candles and lets the hot tier's rows of the same day replace them, then
 * picks one provider per (market, series, day) by the quotes' precedence (listed, then the market's own
 * feed, then the latest confirmation, then provider code), then aggregates to weeks (ISO, Monday) or
 * months on read. CSCP valuations are read from `valuation`, which is no longer pruned.
 */
import { Decimal } from 'decimal.js';
import type { Database } from '../db/client.js';
import { decodeMonth, encodeMonth, visitMonth, type StoredCandle } from './candle-codec.js';
import { dayRange, formatDate } from '../lib/time.js';

/** The stored series kinds (database enum `history_series`). */
export type HistorySeriesKind = 'ask' | 'bid' | 'listing_minimum' | 'sales';
/** Candle width on read. */
export type HistoryInterval = 'day' | 'week' | 'month';

/** Longest range a read may span, per interval, in days (the cost and answer-size bound). */
export const MAX_SPAN_DAYS: Record<HistoryInterval, number> = { day: 366, week: 5 * 366, month: 10 * 366 };

/**
 * The range of a history read: `to` defaults to `today` (UTC), `from` to the longest span the interval allows
 * ending at `to`. Throws 422 `validation_failed` (location argument: the REST facade names the query parameter)
 * when `from` is after `to` or the range spans more than MAX_SPAN_DAYS[interval] days. Days are YYYY-MM-DD,
 * already checked to exist.
 */
export function historyRange(from: string | null | undefined, to: string | null | undefined, interval: HistoryInterval, today: Date): { from: string; to: string } {
  const max = MAX_SPAN_DAYS[interval];
  return dayRange(from, to, { defaultTo: formatDate(today), defaultSpanDays: max, maxSpanDays: max, tooLongHint: `interval ${interval} allows at most ${max} (use a wider interval or a shorter range)` });
}

/** One candle as served: amounts are exact decimal strings in the series' currency. */
export interface Candle {
  /** First day of the candle (UTC, YYYY-MM-DD): the day, the ISO week's Monday, or the month's first day. */
  date: string;
  open: string | null;
  high: string | null;
  low: string | null;
  close: string | null;
  /** Observations applied in the candle's days (live quotes; 1 per imported point). */
  observations: number;
  /** Last quantity (listings) of the candle; null for `sales`. */
  quantity: number | null;
  /** Units sold in the candle's days (`sales` only, else null). */
  volume: number | null;
  /** The quote ended the candle delisted. */
  delisted: boolean;
  /** Days of the candle with data. */
  days: number;
}

/** One market's series over the range. */
export interface HistorySeriesOut {
  marketCode: string;
  series: HistorySeriesKind;
  /** ask or bid for quote candles and the listing minimum (an ask statistic); null for sales. */
  side: 'ask' | 'bid' | null;
  currencyCode: string;
  candles: Candle[];
}

/** One CSCP valuation of the series (CNY; `band_low`/`band_high` = mid x e^(-/+u), 4 decimals). */
export interface CscpPoint {
  date: string;
  mid: string;
  askAmount: string;
  bidAmount: string | null;
  uncertainty: number;
  bandLow: string;
  bandHigh: string;
  isTwoSided: boolean;
}

/** What a history read returns. */
export interface ItemHistory {
  appId: string;
  marketHashName: string;
  from: string;
  to: string;
  interval: HistoryInterval;
  series: HistorySeriesOut[];
  cscp: CscpPoint[];
}

/** What a history read asks for. `markets` null: every market. `series` null: every kind. Days are UTC YYYY-MM-DD. */
export interface HistoryQuery {
  itemId: number;
  markets: readonly string[] | null;
  series: readonly HistorySeriesKind[] | null;
  from: string;
  to: string;
  interval: HistoryInterval;
}

const DAY_MS = 86_400_000;

function dayMs(d: string): number {
  return Date.parse(`${d}T00:00:00Z`);
}

function monthStart(d: string): string {
  return `${d.slice(0, 7)}-01`;
}


interface ColdRow {
  market_code: string;
  provider_code: string;
  series: HistorySeriesKind;
  month: string;
  currency_code: string;
  data: Uint8Array;
}

interface HotRow {
  market_code: string;
  provider_code: string;
  side: 'ask' | 'bid';
  day: string;
  currency_code: string;
  price: string | null;
  open_price: string | null;
  high_price: string | null;
  low_price: string | null;
  observations: number;
  quantity: number | null;
  delisted: boolean;
  confirmed_at: Date;
}

/** The stored candle of a `daily_close` row: its day of the month; open, high and low default to the close. */
function candleOfClose(r: HotRow): StoredCandle {
  const close = trimDecimal(r.price);
  return {
    day: Number(r.day.slice(8)),
    open: trimDecimal(r.open_price) ?? close,
    high: trimDecimal(r.high_price) ?? close,
    low: trimDecimal(r.low_price) ?? close,
    close,
    observations: r.observations,
    quantity: r.quantity,
    delisted: r.delisted,
  };
}

/** Trims a numeric's text (`87.5000000000` -> `87.5`) without floats. */
function trimDecimal(s: string | null): string | null {
  if (s === null) return null;
  return s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}

/**
 * The daily candles of one item in [from, to], per (market, series), one provider per day by precedence.
 * Two queries (cold months, hot days). Throws only on a database error.
 */
async function dailyCandles(db: Pick<Database, 'query'>, q: HistoryQuery): Promise<Map<string, DaySeries>> {
  const kinds = q.series ?? ['ask', 'bid', 'listing_minimum', 'sales'];
  const [cold, hot] = await Promise.all([
    db.query<ColdRow>(
      `SELECT market_code, provider_code, series::text AS series, month::text AS month, currency_code, data
         FROM candle_month
        WHERE item_id = $1 AND month BETWEEN $2::date AND $3::date AND series::text = ANY($4::text[])
          AND ($5::text[] IS NULL OR market_code = ANY($5::text[]))`,
      [q.itemId, monthStart(q.from), monthStart(q.to), kinds, q.markets],
    ),
    kinds.includes('ask') || kinds.includes('bid')
      ? db.query<HotRow>(
          `SELECT market_code, provider_code, side::text AS side, day::text AS day, currency_code, price::text AS price,
                  open_price::text AS open_price, high_price::text AS high_price, low_price::text AS low_price, observations,
                  quantity, delisted, confirmed_at
             FROM daily_close
            WHERE item_id = $1 AND day BETWEEN $2::date AND $3::date AND side::text = ANY($4::text[])
              AND ($5::text[] IS NULL OR market_code = ANY($5::text[]))`,
          [q.itemId, q.from, q.to, kinds, q.markets],
        )
      : Promise.resolve([] as HotRow[]),
  ]);
  // Days are indexed from `from` (0 = from): (market, series) -> provider -> index -> candle. A hot row
  // replaces the cold candle of its day. Arrays, not maps keyed by date: no key strings and no sort; and each
  // day's candle is built once, already in the shape served at interval day (docs/history.md, read path).
  const fromMs = dayMs(q.from);
  const span = (dayMs(q.to) - fromMs) / DAY_MS + 1;
  const dates: string[] = new Array(span);
  for (let i = 0; i < span; i++) dates[i] = formatDate(new Date(fromMs + i * DAY_MS));
  const groups = new Map<string, ProviderDays[]>();
  const daysOf = (market: string, series: string, provider: string): ProviderDays => {
    const key = `${market}\u0000${series}`;
    let providers = groups.get(key);
    if (!providers) groups.set(key, (providers = []));
    let days = providers.find((p) => p.provider === provider);
    if (!days) providers.push((days = { provider, candles: new Array(span), currency: new Array(span), confirmed: null }));
    return days;
  };
  for (const r of cold) {
    const days = daysOf(r.market_code, r.series, r.provider_code);
    const base = (dayMs(r.month) - fromMs) / DAY_MS - 1; // index of day 1 is base + 1
    const sales = r.series === 'sales';
    visitMonth(r.data, (day, open, high, low, close, observations, quantity, delisted) => {
      const i = base + day;
      if (i < 0 || i >= span) return;
      days.candles[i] = dayCandle(dates[i]!, open, high, low, close, observations, quantity, delisted, sales);
      days.currency[i] = r.currency_code;
      if (days.confirmed !== null) days.confirmed[i] = 0;
    });
  }
  for (const r of hot) {
    const i = (dayMs(r.day) - fromMs) / DAY_MS;
    if (i < 0 || i >= span) continue;
    const days = daysOf(r.market_code, r.side, r.provider_code);
    const c = candleOfClose(r);
    days.candles[i] = dayCandle(dates[i]!, c.open, c.high, c.low, c.close, c.observations, c.quantity, c.delisted, false);
    days.currency[i] = r.currency_code;
    (days.confirmed ??= new Array<number>(span).fill(0))[i] = r.confirmed_at.getTime();
  }
  // One provider per (market, series, day): the quotes' precedence.
  const out = new Map<string, DaySeries>();
  for (const [key, providers] of groups) {
    const market = key.slice(0, key.indexOf('\u0000'));
    const series: DaySeries = { candles: [], currency: '' };
    for (let i = 0; i < span; i++) {
      let best: ProviderDays | undefined;
      for (const p of providers) {
        if (p.candles[i] !== undefined && (best === undefined || precedesAt(p, best, i, market))) best = p;
      }
      if (best === undefined) continue;
      series.candles.push(best.candles[i]!);
      series.currency = best.currency[i]!;
    }
    out.set(key, series);
  }
  return out;
}

/** One day's candle as served: a sales day's units are its volume; a listing day's its last quantity. */
function dayCandle(
  date: string,
  open: string | null,
  high: string | null,
  low: string | null,
  close: string | null,
  observations: number,
  quantity: number | null,
  delisted: boolean,
  sales: boolean,
): Candle {
  return { date, open, high, low, close, observations, quantity: sales ? null : quantity, volume: sales ? (quantity ?? 0) : null, delisted, days: 1 };
}

/** One provider's days of one (market, series) in a read, indexed from the range's first day. */
interface ProviderDays {
  provider: string;
  candles: (Candle | undefined)[];
  currency: (string | undefined)[];
  /** Epoch ms of each hot day's last confirmation (0 for compacted days); null while the provider has no hot day. */
  confirmed: number[] | null;
}

/** The chosen daily candles of one (market, series), in day order, with the last day's currency. */
interface DaySeries {
  candles: Candle[];
  currency: string;
}

/** `precedes` for day `i` of two providers' days. */
function precedesAt(a: ProviderDays, b: ProviderDays, i: number, market: string): boolean {
  const ac = a.candles[i]!;
  const bc = b.candles[i]!;
  return precedes(
    { date: '', delisted: ac.delisted, provider: a.provider, confirmed: a.confirmed?.[i] ?? 0 },
    { date: '', delisted: bc.delisted, provider: b.provider, confirmed: b.confirmed?.[i] ?? 0 },
    market,
  );
}

/** What the provider precedence reads of a candle. */
interface Ranked {
  date: string;
  delisted: boolean;
  provider: string;
  /** Epoch ms of the last confirmation (0 for a compacted day). */
  confirmed: number;
}

/**
 * One candle per day of one (item, market, series) from its providers' candles (provider -> date -> candle),
 * chosen by the quotes' precedence (`precedes`), in day order.
 */
function onePerDay<T extends Ranked>(providers: Map<string, Map<string, T>>, market: string): T[] {
  let list: T[];
  if (providers.size === 1) list = [...providers.values().next().value!.values()];
  else {
    const chosen = new Map<string, T>();
    for (const days of providers.values()) {
      for (const c of days.values()) {
        const prev = chosen.get(c.date);
        if (!prev || precedes(c, prev, market)) chosen.set(c.date, c);
      }
    }
    list = [...chosen.values()];
  }
  return list.sort(byDate);
}

/** Orders by `date` (YYYY-MM-DD strings compare as days). */
function byDate(a: { date: string }, b: { date: string }): number {
  return a.date < b.date ? -1 : a.date > b.date ? 1 : 0;
}

/** The quotes' provider precedence (src/quotes/quotes.ts): listed, direct, latest confirmation, provider code. */
function precedes(a: Ranked, b: Ranked, market: string): boolean {
  if (a.delisted !== b.delisted) return !a.delisted;
  const ad = a.provider === market;
  const bd = b.provider === market;
  if (ad !== bd) return ad;
  if (a.confirmed !== b.confirmed) return a.confirmed > b.confirmed;
  return a.provider < b.provider;
}

/** The first day of `date`'s bucket: itself, its ISO week's Monday, or its month's first day. */
export function bucketOf(date: string, interval: HistoryInterval): string {
  if (interval === 'day') return date;
  if (interval === 'month') return monthStart(date);
  const t = dayMs(date);
  const weekday = (new Date(t).getUTCDay() + 6) % 7; // Monday 0
  return formatDate(new Date(t - weekday * DAY_MS));
}

/**
 * Compares two plain decimal strings (`-?digits(.digits)?`, no exponent, as the codec and PostgreSQL's numeric
 * text write them) exactly, without parsing: -1, 0 or 1. Equal values with different trailing zeros compare
 * equal (`1.50` = `1.5`); leading zeros in the integer part are not expected.
 */
export function compareDecimal(a: string, b: string): number {
  const an = a.charCodeAt(0) === 45;
  const bn = b.charCodeAt(0) === 45;
  if (an !== bn) {
    // -0 and 0 are the only equal pair of opposite signs.
    if (isZero(a) && isZero(b)) return 0;
    return an ? -1 : 1;
  }
  const m = compareMagnitude(an ? a.slice(1) : a, bn ? b.slice(1) : b);
  return an && m !== 0 ? -m : m;
}

function isZero(s: string): boolean {
  return /^-?0*(\.0*)?$/.test(s);
}

/** Compares two unsigned plain decimals exactly. */
function compareMagnitude(a: string, b: string): number {
  const ad = a.indexOf('.');
  const bd = b.indexOf('.');
  const ai = ad < 0 ? a : a.slice(0, ad);
  const bi = bd < 0 ? b : b.slice(0, bd);
  const aw = ai.length > 1 && ai.charCodeAt(0) === 48 ? ai.replace(/^0+(?=\d)/, '') : ai;
  const bw = bi.length > 1 && bi.charCodeAt(0) === 48 ? bi.replace(/^0+(?=\d)/, '') : bi;
  if (aw.length !== bw.length) return aw.length < bw.length ? -1 : 1;
  if (aw !== bw) return aw < bw ? -1 : 1;
  const af = ad < 0 ? '' : a.slice(ad + 1);
  const bf = bd < 0 ? '' : b.slice(bd + 1);
  if (af.length === bf.length) return af === bf ? 0 : af < bf ? -1 : 1;
  const len = Math.max(af.length, bf.length);
  const ap = af.padEnd(len, '0');
  const bp = bf.padEnd(len, '0');
  return ap === bp ? 0 : ap < bp ? -1 : 1;
}

/**
 * Aggregates daily candles (in day order, each as `dayCandle` builds it) to `interval` buckets: open of the first day with a price, close of
 * the last, highest high, lowest low, observations and days summed, last quantity, units sold summed (sales),
 * delisted as of the bucket's last day. Exact decimal comparisons (`compareDecimal`). `buckets` caches day -> bucket
 * for one interval; pass one map to several calls of the same interval to share it.
 */
function aggregate(days: { readonly candles: readonly Candle[] }, interval: HistoryInterval, sales: boolean, buckets: Map<string, string> = new Map()): Candle[] {
  // Day candles are built in their served shape (dayCandle): interval day serves them as they are.
  if (interval === 'day') return days.candles as Candle[];
  const bucket = (date: string): string => {
    let b = buckets.get(date);
    if (b === undefined) buckets.set(date, (b = bucketOf(date, interval)));
    return b;
  };
  const out: Candle[] = [];
  let cur: Candle | null = null;
  for (const d of days.candles) {
    const date = bucket(d.date);
    if (!cur || cur.date !== date) {
      cur = { date, open: null, high: null, low: null, close: null, observations: 0, quantity: null, volume: sales ? 0 : null, delisted: false, days: 0 };
      out.push(cur);
    }
    cur.days += d.days;
    cur.observations += d.observations;
    cur.delisted = d.delisted;
    if (sales) cur.volume = (cur.volume ?? 0) + (d.volume ?? 0);
    else if (d.quantity !== null) cur.quantity = d.quantity;
    if (d.close !== null) {
      if (cur.open === null) cur.open = d.open ?? d.close;
      cur.close = d.close;
      const hi = d.high ?? d.close;
      const lo = d.low ?? d.close;
      if (cur.high === null || compareDecimal(hi, cur.high) > 0) cur.high = hi;
      if (cur.low === null || compareDecimal(lo, cur.low) < 0) cur.low = lo;
    }
  }
  return out;
}

/**
 * An item's history: each (market, series) with its candles at `interval`, in market code then series order,
 * and the CSCP valuations of the range (the last valuation of each bucket). Throws only on a database error;
 * the range and interval are checked by the caller (src/validation/params.ts `historyArgs`).
 */
export async function loadItemHistory(db: Pick<Database, 'query'>, q: HistoryQuery): Promise<Pick<ItemHistory, 'series' | 'cscp'>> {
  const [daily, valuations] = await Promise.all([
    dailyCandles(db, q),
    db.query<{ day: string; mid: string; ask: string; bid: string | null; u: number; two: boolean }>(
      `SELECT valuation_date::text AS day, mid_amount::text AS mid, ask_amount::text AS ask, bid_amount::text AS bid,
              uncertainty AS u, is_two_sided AS two
         FROM valuation WHERE item_id = $1 AND valuation_date BETWEEN $2::date AND $3::date ORDER BY valuation_date`,
      [q.itemId, q.from, q.to],
    ),
  ]);
  const series: HistorySeriesOut[] = [];
  const buckets = new Map<string, string>();
  for (const [key, days] of daily) {
    if (days.candles.length === 0) continue;
    const [marketCode, kind] = key.split('\u0000') as [string, HistorySeriesKind];
    series.push({
      marketCode,
      series: kind,
      side: kind === 'sales' ? null : kind === 'bid' ? 'bid' : 'ask',
      currencyCode: days.currency,
      candles: aggregate(days, q.interval, kind === 'sales', buckets),
    });
  }
  const order: Record<HistorySeriesKind, number> = { ask: 0, bid: 1, listing_minimum: 2, sales: 3 };
  series.sort((a, b) => (a.marketCode < b.marketCode ? -1 : a.marketCode > b.marketCode ? 1 : order[a.series] - order[b.series]));
  const cscpByBucket = new Map<string, CscpPoint>();
  for (const v of valuations) {
    const mid = new Decimal(v.mid);
    const factor = Decimal.exp(new Decimal(v.u));
    cscpByBucket.set(bucketOf(v.day, q.interval), {
      date: bucketOf(v.day, q.interval),
      mid: mid.toFixed(),
      askAmount: new Decimal(v.ask).toFixed(),
      bidAmount: v.bid === null ? null : new Decimal(v.bid).toFixed(),
      uncertainty: v.u,
      bandLow: mid.div(factor).toDecimalPlaces(4).toFixed(),
      bandHigh: mid.times(factor).toDecimalPlaces(4).toFixed(),
      isTwoSided: v.two,
    });
  }
  return { series, cscp: [...cscpByBucket.values()] };
}

/** The id of an item, or null when the service has never seen it (no quotes, no history). */
export async function itemIdOf(db: Pick<Database, 'query'>, appId: string, marketHashName: string): Promise<number | null> {
  const [row] = await db.query<{ id: number }>(`SELECT id FROM item WHERE app_id = $1 AND market_hash_name = $2`, [appId, marketHashName]);
  return row?.id ?? null;
}

/** One month of one series to write (importers; `candles` hold days of `month`, YYYY-MM-01). */
export interface MonthWrite {
  itemId: number;
  marketCode: string;
  providerCode: string;
  series: HistorySeriesKind;
  month: string;
  currencyCode: string;
  candles: StoredCandle[];
}

/** Rows per statement of the history writers. */
const WRITE_CHUNK = 5000;

/**
 * Writes whole months (the importers' path): a month's row is replaced, so importing the same file twice
 * writes the same rows (idempotent). One statement per chunk; wrap in a transaction for all-or-nothing.
 */
export async function writeMonths(db: Pick<Database, 'query'>, months: readonly MonthWrite[]): Promise<number> {
  for (let i = 0; i < months.length; i += WRITE_CHUNK) await upsertMonths((sql, params) => db.query(sql, params), months.slice(i, i + WRITE_CHUNK), 'replace');
  return months.length;
}

/**
 * One statement writing month rows: `replace` sets a row's data to the months' block (importers), `append`
 * adds the block after the row's data (compaction: a later record of a day wins on read).
 */
async function upsertMonths(run: (sql: string, params: unknown[]) => Promise<unknown>, months: readonly MonthWrite[], mode: 'replace' | 'append'): Promise<void> {
  await run(
    `INSERT INTO candle_month AS m (item_id, market_code, provider_code, series, month, currency_code, data)
     SELECT t.item_id, t.market_code, t.provider_code, t.series::history_series, t.month, t.currency_code, decode(t.data, 'hex')
       FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::date[], $6::text[], $7::text[])
         AS t(item_id, market_code, provider_code, series, month, currency_code, data)
     ON CONFLICT (item_id, market_code, provider_code, series, month) DO UPDATE SET
       currency_code = EXCLUDED.currency_code, data = ${mode === 'append' ? 'm.data || EXCLUDED.data' : 'EXCLUDED.data'}`,
    [
      months.map((m) => m.itemId),
      months.map((m) => m.marketCode),
      months.map((m) => m.providerCode),
      months.map((m) => m.series),
      months.map((m) => m.month),
      months.map((m) => m.currencyCode),
      months.map((m) => Buffer.from(encodeMonth(m.candles)).toString('hex')),
    ],
  );
}

/** Most items per compaction transaction (by id range). */
const COMPACT_ITEMS = 2000;
/**
 * About this many closes per compaction transaction: a fresh week at full scale (36k items x 80 quotes x 7 days)
 * read 2,000 items at once and held gigabytes; the id range is narrowed to stay near this. At 40,000 the daily
 * job's process still peaked far higher (a live set that V8 lets grow fourfold before collecting); at 12,000 it
 * holds much less, in the same time (figures: docs/benchmarks.md, Figures behind choices in the code).
 */
const COMPACT_ROWS = 12_000;

/**
 * Copies the candles of every closed day (before `today`, UTC) not yet compacted from `daily_close` into
 * `candle_month` (one appended block per row and run), and marks them compacted, in one transaction per
 * range of item ids (rows locked while copied, so a concurrent late observation waits and re-marks its row).
 * Returns the number of day candles copied. Run by the valuation job before it prunes `daily_close`.
 */
export async function compactHistory(db: Database, today: Date): Promise<number> {
  const before = formatDate(today);
  const [range] = await db.query<{ lo: number | null; hi: number | null; n: string }>(
    `SELECT min(item_id) AS lo, max(item_id) AS hi, count(*)::text AS n FROM daily_close WHERE NOT compacted AND day < $1::date`,
    [before],
  );
  if (range?.lo == null || range.hi == null) return 0;
  // Items per transaction: COMPACT_ROWS closes at the range's average density, between 1 and COMPACT_ITEMS.
  const perItem = Number(range.n) / (range.hi - range.lo + 1);
  const step = Math.max(1, Math.min(COMPACT_ITEMS, Math.floor(COMPACT_ROWS / Math.max(perItem, 1))));
  let copied = 0;
  for (let lo = range.lo; lo <= range.hi; lo += step) {
    const hi = lo + step - 1;
    copied += await db.prisma.$transaction(async (tx) => {
      const rows = await tx.$queryRawUnsafe<(HotRow & { item_id: number })[]>(
        `SELECT item_id, market_code, provider_code, side::text AS side, day::text AS day, currency_code, price::text AS price,
                open_price::text AS open_price, high_price::text AS high_price, low_price::text AS low_price, observations,
                quantity, delisted, confirmed_at
           FROM daily_close WHERE item_id BETWEEN $1 AND $2 AND NOT compacted AND day < $3::date
           ORDER BY item_id, market_code, provider_code, side, day FOR UPDATE`,
        lo,
        hi,
        before,
      );
      if (rows.length === 0) return 0;
      const months = new Map<string, MonthWrite>();
      for (const r of rows) {
        const month = monthStart(r.day);
        const key = `${r.item_id}\u0000${r.market_code}\u0000${r.provider_code}\u0000${r.side}\u0000${month}`;
        let m = months.get(key);
        if (!m) months.set(key, (m = { itemId: r.item_id, marketCode: r.market_code, providerCode: r.provider_code, series: r.side, month, currencyCode: r.currency_code, candles: [] }));
        m.currencyCode = r.currency_code;
        m.candles.push(candleOfClose(r));
      }
      await upsertMonths((sql, params) => tx.$executeRawUnsafe(sql, ...params), [...months.values()], 'append');
      await tx.$executeRawUnsafe(`UPDATE daily_close SET compacted = true WHERE item_id BETWEEN $1 AND $2 AND NOT compacted AND day < $3::date`, lo, hi, before);
      return rows.length;
    }, { maxWait: 30_000, timeout: 300_000 });
  }
  return copied;
}

/** One daily candle of a bulk read (`readDayCandles`): amounts are exact decimal strings in `currency`. */
export interface ItemDayCandle {
  itemId: number;
  market: string;
  provider: string;
  series: HistorySeriesKind;
  /** The candle's UTC day, YYYY-MM-DD. */
  date: string;
  currency: string;
  close: string | null;
  /** Last quantity of the day (listings; for `sales`, units sold). */
  quantity: number | null;
  delisted: boolean;
}

/**
 * The daily candles of several items at once (bulk readers such as the history backtest,
 * src/valuation/history-backtest.ts): items `itemIds`, days in [from, to], series kinds `series`, markets
 * `markets` (null: every market). Merged as an item's history read is: a hot `daily_close` row replaces the
 * cold candle of its day, then one provider per (item, market, series, day) by the quotes' precedence.
 * Ordered by item id, market, series and day. Two queries; the caller bounds the items and the range.
 */
export async function readDayCandles(
  db: Pick<Database, 'query'>,
  q: { itemIds: readonly number[]; series: readonly HistorySeriesKind[]; markets: readonly string[] | null; from: string; to: string },
): Promise<ItemDayCandle[]> {
  if (q.itemIds.length === 0 || q.series.length === 0) return [];
  const ids = [...q.itemIds];
  const kinds = [...q.series];
  const markets = q.markets === null ? null : [...q.markets];
  const [cold, hot] = await Promise.all([
    db.query<ColdRow & { item_id: number }>(
      `SELECT item_id, market_code, provider_code, series::text AS series, month::text AS month, currency_code, data
         FROM candle_month
        WHERE item_id = ANY($1::int[]) AND month BETWEEN $2::date AND $3::date AND series::text = ANY($4::text[])
          AND ($5::text[] IS NULL OR market_code = ANY($5::text[]))`,
      [ids, monthStart(q.from), monthStart(q.to), kinds, markets],
    ),
    kinds.includes('ask') || kinds.includes('bid')
      ? db.query<{ item_id: number; market_code: string; provider_code: string; side: 'ask' | 'bid'; day: string; currency_code: string; price: string | null; quantity: number | null; delisted: boolean; confirmed_at: Date }>(
          `SELECT item_id, market_code, provider_code, side::text AS side, day::text AS day, currency_code, price::text AS price,
                  quantity, delisted, confirmed_at
             FROM daily_close
            WHERE item_id = ANY($1::int[]) AND day BETWEEN $2::date AND $3::date AND side::text = ANY($4::text[])
              AND ($5::text[] IS NULL OR market_code = ANY($5::text[]))`,
          [ids, q.from, q.to, kinds, markets],
        )
      : Promise.resolve([]),
  ]);
  // (item, market, series) -> provider -> date -> candle; a hot row replaces the cold candle of its day.
  type Read = ItemDayCandle & { confirmed: number };
  const groups = new Map<string, { itemId: number; market: string; series: HistorySeriesKind; providers: Map<string, Map<string, Read>> }>();
  const dates = (itemId: number, market: string, series: HistorySeriesKind, provider: string) => {
    const k = `${itemId}\u0000${market}\u0000${series}`;
    let g = groups.get(k);
    if (!g) groups.set(k, (g = { itemId, market, series, providers: new Map() }));
    let d = g.providers.get(provider);
    if (!d) g.providers.set(provider, (d = new Map()));
    return d;
  };
  for (const r of cold) {
    const days = dates(r.item_id, r.market_code, r.series, r.provider_code);
    const prefix = r.month.slice(0, 8);
    for (const c of decodeMonth(r.data)) {
      const date = `${prefix}${c.day < 10 ? '0' : ''}${c.day}`;
      if (date < q.from || date > q.to) continue;
      days.set(date, { itemId: r.item_id, market: r.market_code, provider: r.provider_code, series: r.series, date, currency: r.currency_code, close: c.close, quantity: c.quantity, delisted: c.delisted, confirmed: 0 });
    }
  }
  for (const r of hot) {
    dates(r.item_id, r.market_code, r.side, r.provider_code).set(r.day, {
      itemId: r.item_id,
      market: r.market_code,
      provider: r.provider_code,
      series: r.side,
      date: r.day,
      currency: r.currency_code,
      close: trimDecimal(r.price),
      quantity: r.quantity,
      delisted: r.delisted,
      confirmed: new Date(r.confirmed_at).getTime(),
    });
  }
  const order = [...groups.values()].sort((a, b) => a.itemId - b.itemId || (a.market < b.market ? -1 : a.market > b.market ? 1 : a.series < b.series ? -1 : a.series > b.series ? 1 : 0));
  const out: ItemDayCandle[] = [];
  for (const g of order) {
    const list = onePerDay(g.providers, g.market);
    for (const c of list) out.push(c);
  }
  return out;
}
