/**
 * The synthetic price-history year shared by `npm run bench:history` (PostgreSQL, bench/history.ts) and
 * `npm run bench:history:columnar` (DuckDB/Parquet, bench/history-columnar.ts), so both store the same candles.
 *
 * Shape (issue: price history, point 2): HISTORY_SCALE x 36,000 items (real market hash names of
 * data/items/market_hash_names.txt, synthetic ones beyond them) x the 40 markets of bench/scale-data.ts x ask
 * and bid x the 365 days of 2025. Scale 0.1 is about 105 M daily candles, scale 1 the issue's ~1.05 billion.
 *
 * Each series (item, market, side) is a deterministic function of its indices (seeded PRNG, no state shared
 * between series, so any item can be regenerated alone):
 * - a log-normal starting price (median about 3, clamped to 0.10 .. 5,000, 2 decimals; a market within +-6 %
 *   of the item's price, the bid 3-15 % under the ask), then a daily geometric random walk with the item's
 *   volatility (0.5-4 % a day), never below 0.01;
 * - about half the days flat (open = high = low = close, one observation); the others with an open near the
 *   previous close, a high/low range around open and close, and 2-30 observations;
 * - a quantity random walk (long-tailed start, 1 to a few thousand; 0 while delisted);
 * - delisted spells (a two-state chain: 0.5 % a day to delist, 25 % a day to relist: ~2 % of the days), the
 *   last price kept, as the ingestion keeps it;
 * - ~3 % of items appear mid-year (all their series start on one day between February and November), and
 *   ~2 % of the other series start mid-year (a market that lists the item later).
 * Prices are integers in cents (the amounts have 2 decimals); `centsText` gives the decimal string.
 */
import fs from 'node:fs';
import { NAMES_FILE, scaleMarkets } from './scale-data.js';

/** The synthetic year. */
export const HISTORY_YEAR = 2025;
/** Days of the year (2025 is not a leap year). */
export const DAYS = 365;
/** Items at full scale (the 36k). */
export const FULL_SCALE_ITEMS = 36_000;
/** Candles of the full-scale year: 36k items x 40 markets x 2 sides x 365 days. */
export const FULL_SCALE_CANDLES = FULL_SCALE_ITEMS * 40 * 2 * DAYS;

/** One market of the synthetic set. */
export interface SyntheticMarket {
  code: string;
  currency: string;
}

/** What a run generates. */
export interface SyntheticPlan {
  scale: number;
  /** Item names, index = item index. */
  names: string[];
  markets: SyntheticMarket[];
  /** Per day index (0 = Jan 1): `YYYY-MM-DD`. */
  dates: string[];
  /** Per day index: month index 0-11. */
  monthOf: Uint8Array;
  /** Per day index: day of the month 1-31. */
  dayOfMonth: Uint8Array;
  /** Per month index: first day index. */
  monthFirstDay: number[];
  /** Per month index: `YYYY-MM-01`. */
  monthStarts: string[];
}

/** The plan of a run at `scale` (HISTORY_SCALE; 0.1 = 3,600 items). */
export function syntheticPlan(scale: number): SyntheticPlan {
  if (!(scale > 0)) throw new Error(`HISTORY_SCALE must be positive, got ${scale}`);
  const count = Math.max(1, Math.round(FULL_SCALE_ITEMS * scale));
  const real = fs.readFileSync(NAMES_FILE, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean);
  const names = Array.from({ length: count }, (_, i) => real[i] ?? `Synthetic History Item ${i}`);
  const markets = scaleMarkets().map((m) => ({ code: m.code, currency: m.currency }));
  const dates: string[] = [];
  const monthOf = new Uint8Array(DAYS);
  const dayOfMonth = new Uint8Array(DAYS);
  const monthFirstDay: number[] = [];
  const monthStarts: string[] = [];
  const t0 = Date.UTC(HISTORY_YEAR, 0, 1);
  for (let d = 0; d < DAYS; d++) {
    const date = new Date(t0 + d * 86_400_000);
    dates.push(date.toISOString().slice(0, 10));
    monthOf[d] = date.getUTCMonth();
    dayOfMonth[d] = date.getUTCDate();
    if (date.getUTCDate() === 1) {
      monthFirstDay.push(d);
      monthStarts.push(dates[d]!);
    }
  }
  return { scale, names, markets, dates, monthOf, dayOfMonth, monthFirstDay, monthStarts };
}

/** The daily candles of one series, from day index `start` to the end of the year. Prices in cents. */
export interface SeriesYear {
  item: number;
  market: number;
  /** 0 ask, 1 bid. */
  side: 0 | 1;
  /** First day index with a candle (0 for most series). */
  start: number;
  /** Arrays indexed by day index (entries before `start` are unused). */
  open: Int32Array;
  high: Int32Array;
  low: Int32Array;
  close: Int32Array;
  observations: Uint8Array;
  quantity: Int32Array;
  delisted: Uint8Array;
}

