/**
 * Price history as clients see it (issue: price history): candles written by ingestion in the quote's
 * transaction (open/high/low/close over several observations of a day, delisting days, scan-confirmed days,
 * replays idempotent), kept through compaction into monthly rows and the pruning of closes, imported series of
 * their own kind, the CSCP series with its band, and both faces: GET /prices/history (envelope, billing, 422
 * details, 404, 401; every answer checked against /openapi.json by the test app) and GraphQL (`priceHistory`,
 * `Item.history` nested with quotes and fee chains in one query).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope, expectError } from '../helpers/shapes.js';
import { completeMarketScanTx, ingestBatch } from '../../src/quotes/ingestion.js';
import { compactHistory, itemIdOf, loadItemHistory } from '../../src/history/candles.js';
import { importHistory } from '../../src/history/import.js';
import { pruneValuationData } from '../../src/valuation/daily.js';
import { createAccount } from '../../src/accounts/accounts.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
const OTHER = 'AWP | Asiimov (Field-Tested)';
const at = (iso: string) => new Date(iso);
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
const HISTORY = (q: string) => `/prices/history?market_hash_name=${encodeURIComponent(ITEM)}&${q}`;

let t: TestApp;
let itemId: number;

/** The BUFF163 ask candles of ITEM as the service reads them, by date. */
async function buffAsk(from = '2026-07-01', to = '2026-07-31', interval: 'day' | 'week' | 'month' = 'day') {
  const h = await loadItemHistory(t.db, { itemId, markets: ['BUFF163'], series: ['ask'], from, to, interval });
  return h.series[0]?.candles ?? [];
}

beforeAll(async () => {
  t = await testApp();
  // 2026-07-14: four observations in the day (100 -> 120 -> 90 -> 110); 07-15: one; 07-16: delisted at noon.
  await ingestBatch(t.db, [
    obs(ITEM, { price: '100', quantity: 7, observedAt: at('2026-07-14T01:00:00Z') }),
    obs(ITEM, { price: '120', quantity: 6, observedAt: at('2026-07-14T05:00:00Z') }),
    obs(ITEM, { price: '90.5', quantity: 9, observedAt: at('2026-07-14T09:00:00Z') }),
    obs(ITEM, { price: '110', quantity: 8, observedAt: at('2026-07-14T20:00:00Z') }),
    obs(ITEM, { price: '111.25', quantity: 4, observedAt: at('2026-07-15T03:00:00Z') }),
    obs(ITEM, { price: null, quantity: 0, delisted: true, observedAt: at('2026-07-16T12:00:00Z') }),
    obs(ITEM, { side: 'bid', price: '95', quantity: 2, observedAt: at('2026-07-14T02:00:00Z') }),
    obs(ITEM, { marketCode: 'STEAM', providerCode: 'STEAM', currencyCode: 'USD', price: '15.01', observedAt: at('2026-07-14T02:00:00Z') }),
    // The same market through an aggregator: the market's own feed takes precedence on a day both report.
    obs(ITEM, { providerCode: 'CSGOTRADER', price: '99', observedAt: at('2026-07-14T00:00:00Z') }),
  ]);
  itemId = (await itemIdOf(t.db, '730', ITEM))!;
});
afterAll(async () => {
  await t.close();
});

describe('candles written by ingestion', () => {
  it('a day with several observations gives its open, high, low, close, count and last quantity', async () => {
    const days = await buffAsk();
    expect(days.map((d) => [d.date, d.open, d.high, d.low, d.close, d.observations, d.quantity, d.delisted])).toEqual([
      ['2026-07-14', '100', '120', '90.5', '110', 4, 8, false],
      ['2026-07-15', '111.25', '111.25', '111.25', '111.25', 1, 4, false],
      // A delisting keeps the last price and ends the day delisted with quantity 0.
      ['2026-07-16', '111.25', '111.25', '111.25', '111.25', 1, 0, true],
    ]);
  });

  it('replaying the same observations changes no candle', async () => {
    const before = await buffAsk();
    const r = await ingestBatch(t.db, [
      obs(ITEM, { price: '100', quantity: 7, observedAt: at('2026-07-14T01:00:00Z') }),
      obs(ITEM, { price: '111.25', quantity: 4, observedAt: at('2026-07-15T03:00:00Z') }),
    ]);
    expect(r.skipped).toBe(2);
    expect(await buffAsk()).toEqual(before);
  });

  it('a full scan confirms a day without observations: a candle with 0 observations', async () => {
    await ingestBatch(t.db, [obs(OTHER, { price: '500', observedAt: at('2026-07-10T08:00:00Z') })]);
    await completeMarketScanTx(t.db, { marketCode: 'BUFF163', providerCode: 'BUFF163', startedAt: at('2026-07-11T00:00:00Z'), completedAt: at('2026-07-11T06:00:00Z'), delistUnseen: false });
    const other = (await itemIdOf(t.db, '730', OTHER))!;
    const h = await loadItemHistory(t.db, { itemId: other, markets: ['BUFF163'], series: ['ask'], from: '2026-07-10', to: '2026-07-11', interval: 'day' });
    expect(h.series[0]!.candles.map((d) => [d.date, d.close, d.observations])).toEqual([
      ['2026-07-10', '500', 1],
      ['2026-07-11', '500', 0],
    ]);
  });

  it('the market\'s own feed wins over an aggregator on the same day (the quotes\' precedence)', async () => {
    const [d14] = await buffAsk('2026-07-14', '2026-07-14');
    expect(d14!.open).toBe('100');
  });

  it('weeks (ISO, dated by Monday) and months aggregate the days', async () => {
    // 2026-07-14 is a Tuesday: its week starts Monday 2026-07-13.
    expect((await buffAsk('2026-07-01', '2026-07-31', 'week')).map((w) => [w.date, w.open, w.high, w.low, w.close, w.observations, w.days, w.delisted])).toEqual([
      ['2026-07-13', '100', '120', '90.5', '111.25', 6, 3, true],
    ]);
    expect((await buffAsk('2026-07-01', '2026-07-31', 'month')).map((m) => [m.date, m.close, m.days])).toEqual([['2026-07-01', '111.25', 3]]);
  });
});

