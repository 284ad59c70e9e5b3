/**
 * The backtest on the price history (`quotegate backtest --history <series>`, src/valuation/history-backtest.ts)
 * on a small synthetic history written as the importers write it (whole months through writeMonths), with the
 * bundled catalogue's fee paths: what a user reads off its figures.
 *
 * - January, Steam daily sales (USD): a constant item, an item whose price jumps 10 -> 12 on 01-06, and an
 *   item with a point on 01-01 and another on 01-20 only.
 * - February, listing asks of two markets overlapping in time (the consensus is a cross-market one).
 * - March, a weekly listing minimum (the previous point is exactly D-7, the window's first day).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredCandle } from '../../src/history/candle-codec.js';
import { importCatalogue } from '../../src/catalogue/import.js';
import { runHistoryBacktest, type HistoryBacktestDay } from '../../src/valuation/history-backtest.js';
import { writeMonths, type HistorySeriesKind, type MonthWrite } from '../../src/history/candles.js';
import { ensureItems } from '../../src/quotes/ingestion.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const CONSTANT = 'Sticker | Always The Same';
const JUMP = 'AK-47 | Jumps (Field-Tested)';
const LONE = 'AWP | Two Points (Factory New)';
const PAIR = 'M4A1-S | Two Markets (Minimal Wear)';
const WEEKLY = 'Glock-18 | Weekly (Field-Tested)';
const LN_1_2 = Math.log(1.2);

let db: TestDatabase;

/** One month of one series: `prices` by day of month. */
function month(itemId: number, market: string, series: HistorySeriesKind, monthStart: string, currency: string, prices: Record<number, string>): MonthWrite {
  const candles: StoredCandle[] = Object.entries(prices).map(([day, p]) => ({ day: Number(day), open: p, high: p, low: p, close: p, observations: 1, quantity: 3, delisted: false }));
  return { itemId, marketCode: market, providerCode: market === 'STEAM' ? 'STEAM_PRICEHISTORY' : 'BUFF_ARCHIVE', series, month: monthStart, currencyCode: currency, candles };
}

const days = (from: number, to: number, price: (d: number) => string) => Object.fromEntries(Array.from({ length: to - from + 1 }, (_, i) => [from + i, price(from + i)]));
const byDate = (list: HistoryBacktestDay[]) => Object.fromEntries(list.map((d) => [d.date, d]));

beforeAll(async () => {
  db = await testDatabase();
  await importCatalogue(db.prisma, 'data');
  const ids = await ensureItems(db, [CONSTANT, JUMP, LONE, PAIR, WEEKLY].map((marketHashName) => ({ appId: '730', marketHashName })));
  const id = (name: string) => ids.get(`730\u0000${name}`)!;
  await writeMonths(db, [
    month(id(CONSTANT), 'STEAM', 'sales', '2026-01-01', 'USD', days(1, 10, () => '0.1')),
    month(id(JUMP), 'STEAM', 'sales', '2026-01-01', 'USD', days(1, 10, (d) => (d < 6 ? '10' : '12'))),
    month(id(LONE), 'STEAM', 'sales', '2026-01-01', 'USD', { 1: '100', 20: '100' }),
    month(id(PAIR), 'BUFF163', 'ask', '2026-02-01', 'CNY', days(1, 5, () => '100')),
    month(id(PAIR), 'YOUPIN', 'ask', '2026-02-01', 'CNY', days(1, 5, () => '110')),
    month(id(WEEKLY), 'BUFF163', 'listing_minimum', '2026-03-01', 'CNY', { 1: '50', 8: '55', 15: '55' }),
  ]);
});
afterAll(async () => {
  await db?.destroy();
});

