/**
 * The CSCP valuation end to end on a small synthetic market: closes written by ingestion, the job run
 * for a date, and the CSCP / mid quote as /prices, the batch, GraphQL and the export publish it.
 */
import zlib from 'node:zlib';
import { Decimal } from 'decimal.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runValuationJob, startValuationJob } from '../../src/jobs/valuation.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { runExportSnapshots } from '../../src/exports/exports.js';
import { ValuationCancelled, catchUpDate, computeValuations, parseDate } from '../../src/valuation/daily.js';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope, VALUATION_KEYS, expectKeys } from '../helpers/shapes.js';

let t: TestApp;
const COMPUTED = new Date('2026-07-17T00:05:00.000Z');
const TWO = 'AK-47 | Test Pattern (Field-Tested)';
const ONE = 'Sticker | Only Asks';
const CROSSED = 'Crossed Case';
const BIDLESS_MARKETS = 'Sealed Graffiti | Nobody Buys';

const day = (d: number) => new Date(Date.UTC(2026, 6, d, 0, 0, 0));
const cny = (name: string, market: 'BUFF163' | 'YOUPIN', side: 'ask' | 'bid', price: string, d: number) =>
  obs(name, { marketCode: market, providerCode: 'CSGOTRADER', side, price, observedAt: day(d), quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null });
const usd = (name: string, market: 'CSFLOAT' | 'CSMONEY', price: string, d: number) =>
  obs(name, { marketCode: market, providerCode: 'CSGOTRADER', currencyCode: 'USD', side: 'ask', price, observedAt: day(d), quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null });

const pricesOf = async (name: string, query = '') => expectEnvelope(await t.get(`/prices?market_hash_name=${encodeURIComponent(name)}${query}`, t.auth())).markets;
const cscp = async (name: string) => (await pricesOf(name, '&markets=CSCP&side=mid'))[0];

beforeAll(async () => {
  t = await testApp();
  const rows = [];
  for (const d of [14, 15, 16]) {
    rows.push(cny(TWO, 'BUFF163', 'ask', `${200 + d}`, d), cny(TWO, 'BUFF163', 'bid', `${195 + d}`, d), cny(TWO, 'YOUPIN', 'ask', `${199 + d}`, d), usd(TWO, 'CSFLOAT', '30.5', d));
    rows.push(cny(ONE, 'BUFF163', 'ask', '3.1', d), cny(ONE, 'YOUPIN', 'ask', '3.05', d));
    rows.push(cny(CROSSED, 'BUFF163', 'ask', '10', d), cny(CROSSED, 'BUFF163', 'bid', '10.5', d), cny(CROSSED, 'YOUPIN', 'ask', '10.2', d));
  }
  // Many two-sided weapons: the comparable items of the one-sided ones.
  for (let i = 0; i < 30; i++) rows.push(cny(`Filler ${i} (Field-Tested)`, 'BUFF163', 'ask', '100', 16), cny(`Filler ${i} (Field-Tested)`, 'BUFF163', 'bid', '92', 16));
  rows.push(cny(BIDLESS_MARKETS, 'BUFF163', 'bid', '1', 16));
  await ingestQuotes(t.db, rows);
});
afterAll(async () => {
  await t?.close();
});