describe('compaction and retention', () => {
  it('closed days move into monthly rows unchanged; pruned closes stay readable; a late change is compacted again', async () => {
    const before = await buffAsk();
    const copied = await compactHistory(t.db, at('2026-07-17T00:00:00Z'));
    expect(copied).toBeGreaterThan(0);
    const [{ n }] = (await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM candle_month WHERE item_id = $1`, [itemId])) as [{ n: number }];
    expect(n).toBeGreaterThan(0);
    expect(await compactHistory(t.db, at('2026-07-17T00:00:00Z'))).toBe(0); // nothing left to copy
    // Pushing the newest close day 20 days on prunes these closes: their candles are read from candle_month.
    await ingestBatch(t.db, [obs('Retention Marker', { price: '1', observedAt: at('2026-08-10T00:00:00Z') })]);
    await pruneValuationData(t.db, at('2026-08-11T00:00:00Z'));
    const [{ left }] = (await t.db.query<{ left: number }>(`SELECT count(*)::int AS left FROM daily_close WHERE item_id = $1`, [itemId])) as [{ left: number }];
    expect(left).toBe(0);
    expect(await buffAsk()).toEqual(before);
  });

  it('a day still in daily_close replaces its compacted copy on read, and its re-compaction wins', async () => {
    await ingestBatch(t.db, [obs(ITEM, { price: '130', quantity: 3, observedAt: at('2026-08-09T10:00:00Z') })]);
    await compactHistory(t.db, at('2026-08-10T00:00:00Z'));
    await ingestBatch(t.db, [obs(ITEM, { price: '140', quantity: 2, observedAt: at('2026-08-09T11:00:00Z') })]);
    const read = async () => (await buffAsk('2026-08-09', '2026-08-09')).map((d) => [d.open, d.high, d.low, d.close, d.observations, d.quantity]);
    expect(await read()).toEqual([['130', '140', '130', '140', 2, 2]]);
    await compactHistory(t.db, at('2026-08-10T00:00:00Z'));
    await t.db.query(`DELETE FROM daily_close WHERE item_id = $1`, [itemId]);
    expect(await read()).toEqual([['130', '140', '130', '140', 2, 2]]);
  });
});

describe('imported history is its own kind of series', () => {
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-history-'));
    const buff = {
      [ITEM]: [
        [1672617600, 1673827200, 1675036800, 1706486400],
        [8700, 0, 8850, 9345],
        [0, 0, 22330, 17885],
      ],
      'Unknown Buff Variant Tier1': [[1672617600], [100], [0]],
    };
    fs.mkdirSync(path.join(dir, 'buff'));
    fs.writeFileSync(path.join(dir, 'buff', 'price-history-weekly-2.json.gz'), zlib.gzipSync(JSON.stringify(buff)));
    const csv = ['market_hash_name,day,mean_price_usd,median_price_usd,volume', `${ITEM},2026-01-01,39.977500000000006,39.977500000000006,20`, `${ITEM},2026-01-02,41.5,41.5,31`, `"${OTHER}",2026-01-01,100,100,3`].join('\n');
    fs.writeFileSync(path.join(dir, 'steam_daily_sales_2026-01-01_to_01-02.csv.gz'), zlib.gzipSync(csv));
  });

  it('imports the Buff163 listing minimum and Steam sales, skips unknown names, and a replay writes the same rows', async () => {
    const known = new Set([ITEM, OTHER]);
    const first = await importHistory(t.db, dir, known);
    expect(first).toMatchObject({ points: 6, skippedNames: 1 });
    const rows = async () => t.db.query<{ k: string }>(`SELECT series::text || month::text || encode(data, 'hex') AS k FROM candle_month WHERE provider_code IN ('BUFF_ARCHIVE', 'STEAM_PRICEHISTORY') ORDER BY 1`);
    const snapshot = await rows();
    await importHistory(t.db, dir, known);
    expect(await rows()).toEqual(snapshot);
    expect(await itemIdOf(t.db, '730', 'Unknown Buff Variant Tier1')).toBeNull();
  });

  it('serves them labelled: listing_minimum on the ask side, sales with volume, never as quotes', async () => {
    const res = await t.get(HISTORY('from=2023-01-01&to=2026-01-31&interval=month'), t.auth());
    const data = expectEnvelope(res);
    const byKind = Object.fromEntries(data.series.map((s: any) => [`${s.market_code}/${s.series}`, s]));
    expect(byKind['BUFF163/listing_minimum']).toMatchObject({ side: 'ask', currency_code: 'CNY' });
    // January 2023: 87 (2 Jan, no listing count upstream before 2023-01-25), a 0 point skipped, 88.5 (30 Jan, 22,330 listings).
    expect(byKind['BUFF163/listing_minimum'].candles.map((c: any) => [c.date, c.open, c.close, c.observations, c.quantity])).toEqual([
      ['2023-01-01', '87', '88.5', 2, 22330],
      ['2024-01-01', '93.45', '93.45', 1, 17885],
    ]);
    const days = expectEnvelope(await t.get(HISTORY('from=2023-01-01&to=2023-01-31&side=ask'), t.auth()));
    expect(days.series.find((s: any) => s.series === 'listing_minimum').candles.map((c: any) => [c.date, c.close, c.quantity])).toEqual([
      ['2023-01-02', '87', null],
      ['2023-01-30', '88.5', 22330],
    ]);
    expect(byKind['STEAM/sales']).toMatchObject({ side: null, currency_code: 'USD' });
    expect(byKind['STEAM/sales'].candles).toEqual([
      { date: '2026-01-01', open: '39.9775', high: '41.5', low: '39.9775', close: '41.5', observations: 2, quantity: null, volume: 51, delisted: false, days: 2 },
    ]);
    // The current quotes are untouched by imported history.
    const prices = expectEnvelope(await t.get(`/prices?market_hash_name=${encodeURIComponent(ITEM)}`, t.auth()));
    expect(prices.markets.map((m: any) => m.market_code)).not.toContain('BUFF_ARCHIVE');
    expect(prices.markets.filter((m: any) => m.market_code === 'STEAM')).toHaveLength(1);
  });
});

describe('GET /prices/history', () => {
  it('answers the envelope, billed 1 credit, with side and markets filters', async () => {
    const { key } = await createAccount(t.db, { credits: 10n });
    const res = await t.get(HISTORY('from=2026-07-01&to=2026-07-31&markets=BUFF163&side=bid'), bearer(key));
    const data = expectEnvelope(res);
    expect(expectEnvelope(await t.get('/me', bearer(key))).credit).toMatchObject({ used: 1 });
    expect(data).toMatchObject({ app_id: '730', market_hash_name: ITEM, from: '2026-07-01', to: '2026-07-31', interval: 'day', cscp: [] });
    expect(data.series.map((s: any) => [s.market_code, s.series, s.candles.length])).toEqual([['BUFF163', 'bid', 1]]);
    const ask = expectEnvelope(await t.get(HISTORY('from=2026-07-01&to=2026-07-31&side=ask'), t.auth()));
    expect(ask.series.map((s: any) => `${s.market_code}/${s.series}`)).toEqual(['BUFF163/ask', 'STEAM/ask']);
  });

  it('refuses bad dates, reversed and too long ranges and unknown intervals with 422 details, not billed', async () => {
    const { key } = await createAccount(t.db, { credits: 10n });
    const cases: [string, string][] = [
      ['from=2026-02-30', 'from'],
      ['to=yesterday', 'to'],
      ['from=2026-07-10&to=2026-07-01', 'from'],
      ['from=2025-01-01&to=2026-07-01', 'from'],
      ['interval=hour', 'interval'],
      ['side=sideways', 'side'],
      ['markets=buff', 'markets.0'],
    ];
    for (const [q, field] of cases) {
      const res = await t.get(HISTORY(q), bearer(key));
      const err = expectError(res, 422, 'validation_failed');
      expect(err.details.errors).toEqual(expect.arrayContaining([expect.objectContaining({ location: 'query', field })]));
    }
    // A year is fine by week, five years by month.
    expectEnvelope(await t.get(HISTORY('from=2025-01-01&to=2026-07-01&interval=week'), bearer(key)));
    expectEnvelope(await t.get(HISTORY('from=2021-07-01&to=2026-07-01&interval=month'), bearer(key)));
    const me = expectEnvelope(await t.get('/me', bearer(key)));
    expect(me.credit).toMatchObject({ used: 2 });
  });

  it('404 for an item never seen, 401 without a key', async () => {
    expectError(await t.get(`/prices/history?market_hash_name=${encodeURIComponent('No Such Item')}`, t.auth()), 404, 'not_found');
    expectError(await t.get(HISTORY('')), 401, 'unauthorized');
  });

  it('the catalogue row and the OpenAPI operation', async () => {
    const rows = expectEnvelope(await t.get('/endpoints'));
    expect(rows.find((r: any) => r.path === '/prices/history')).toMatchObject({ method: 'GET', credit_cost: 1, rate_limit: { max_requests: 120, window_seconds: 60 }, roles: ['user'] });
    const doc = (await t.get('/openapi.json')).body;
    const op = doc.paths['/prices/history'].get;
    expect(op.operationId).toBe('getPriceHistory');
    expect(op['x-quotegate']).toMatchObject({ credit_cost: 1, path: '/prices/history' });
    expect(op.parameters.map((p: any) => p.name).sort()).toEqual(['app_id', 'from', 'interval', 'market_hash_name', 'markets', 'side', 'to']);
  });
});

describe('CSCP series and GraphQL', () => {
  beforeAll(async () => {
    await t.db.query(
      `INSERT INTO valuation (item_id, valuation_date, mid_amount, ask_amount, bid_amount, uncertainty, is_two_sided, ask_quote_count, bid_quote_count, computed_at)
       VALUES ($1, '2026-07-15', 100, 104, 96, 0.1, true, 3, 2, now()), ($1, '2026-07-16', 102, 106, NULL, 0.2, false, 3, 0, now())`,
      [itemId],
    );
  });

  it('serves each valuation with its band mid x e^(-/+u); side=mid gives only the CSCP series', async () => {
    const data = expectEnvelope(await t.get(HISTORY('from=2026-07-01&to=2026-07-31&side=mid'), t.auth()));
    expect(data.series).toEqual([]);
    expect(data.cscp).toEqual([
      { date: '2026-07-15', mid: '100', ask_amount: '104', bid_amount: '96', uncertainty: 0.1, band_low: '90.4837', band_high: '110.5171', is_two_sided: true },
      { date: '2026-07-16', mid: '102', ask_amount: '106', bid_amount: null, uncertainty: 0.2, band_low: '83.5105', band_high: '124.5831', is_two_sided: false },
    ]);
  });

  it('priceHistory equals the REST answer; billed as getPriceHistory', async () => {
    const rest = expectEnvelope(await t.get(HISTORY('from=2026-07-01&to=2026-07-31&interval=week'), t.auth()));
    const res = await t.gql(
      `query($n: String!) { priceHistory(marketHashName: $n, from: "2026-07-01", to: "2026-07-31", interval: WEEK) {
         from to interval series { marketCode series side currencyCode candles { date open high low close observations quantity volume delisted days } }
         cscp { date mid bandLow bandHigh } } }`,
      { n: ITEM },
      t.auth(),
    );
    expect(res.body.errors).toBeUndefined();
    const g = res.body.data.priceHistory;
    expect(g.series.map((s: any) => [s.marketCode, s.series, s.candles])).toEqual(rest.series.map((s: any) => [s.market_code, s.series, s.candles]));
    expect(g.cscp).toEqual(rest.cscp.map((p: any) => ({ date: p.date, mid: p.mid, bandLow: p.band_low, bandHigh: p.band_high })));
  });

  it('one query gives an item\'s quotes, their fee chains and a year of candles, within the cost limit', async () => {
    const res = await t.gql(
      `query($n: String!) { item(marketHashName: $n) {
         quotes { marketCode side marketPriceAmount website { feeSchedule { slots { sale { calculationChain { steps { __typename } } } } } } }
         history(from: "2025-08-01", to: "2026-07-31") { series { marketCode series candles { date close } } cscp { date mid } } } }`,
      { n: ITEM },
      t.auth(),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.item.quotes.length).toBeGreaterThan(0);
    expect(res.body.data.item.history.series.find((s: any) => s.marketCode === 'BUFF163' && s.series === 'ask').candles.length).toBeGreaterThan(0);
    // A bad range inside the traversal is the same 422.
    const bad = await t.gql(`query($n: String!) { item(marketHashName: $n) { history(from: "2026-07-10", to: "2026-07-01") { from } } }`, { n: ITEM }, t.auth());
    expect(bad.body.errors[0].extensions.code).toBe('validation_failed');
  });
});