describe('Steam daily sales (one market)', () => {
  it('scores every day with a window; days without one are listed as not scored', async () => {
    const r = await runHistoryBacktest(db, { series: 'sales' });
    expect(r.days.map((d) => d.date)).toEqual(['02', '03', '04', '05', '06', '07', '08', '09', '10'].map((d) => `2026-01-${d}`));
    // 01-01 has no day before it; LONE's 01-20 has nothing in 01-13 .. 01-19.
    expect(r.unscored_days).toEqual(['2026-01-01', '2026-01-20']);
    expect(r.targets).toBe(18);
    const d = byDate(r.days);
    // LONE is valued while its 01-01 sale is in the window (to 01-08), but has no sale to be scored against.
    expect([d['2026-01-02']!.valued_items, d['2026-01-08']!.valued_items, d['2026-01-09']!.valued_items]).toEqual([3, 3, 2]);
    expect(d['2026-01-02']!.targets).toBe(2);
    // Too few pairs of consecutive sales to fit the drift: the default 0.02.
    expect(d['2026-01-05']).toMatchObject({ tau: 0.02, tau_pairs: 6, sigmas: {} });
  });

  it('a series constant within the window: previous close and 7-day median exact, the consensus off only by its 4-decimal rounding, always inside e^(+-u)', async () => {
    const r = await runHistoryBacktest(db, { series: 'sales', market: 'STEAM' });
    // 0.1 USD is 0.6972 CNY of cash (deposit allowance included): the only item under 1 CNY.
    const cheap = r.bands.find((b) => b.label === 'under 1 CNY')!;
    expect(cheap).toMatchObject({ n: 9, previous_close_mdae: 0, median7_mdae: 0, calibration: 1 });
    expect(cheap.consensus_mdae).toBeGreaterThan(0);
    expect(cheap.consensus_mdae).toBeLessThan(1e-4);
    expect(r.bands.find((b) => b.label === '10-100 CNY')!.n).toBe(9);
    expect(r.bands.find((b) => b.label === 'over 100 CNY')!.n).toBe(0);
    // Every previous sale is a day old.
    expect(r.ages.map((a) => a.n)).toEqual([18, 0, 0]);
  });

  it('a jump gives its log error to the previous close on the day it happens, and to the 7-day median until the window has more new points than old', async () => {
    const r = await runHistoryBacktest(db, { series: 'sales', from: '2026-01-06', to: '2026-01-10' });
    expect(r.unscored_days).toEqual([]);
    const d = byDate(r.days);
    // 01-06: CONSTANT 0, JUMP ln(12/10); median of the two.
    expect(d['2026-01-06']!.previous_close_mdae).toBeCloseTo(LN_1_2 / 2, 6);
    expect(d['2026-01-06']!.consensus_mdae).toBeCloseTo(LN_1_2 / 2, 3);
    // JUMP's ln 1.2 = 0.18 lies outside its e^(+-u) (u = sqrt(0.05^2 + 0.02^2 x 0.5 + allowance^2) = 0.053); CONSTANT inside.
    expect(d['2026-01-06']!.calibration).toBe(0.5);
    // Afterwards the previous close has caught up; the 7-day median of JUMP stays at 10 while 10s are the majority.
    for (const day of ['2026-01-07', '2026-01-08', '2026-01-09']) {
      expect(d[day]!.previous_close_mdae).toBe(0);
      expect(d[day]!.median7_mdae).toBeCloseTo(LN_1_2 / 2, 6);
      expect(d[day]!.calibration).toBe(1);
    }
    expect(d['2026-01-10']!.median7_mdae).toBe(0);
    expect(r.previous_close).toMatchObject({ n: 10, mdae: 0 });
    expect(r.median7.n).toBe(10);
    expect(r.calibration).toMatchObject({ n: 10, share: 0.9, share_2u: 0.9 });
    expect(r.calibration.median_u).toBeCloseTo(Math.sqrt(0.05 ** 2 + 0.02 ** 2 * 0.5 + (Math.log(1 / 0.96) / Math.sqrt(12)) ** 2), 5);
  });
});

describe('several markets overlapping in time', () => {
  it('the consensus is the cross-market one; each market previous close is its own', async () => {
    const r = await runHistoryBacktest(db, { series: 'ask' });
    expect(r.days.map((d) => d.date)).toEqual(['2026-02-02', '2026-02-03', '2026-02-04', '2026-02-05']);
    expect(r.days.map((d) => [d.valued_items, d.targets])).toEqual([
      [1, 2],
      [1, 2],
      [1, 2],
      [1, 2],
    ]);
    // The consensus lies between the two markets (100 and 110 CNY, equal sigmas): its two errors add up to
    // ln(110 / 100) every day, and the median of the eight is their mean.
    expect(r.consensus_mdae).toBeCloseTo(Math.log(1.1) / 2, 5);
    expect(r.previous_close).toMatchObject({ n: 8, mdae: 0 });
    expect(r.median7).toMatchObject({ n: 8, mdae: 0 });
    // Two sources 10 % apart are more than the biweight (C = 1.5) tolerates evenly: the consensus settles near
    // YOUPIN (u 0.0663), so YOUPIN's next close is inside e^(+-u) and BUFF163's is not (inside e^(+-2u)).
    expect(r.calibration).toMatchObject({ n: 8, share: 0.5, share_2u: 1 });
    expect(r.calibration.median_u).toBeCloseTo(0.066334, 6);
  });

  it('--market keeps one market: the consensus is that market previous close again', async () => {
    const r = await runHistoryBacktest(db, { series: 'ask', market: 'BUFF163' });
    expect(r).toMatchObject({ market: 'BUFF163', targets: 4, consensus_mdae: 0, previous_close: { n: 4, mdae: 0 } });
    expect((await runHistoryBacktest(db, { series: 'ask', market: 'CSFLOAT' })).days).toEqual([]);
  });
});

describe('a weekly series', () => {
  it('the point 7 days before is still in the window (age 6.5 days)', async () => {
    const r = await runHistoryBacktest(db, { series: 'listing_minimum' });
    expect(r.days.map((d) => d.date)).toEqual(['2026-03-08', '2026-03-15']);
    expect(r.unscored_days).toEqual(['2026-03-01']);
    const d = byDate(r.days);
    expect(d['2026-03-08']!.previous_close_mdae).toBeCloseTo(Math.log(55 / 50), 6);
    expect(d['2026-03-15']!.previous_close_mdae).toBe(0);
    expect(r.ages.map((a) => a.n)).toEqual([0, 0, 2]);
    // u = sqrt(0.05^2 + 0.02^2 x 6.5 + allowance^2) = 0.072: ln(55/50) = 0.095 is outside.
    expect(r.calibration).toMatchObject({ n: 2, share: 0.5, share_2u: 1 });
  });
});
