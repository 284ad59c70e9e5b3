/**
 * The collector ingestion API (GraphQL `ingestQuotes`, `completeMarketScan`) as a collector and a client
 * see it: machine tokens only, row-named 422s, all-or-nothing batches, the state rules, daily closes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceToken } from '../../src/accounts/accounts.js';
import { ingestBatch } from '../../src/quotes/ingestion.js';
import type { QuoteObservation } from '../../src/validation/ingest.js';
import { obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope } from '../helpers/shapes.js';

let t: TestApp;
let machine: Record<string, string>;

const INGEST = `mutation($q: [SourceQuoteInput!]!) { ingestQuotes(quotes: $q) { received inserted updated skipped } }`;
const SCAN = `mutation($m: String!, $p: String!, $s: DateTime!, $c: DateTime!, $d: Boolean!) {
  completeMarketScan(marketCode: $m, providerCode: $p, startedAt: $s, completedAt: $c, delistUnseen: $d) { freshened delisted } }`;

/** A collector row (GraphQL input) with defaults: BUFF163 direct ask, 10 CNY, quantity 5. */
const row = (name: string, over: Record<string, unknown> = {}) => ({
  marketHashName: name,
  marketCode: 'BUFF163',
  providerCode: 'BUFF163',
  side: 'ask',
  currencyCode: 'CNY',
  price: '10',
  quantity: 5,
  isQuantityMinimum: false,
  isAllItemsSamePrice: false,
  observedAt: '2026-07-16T10:00:00.000Z',
  ...over,
});

const quote = async (name: string, market = 'BUFF163', side = 'ask') => {
  const r = await t.get(`/prices?market_hash_name=${encodeURIComponent(name)}&markets=${market}&side=${side}`, t.auth());
  if (r.status === 404) return undefined;
  return expectEnvelope(r).markets[0];
};
const count = async (sql: string, ...params: unknown[]) => ((await t.db.query<{ n: number }>(sql, params)) as { n: number }[])[0]!.n;

beforeAll(async () => {
  t = await testApp();
  machine = { Authorization: `Bearer ${(await createServiceToken(t.db, 'collector')).token}` };
});
afterAll(async () => {
  await t?.close();
});