describe('valuation job', () => {
  it('a run whose service is stopping ends without writing: not a failure, the date is still to value', async () => {
    const date = parseDate('2026-07-17');
    await expect(computeValuations(t.db, date, { stopped: () => true })).rejects.toBeInstanceOf(ValuationCancelled);
    expect(await runValuationJob(t.db, date, { now: () => COMPUTED, stopped: () => true })).toEqual({ status: 'cancelled', date: '2026-07-17' });
    expect(await t.db.query(`SELECT 1 FROM valuation_run UNION ALL SELECT 1 FROM valuation`)).toEqual([]);
    const run = await t.db.prisma.jobRun.findUnique({ where: { job: 'valuation' } });
    expect(run?.lastError ?? null).toBeNull();
    expect(run?.lastErrorAt ?? null).toBeNull();
    expect(await catchUpDate(t.db, new Date('2026-11-21T12:00:00Z'))).toEqual(date);
  });

  it('values the day after the newest close at start-up (catch-up), under the lock, recording job_run', async () => {
    expect(await catchUpDate(t.db, new Date('2026-11-21T12:00:00Z'))).toEqual(parseDate('2026-07-17'));
    const job = startValuationJob(t.db, { clock: () => COMPUTED });
    const outcome = await job.startup;
    await job.stop();
    expect(outcome).toMatchObject({ status: 'done', result: { date: '2026-07-17', items: 33, twoSided: 31, oneSided: 2 } });
    expect(await catchUpDate(t.db, new Date('2026-11-21T12:00:00Z'))).toBeNull();
    const run = await t.db.prisma.jobRun.findUniqueOrThrow({ where: { job: 'valuation' } });
    expect(run).toMatchObject({ lastStartedAt: COMPUTED, lastOkAt: COMPUTED, lastError: null });
    // A scheduled run of an already valued date is skipped; a forced one (the CLI) recomputes.
    expect(await runValuationJob(t.db, parseDate('2026-07-17'), { now: () => COMPUTED })).toEqual({ status: 'already_done', date: '2026-07-17' });
    const held = await t.db.withLock('quotegate:valuation', () => runValuationJob(t.db, parseDate('2026-07-17'), { force: true }));
    expect(held).toEqual({ acquired: true, result: { status: 'locked' } });
  });

  it('publishes the CSCP / mid quote in CNY with valuation, no quantity, changed_at = fresh_at = computation time', async () => {
    const q = await cscp(TWO);
    expect(q).toMatchObject({
      market_code: 'CSCP',
      provider_code: 'CSCP',
      side: 'mid',
      market_currency_code: 'CNY',
      quantity: null,
      is_quantity_minimum: null,
      is_all_items_same_price: null,
      observed_at: null,
      delisted_at: null,
      changed_at: COMPUTED.toISOString(),
      fresh_at: COMPUTED.toISOString(),
    });
    expectKeys(q.valuation, VALUATION_KEYS);
    expect(q.valuation).toMatchObject({ valuation_date: '2026-07-17', is_two_sided: true, ask_quote_count: 3, bid_quote_count: 1 });
    // Two-sided: mid = (ask + bid) / 2; the bid is BUFF163's 211 CNY after 2.5 % sale and 1 % withdraw fees.
    expect(q.valuation.bid_amount).toBe('203.66775'); // 211 x 0.96525 = 203.66775 (one source: its cash amount, 6 decimals)
    // mid = (ask + bid) / 2, half-even to 6 decimals, in decimal (a float midpoint misjudges the half)
    const mid = new Decimal(q.valuation.ask_amount).plus(q.valuation.bid_amount).div(2).toDecimalPlaces(6, Decimal.ROUND_HALF_EVEN);
    expect(q.market_price_amount).toBe(mid.toString());
    // Every market quote keeps valuation null; the CSCP quote sorts among them by market code.
    const all = await pricesOf(TWO);
    expect(all.map((m: { market_code: string; side: string }) => `${m.market_code}/${m.side}`)).toEqual(['BUFF163/ask', 'BUFF163/bid', 'CSCP/mid', 'CSFLOAT/ask', 'YOUPIN/ask']);
    for (const m of all) if (m.market_code !== 'CSCP') expect(m.valuation).toBeNull();
  });

  it('credibility = e^(-uncertainty) to 1e-12, and bid_amount is null exactly when one-sided', async () => {
    for (const name of [TWO, ONE, CROSSED]) {
      const v = (await cscp(name)).valuation;
      expect(v.uncertainty).toBeGreaterThan(0);
      expect(Math.abs(v.credibility - Math.exp(-v.uncertainty))).toBeLessThan(1e-12);
      expect(v.bid_amount === null).toBe(!v.is_two_sided);
      expect(v.bid_quote_count === 0).toBe(!v.is_two_sided);
    }
  });

  it('one-sided: asks only, or a crossed bid excluded; the mid is the ask less the comparable half-spread', async () => {
    const one = (await cscp(ONE)).valuation;
    expect(one).toMatchObject({ is_two_sided: false, bid_amount: null, ask_quote_count: 2, bid_quote_count: 0 });
    const crossed = await cscp(CROSSED);
    expect(crossed.valuation).toMatchObject({ is_two_sided: false, bid_amount: null, ask_quote_count: 2, bid_quote_count: 0 });
    // The fillers' half-spread: ask 100 / 0.98, bid 92 x 0.96525 -> h = ln(ask / mid).
    const ask = 100 / 0.98;
    const h = Math.log(ask / ((ask + 92 * 0.96525) / 2));
    expect(Number(crossed.market_price_amount)).toBeCloseTo(Number(crossed.valuation.ask_amount) * Math.exp(-h), 3);
    // Only bids: no valuation at all.
    expect(await pricesOf(BIDLESS_MARKETS, '&side=mid')).toEqual([]);
  });

  it('the batch and GraphQL carry the same CSCP quote; side=mid filters to it', async () => {
    const direct = await cscp(TWO);
    const batch = expectEnvelope(await t.post('/prices/batch', { market_hash_names: [TWO, ONE, 'Unknown'], side: 'mid' }, t.auth()));
    expect(batch.items.map((i: { markets: unknown[] }) => i.markets.length)).toEqual([1, 1, 0]);
    expect(batch.items[0].markets[0]).toEqual(direct);
    const g = await t.gql(
      `query($n: String!) { prices(marketHashName: $n, markets: ["CSCP"]) { markets { marketCode side marketPriceAmount quantity valuation { valuationDate credibility uncertainty isTwoSided askAmount bidAmount askQuoteCount bidQuoteCount } } } }`,
      { n: TWO },
      t.auth(),
    );
    expect(g.body.data.prices.markets).toEqual([
      {
        marketCode: 'CSCP',
        side: 'mid',
        marketPriceAmount: direct.market_price_amount,
        quantity: null,
        valuation: {
          valuationDate: '2026-07-17',
          credibility: direct.valuation.credibility,
          uncertainty: direct.valuation.uncertainty,
          isTwoSided: true,
          askAmount: direct.valuation.ask_amount,
          bidAmount: direct.valuation.bid_amount,
          askQuoteCount: 3,
          bidQuoteCount: 1,
        },
      },
    ]);
  });

  it('the export: side=mid holds only valuations (every valued item), side=all includes them', async () => {
    await runExportSnapshots(t.db, { appIds: ['730'], sides: ['mid', 'all'] });
    const { key } = await createAccount(t.db, { credits: 100n });
    const download = async (side: string) => {
      const res = await t.app.fetch(new Request(`http://test/prices/export?side=${side}`, { headers: { 'X-API-Key': key } }));
      expect(res.status).toBe(200);
      return JSON.parse(zlib.gunzipSync(Buffer.from(await res.arrayBuffer())).toString('utf8'));
    };
    const mid = await download('mid');
    expect(mid.items).toHaveLength(33);
    for (const item of mid.items) {
      expect(item.markets).toHaveLength(1);
      expect(item.markets[0]).toMatchObject({ market_code: 'CSCP', side: 'mid' });
    }
    expect(mid.items.find((i: { market_hash_name: string }) => i.market_hash_name === TWO).markets[0]).toEqual(await cscp(TWO));
    const all = await download('all');
    const item = all.items.find((i: { market_hash_name: string }) => i.market_hash_name === TWO);
    expect(item.markets).toEqual(await pricesOf(TWO));
  });
});

describe('retention', () => {
  it('keeps the closes of the 10 newest days (the job needs 8) and prunes older ones', async () => {
    const { pruneValuationData } = await import('../../src/valuation/daily.js');
    const rows = [];
    for (let d = 14; d <= 31; d++) rows.push(cny('Retention Item', 'BUFF163', 'ask', `${d}`, d));
    await ingestQuotes(t.db, rows);
    const days = async () =>
      (
        await t.db.query<{ day: string }>(
          `SELECT c.day::text AS day FROM daily_close c JOIN item i ON i.id = c.item_id WHERE i.market_hash_name = 'Retention Item' ORDER BY 1`,
        )
      ).map((r) => r.day);
    expect(await days()).toHaveLength(18);
    await pruneValuationData(t.db);
    expect(await days()).toEqual(Array.from({ length: 10 }, (_, i) => `2026-07-${22 + i}`));
    // The valuations of 2026-07-17 stay: the newest valued date.
    expect((await cscp(TWO)).valuation.valuation_date).toBe('2026-07-17');
  });
});