/** A 32-bit mix (murmur3's finaliser). */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A seeded PRNG (mulberry32): uniform in [0, 1) and standard normal draws. */
export class Rng {
  private s: number;
  private spare: number | null = null;
  constructor(...seed: number[]) {
    let h = 0x9e3779b9;
    for (const x of seed) h = mix(h ^ mix(x + 0x632be5ab));
    this.s = h;
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  normal(): number {
    if (this.spare !== null) {
      const v = this.spare;
      this.spare = null;
      return v;
    }
    const u = Math.max(this.next(), 1e-12);
    const r = Math.sqrt(-2 * Math.log(u));
    const a = 2 * Math.PI * this.next();
    this.spare = r * Math.sin(a);
    return r * Math.cos(a);
  }
}

const SEED = 20250101;
const MIN_CENTS = 1;

/** Item-level draws: start price (USD-like units), daily volatility, first day. */
function itemTraits(item: number): { price: number; sigma: number; start: number } {
  const r = new Rng(SEED, item);
  const price = Math.min(5000, Math.max(0.1, 3 * Math.exp(1.6 * r.normal())));
  const sigma = 0.005 + 0.035 * r.next() ** 2;
  const late = r.next() < 0.03;
  const start = late ? 31 + Math.floor(r.next() * 300) : 0;
  return { price, sigma, start };
}

/** The 80 series of one item (markets x ask, bid), in market then side order. */
export function itemSeries(plan: SyntheticPlan, item: number): SeriesYear[] {
  const t = itemTraits(item);
  const out: SeriesYear[] = [];
  for (let m = 0; m < plan.markets.length; m++) {
    const mr = new Rng(SEED, item, m);
    const marketPrice = t.price * (0.94 + 0.12 * mr.next());
    const bidFactor = 0.85 + 0.12 * mr.next();
    for (const side of [0, 1] as const) {
      out.push(series(item, m, side, side === 0 ? marketPrice : marketPrice * bidFactor, t.sigma, t.start));
    }
  }
  return out;
}

function series(item: number, market: number, side: 0 | 1, startPrice: number, sigma: number, itemStart: number): SeriesYear {
  const r = new Rng(SEED, item, market, side + 7);
  const start = itemStart > 0 ? itemStart : r.next() < 0.02 ? 31 + Math.floor(r.next() * 300) : 0;
  const open = new Int32Array(DAYS);
  const high = new Int32Array(DAYS);
  const low = new Int32Array(DAYS);
  const close = new Int32Array(DAYS);
  const observations = new Uint8Array(DAYS);
  const quantity = new Int32Array(DAYS);
  const delisted = new Uint8Array(DAYS);
  let logPrice = Math.log(Math.min(5000, Math.max(0.1, startPrice)));
  let prevClose = Math.max(MIN_CENTS, Math.round(Math.exp(logPrice) * 100));
  let qty = Math.max(1, Math.round(Math.exp(7 * r.next() ** 2) / Math.sqrt(Math.exp(logPrice) + 1) / (side === 1 ? 3 : 1)));
  let gone = false;
  for (let d = start; d < DAYS; d++) {
    gone = d === start ? false : gone ? r.next() >= 0.25 : r.next() < 0.005;
    if (gone) {
      open[d] = high[d] = low[d] = close[d] = prevClose;
      observations[d] = 1;
      quantity[d] = 0;
      delisted[d] = 1;
      continue;
    }
    if (d > start) logPrice += sigma * r.normal();
    const c = Math.max(MIN_CENTS, Math.round(Math.exp(logPrice) * 100));
    qty = Math.max(1, qty + Math.round(r.normal() * Math.max(1, qty * 0.08)));
    quantity[d] = qty;
    close[d] = c;
    if (r.next() < 0.5) {
      open[d] = high[d] = low[d] = c;
      observations[d] = 1;
    } else {
      const o = Math.max(MIN_CENTS, Math.round(prevClose * Math.exp(0.3 * sigma * r.normal())));
      const top = Math.max(o, c);
      const bottom = Math.min(o, c);
      open[d] = o;
      high[d] = Math.round(top * (1 + Math.abs(r.normal()) * sigma * 0.5));
      low[d] = Math.max(MIN_CENTS, Math.round(bottom * (1 - Math.min(0.9, Math.abs(r.normal()) * sigma * 0.5))));
      observations[d] = 2 + Math.floor(r.next() * 29);
    }
    prevClose = c;
  }
  return { item, market, side, start, open, high, low, close, observations, quantity, delisted };
}

/** A cents integer as a decimal string with 2 places (`12345` -> `"123.45"`). */
export function centsText(cents: number): string {
  const whole = Math.floor(cents / 100);
  const frac = cents - whole * 100;
  return `${whole}.${frac < 10 ? '0' : ''}${frac}`;
}