describe('ingestQuotes', () => {
  it('is callable only with a machine service token', async () => {
    expect((await t.gql(INGEST, { q: [row('Auth Item')] })).body.errors[0].extensions.code).toBe('unauthorized');
    expect((await t.gql(INGEST, { q: [row('Auth Item')] }, t.auth())).body.errors[0].extensions.code).toBe('forbidden');
    expect(await quote('Auth Item')).toBeUndefined();
  });

  it('applies a batch; the quotes appear on /prices in the market currency', async () => {
    const r = await t.gql(INGEST, { q: [row('Batch Item', { price: '12.50' }), row('Batch Item', { side: 'bid', price: '11.9', quantity: 3 }), row('Batch Item', { marketCode: 'SKINPORT', providerCode: 'CSGOTRADER', currencyCode: 'EUR', price: '1.61', quantity: null })] }, machine);
    expect(r.body.data.ingestQuotes).toEqual({ received: 3, inserted: 3, updated: 0, skipped: 0 });
    expect(await quote('Batch Item')).toMatchObject({ market_price_amount: '12.5', quantity: 5, provider_code: 'BUFF163', market_currency_code: 'CNY' });
    expect(await quote('Batch Item', 'BUFF163', 'bid')).toMatchObject({ market_price_amount: '11.9', quantity: 3 });
    expect(await quote('Batch Item', 'SKINPORT')).toMatchObject({ market_price_amount: '1.61', provider_code: 'CSGOTRADER', quantity: null, market_currency_code: 'EUR' });
  });

  it('changed_at stays when only observed_at moves; a price change moves it; a replay changes nothing', async () => {
    await t.gql(INGEST, { q: [row('Clock Item', { observedAt: '2026-07-16T08:00:00Z' })] }, machine);
    const again = await t.gql(INGEST, { q: [row('Clock Item', { observedAt: '2026-07-16T09:30:00Z' })] }, machine);
    expect(again.body.data.ingestQuotes).toMatchObject({ updated: 1 });
    let q = await quote('Clock Item');
    expect(q).toMatchObject({ changed_at: '2026-07-16T08:00:00.000Z', observed_at: '2026-07-16T09:30:00.000Z', fresh_at: '2026-07-16T09:30:00.000Z' });
    await t.gql(INGEST, { q: [row('Clock Item', { observedAt: '2026-07-16T11:00:00Z', price: '10.01' })] }, machine);
    q = await quote('Clock Item');
    expect(q).toMatchObject({ changed_at: '2026-07-16T11:00:00.000Z', market_price_amount: '10.01' });
    const replay = await t.gql(INGEST, { q: [row('Clock Item', { observedAt: '2026-07-16T09:30:00Z' })] }, machine);
    expect(replay.body.data.ingestQuotes).toEqual({ received: 1, inserted: 0, updated: 0, skipped: 1 });
    expect(await quote('Clock Item')).toEqual(q);
  });

  it('names every invalid row (quotes[i].field) with 422 and applies nothing', async () => {
    const q = [
      row('Valid One'),
      row('Bad Price', { price: '1e5' }),
      row('Bad Market', { marketCode: 'nope' }),
      row('Neg Qty', { quantity: -1 }),
      row('Bad Side', { side: 'mid' }),
      row('Bad Time', { observedAt: 'yesterday' }),
      row('Future', { observedAt: new Date(Date.now() + 3_600_000).toISOString() }),
      row('Year Zero', { observedAt: '0000-01-01T00:00:00Z' }),
    ];
    const r = await t.gql(INGEST, { q }, machine);
    expect(r.status).toBe(422);
    const e = r.body.errors[0];
    expect(e.extensions.code).toBe('validation_failed');
    expect(e.extensions.details.errors.map((d: { field: string }) => d.field)).toEqual([
      'quotes[1].price',
      'quotes[2].marketCode',
      'quotes[3].quantity',
      'quotes[4].side',
      'quotes[5].observedAt',
      'quotes[6].observedAt',
      'quotes[7].observedAt',
    ]);
    expect(await quote('Valid One')).toBeUndefined();
  });

  it('checks rows against the catalogue: a known, current market in its own currency', async () => {
    const r = await t.gql(
      INGEST,
      { q: [row('Cat A', { marketCode: 'NOSUCHMARKET' }), row('Cat B', { currencyCode: 'USD' }), row('Cat C', { marketCode: 'OPSKINS', currencyCode: 'USD' }), row('Cat D', { marketCode: 'CSCP' })] },
      machine,
    );
    expect(r.status).toBe(422);
    const fields = r.body.errors[0].extensions.details.errors.map((d: { field: string; message: string }) => `${d.field}: ${d.message}`);
    expect(fields).toEqual(['quotes[3].marketCode: CSCP is the valuation, not a market']);
    const r2 = await t.gql(INGEST, { q: [row('Cat A', { marketCode: 'NOSUCHMARKET' }), row('Cat B', { currencyCode: 'USD' }), row('Cat C', { marketCode: 'OPSKINS', currencyCode: 'USD' })] }, machine);
    expect(r2.body.errors[0].extensions.details.errors).toEqual([
      { location: 'argument', field: 'quotes[0].marketCode', message: 'unknown market NOSUCHMARKET (see GET /websites)' },
      { location: 'argument', field: 'quotes[1].currencyCode', message: 'must be CNY, the currency BUFF163 quotes in' },
      { location: 'argument', field: 'quotes[2].marketCode', message: 'market OPSKINS is deprecated' },
    ]);
  });

  it('takes 10,000 rows in one batch and refuses 10,001; one bad row in 10,000 applies none', async () => {
    const many = Array.from({ length: 10_000 }, (_, i) => row(`Bulk ${i}`, { price: `${1 + Math.floor(i / 100)}.${String(i % 100).padStart(2, '0')}` }));
    const bad = [...many.slice(0, 9_999), row('Bulk 9999', { price: '-1' })];
    const refused = await t.gql(INGEST, { q: bad }, machine);
    expect(refused.body.errors[0].extensions.details.errors.map((d: { field: string }) => d.field)).toEqual(['quotes[9999].price']);
    expect(await count(`SELECT count(*)::int AS n FROM item WHERE market_hash_name LIKE 'Bulk %'`)).toBe(0);
    // The 10,000-row body is over the public 2 MiB limit: only a valid machine token lifts it.
    const body = JSON.stringify({ query: INGEST, variables: { q: many } });
    expect(Buffer.byteLength(body)).toBeGreaterThan(2 * 1024 * 1024);
    expect((await t.gql(INGEST, { q: many }, t.auth())).status).toBe(413);
    expect((await t.gql(INGEST, { q: many }, { Authorization: 'Bearer qgs_' + 'A'.repeat(32) })).status).toBe(413);
    const ok = await t.gql(INGEST, { q: many }, machine);
    expect(ok.body.data.ingestQuotes).toEqual({ received: 10_000, inserted: 10_000, updated: 0, skipped: 0 });
    const tooMany = await t.gql(INGEST, { q: [...many, row('Bulk 10000')] }, machine);
    expect(tooMany.body.errors[0].extensions.details.errors).toEqual([{ location: 'argument', field: 'quotes', message: 'must hold 1-10000 quotes' }]);
  });

  it('rolls the whole batch back when the database refuses a row in a later statement', async () => {
    const rows: QuoteObservation[] = Array.from({ length: 5_001 }, (_, i) => obs(`Atomic ${i}`));
    // Past the shape rules (the service is called directly): a market code longer than the column allows.
    rows[5_000] = obs('Atomic 5000', { marketCode: 'M'.repeat(40) });
    await expect(ingestBatch(t.db, rows)).rejects.toThrow();
    expect(await count(`SELECT count(*)::int AS n FROM source_quote q JOIN item i ON i.id = q.item_id WHERE i.market_hash_name LIKE 'Atomic %'`)).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM item WHERE market_hash_name LIKE 'Atomic %'`)).toBe(0);
  });

  it('writes the last state of each UTC day as that day\'s close', async () => {
    await t.gql(
      INGEST,
      {
        q: [
          row('Close Item', { price: '20', observedAt: '2026-07-14T09:00:00Z' }),
          row('Close Item', { price: '21', observedAt: '2026-07-14T18:00:00Z' }),
          row('Close Item', { price: '22', observedAt: '2026-07-15T07:00:00Z' }),
          row('Close Item', { price: null, delisted: true, observedAt: '2026-07-16T07:00:00Z' }),
        ],
      },
      machine,
    );
    const closes = await t.db.query<{ day: string; price: string; quantity: number; delisted: boolean; confirmed_at: Date }>(
      `SELECT c.day::text AS day, c.price::text AS price, c.quantity, c.delisted, c.confirmed_at FROM daily_close c JOIN item i ON i.id = c.item_id
        WHERE i.market_hash_name = 'Close Item' ORDER BY c.day`,
    );
    expect(closes.map((c) => [c.day, Number(c.price), c.quantity, c.delisted])).toEqual([
      ['2026-07-14', 21, 5, false],
      ['2026-07-15', 22, 5, false],
      ['2026-07-16', 22, 0, true],
    ]);
    expect(closes[0]!.confirmed_at).toEqual(new Date('2026-07-14T18:00:00Z'));
  });
});

describe('completeMarketScan', () => {
  const vars = (over: Record<string, unknown> = {}) => ({ m: 'YOUPIN', p: 'YOUPIN', s: '2026-07-16T12:00:00Z', c: '2026-07-16T13:00:00Z', d: false, ...over });

  beforeAll(async () => {
    await t.gql(
      INGEST,
      {
        q: [
          row('Scan Seen', { marketCode: 'YOUPIN', providerCode: 'YOUPIN', price: '30', observedAt: '2026-07-16T12:30:00Z' }),
          row('Scan Unseen', { marketCode: 'YOUPIN', providerCode: 'YOUPIN', price: '40', observedAt: '2026-07-16T06:00:00Z' }),
          row('Scan Unseen', { marketCode: 'YOUPIN', providerCode: 'CSGOTRADER', price: '41', observedAt: '2026-07-16T06:00:00Z' }),
        ],
      },
      machine,
    );
  });

  it('is machine-only and validates its arguments', async () => {
    expect((await t.gql(SCAN, vars(), t.auth())).body.errors[0].extensions.code).toBe('forbidden');
    const bad = await t.gql(SCAN, vars({ m: 'NOPE', s: '2026-07-16T14:00:00Z', c: '2026-07-16T13:00:00Z' }), machine);
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].extensions.details.errors.map((d: { field: string }) => d.field)).toEqual(['startedAt', 'marketCode']);
  });

  it('moves fresh_at of the market\'s quotes and delists nothing unless asked', async () => {
    const r = await t.gql(SCAN, vars(), machine);
    expect(r.body.data.completeMarketScan).toEqual({ freshened: 2, delisted: 0 });
    expect(await quote('Scan Unseen', 'YOUPIN')).toMatchObject({ provider_code: 'YOUPIN', fresh_at: '2026-07-16T13:00:00.000Z', changed_at: '2026-07-16T06:00:00.000Z', delisted_at: null, quantity: 5 });
  });

  it('with delistUnseen, delists what the scan did not see (last price kept); the other provider still lists it', async () => {
    const r = await t.gql(SCAN, vars({ s: '2026-07-16T12:00:00Z', c: '2026-07-16T14:00:00Z', d: true }), machine);
    expect(r.body.data.completeMarketScan).toEqual({ freshened: 2, delisted: 1 });
    expect(await quote('Scan Seen', 'YOUPIN')).toMatchObject({ delisted_at: null, quantity: 5, fresh_at: '2026-07-16T14:00:00.000Z' });
    // The market is delisted only when every source delisted it: the aggregator's listed quote is shown.
    expect(await quote('Scan Unseen', 'YOUPIN')).toMatchObject({ provider_code: 'CSGOTRADER', delisted_at: null });
    const direct = await t.db.query<{ price: string; quantity: number; delisted_at: Date; changed_at: Date; observed_at: Date }>(
      `SELECT q.price::text AS price, q.quantity, q.delisted_at, q.changed_at, q.observed_at FROM source_quote q JOIN item i ON i.id = q.item_id
        WHERE i.market_hash_name = 'Scan Unseen' AND q.provider_code = 'YOUPIN'`,
    );
    expect(direct[0]).toMatchObject({ quantity: 0, delisted_at: new Date('2026-07-16T14:00:00Z'), changed_at: new Date('2026-07-16T14:00:00Z'), observed_at: new Date('2026-07-16T06:00:00Z') });
    expect(Number(direct[0]!.price)).toBe(40);
    // An older observation arriving late does not relist it.
    const late = await t.gql(INGEST, { q: [row('Scan Unseen', { marketCode: 'YOUPIN', providerCode: 'YOUPIN', price: '40', observedAt: '2026-07-16T07:00:00Z' })] }, machine);
    expect(late.body.data.ingestQuotes.skipped).toBe(1);
    // The scan confirmed the day's close of every quote of the market.
    const closes = await t.db.query<{ delisted: boolean; confirmed_at: Date }>(
      `SELECT c.delisted, c.confirmed_at FROM daily_close c JOIN item i ON i.id = c.item_id
        WHERE i.market_hash_name = 'Scan Unseen' AND c.provider_code = 'YOUPIN' AND c.day = '2026-07-16'`,
    );
    expect(closes).toEqual([{ delisted: true, confirmed_at: new Date('2026-07-16T14:00:00Z') }]);
  });
});
