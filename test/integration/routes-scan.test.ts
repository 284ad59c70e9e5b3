/**
 * Arbitrage as a product (issue 44, point 3): routes priced by default (unknown-fee routes left out and counted,
 * or priced with the caller's fee profile), trade holds per market as data, the liquidity floor, and the
 * market-wide scan GET /prices/routes/top (GraphQL topRoutes): ranked by margin, filters held, charged once,
 * 422 for bad parameters and never charged then. Runs on PGlite and PostgreSQL (npm run test:pg).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope } from '../helpers/shapes.js';
import { ingestBatch } from '../../src/quotes/ingestion.js';
import { createAccount } from '../../src/accounts/accounts.js';
import fc from 'fast-check';
import { bestRoute, tradeRoutes } from '../../src/fees/routes.js';
import { loadFeeBook } from '../../src/valuation/daily.js';
import { toMoney } from '../../src/lib/money.js';
import type { MarketQuote } from '../../src/quotes/quotes.js';

const ALPHA = 'Scan | Alpha';
const BETA = 'Scan | Beta';
const GAMMA = 'Scan | Gamma';
const DELTA = 'Scan | Delta';
const HOLD = 'Scan | Hold';
const usd = (marketCode: string, price: string, over: Record<string, unknown> = {}) => ({ marketCode, providerCode: marketCode, currencyCode: 'USD', price, ...over });
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
const root = path.resolve(import.meta.dirname, '../..');
const holdsFile = JSON.parse(fs.readFileSync(path.join(root, 'data/trade-holds.json'), 'utf8'));
const websites = JSON.parse(fs.readFileSync(path.join(root, 'data/websites.json'), 'utf8')).websites;

let t: TestApp;

beforeAll(async () => {
  t = await testApp();
  await ingestBatch(t.db, [
    // Sale fees (data/fees.json): BITSKINS x 0.90, CSMONEY x 0.93, CSFLOAT x 0.98; C5GAME's is unknown.
    obs(ALPHA, usd('BITSKINS', '10')),
    obs(ALPHA, usd('CSFLOAT', '20')), // BITSKINS -> CSFLOAT: 19.6 / 10, margin 0.96
    obs(BETA, usd('BITSKINS', '10')),
    obs(BETA, usd('CSFLOAT', '12')), // 11.76 / 10: 0.176
    obs(GAMMA, usd('CSMONEY', '10', { quantity: 1 })),
    obs(GAMMA, usd('CSFLOAT', '15', { quantity: null })), // 14.7 / 10: 0.47
    obs(HOLD, usd('STEAM', '10')),
    obs(HOLD, usd('BITSKINS', '20')), // STEAM -> BITSKINS: 18 / 10: 0.8
    obs(DELTA, usd('BITSKINS', '10')),
    obs(DELTA, { marketCode: 'C5GAME', providerCode: 'C5GAME', currencyCode: 'CNY', price: '200' }), // C5GAME -> BITSKINS: 9 / 29.27...: < 0
  ]);
});
afterAll(async () => {
  await t.close();
});

const ROUTES = (name: string, q: string) => `/prices/routes?market_hash_name=${encodeURIComponent(name)}&${q}`;
const used = async (key: string) => expectEnvelope(await t.get('/me', bearer(key))).credit.used;

describe('routes priced by default', () => {
  it('leaves routes with an unknown fee out, counts them and says which fees are unknown; include_unpriced lists them', async () => {
    const data = expectEnvelope(await t.get(ROUTES(DELTA, 'currency=USD'), t.auth()));
    expect(data.routes).toEqual([]);
    expect(data.unpriced_left_out).toBe(2);
    expect(data.left_out_reason).toContain('deposit on BITSKINS');
    expect(data.left_out_reason).toContain('deposit on C5GAME');
    expect(data.left_out_reason).toContain('fee_profile');
    const all = expectEnvelope(await t.get(ROUTES(DELTA, 'currency=USD&include_unpriced=true'), t.auth()));
    expect(all.routes.map((r: any) => r.status)).toEqual(['unpriced', 'unpriced']);
    expect(all).toMatchObject({ unpriced_left_out: 0, left_out_reason: null });
  });

  it("prices an unknown fee with the caller's fee profile, marked as such; an official fee always wins over the profile", async () => {
    const data = expectEnvelope(await t.get(ROUTES(DELTA, 'currency=CNY&fund=balance&payout=balance&fee_profile=C5GAME:sale=0.05;BITSKINS:sale=0.5'), t.auth()));
    expect(data.unpriced_left_out).toBe(0);
    const toC5 = data.routes.find((r: any) => r.sell.market_code === 'C5GAME');
    // 200 CNY x (1 - 0.05) = 190 CNY, exactly (the caller's chain runs in any currency).
    expect(toC5).toMatchObject({ status: 'priced', fee_source: 'caller', sell: { amount: '190', caller_fees: ['sale'], priced: true } });
    expect(toC5.sell.steps[0]).toMatchObject({ purpose: 'sale', kind: 'fee', operator: 'mul', value: '0.95' });
    const toBitskins = data.routes.find((r: any) => r.sell.market_code === 'BITSKINS');
    // BITSKINS's official 10 % sale fee (x 0.9), not the profile's 50 %.
    expect(toBitskins).toMatchObject({ status: 'priced', fee_source: 'official', sell: { caller_fees: [] }, buy: { caller_fees: [] } });
    expect(toBitskins.sell.steps.find((s: any) => s.kind === 'fee')).toMatchObject({ operator: 'mul', value: '0.9' });
  });

  it('a malformed fee profile is 422 with each problem, and costs nothing', async () => {
    const a = await createAccount(t.db, { credits: 5n });
    const bad = await t.get(ROUTES(DELTA, 'currency=USD&fee_profile=C5GAME:sale=1;c5:fee=0.1;STEAM:sale=0.1,sale=0.2'), bearer(a.key));
    expect(bad.status).toBe(422);
    const fields = bad.body.error.details.errors.map((e: any) => e.field);
    expect(new Set(fields)).toEqual(new Set(['fee_profile']));
    expect(fields.length).toBeGreaterThanOrEqual(2);
    const dup = await t.get(ROUTES(DELTA, 'currency=USD&fee_profile=C5GAME:sale=0.1;C5GAME:withdraw=0.1'), bearer(a.key));
    expect(dup.status).toBe(422);
    expect(dup.body.error.details.errors).toEqual([expect.objectContaining({ field: 'fee_profile', message: expect.stringContaining('twice') })]);
    expect(await used(a.key)).toBe(0);
  });
});

describe('trade holds', () => {
  it('data/trade-holds.json gives every catalogue market a hold in days or null, each with a source or a reason', () => {
    const codes = holdsFile.holds.map((h: any) => h.market_code).sort();
    expect(codes).toEqual(websites.map((w: any) => w.code).sort());
    for (const h of holdsFile.holds) {
      if (h.hold_days === null) expect(h.note).toMatch(/unknown/i);
      else expect(h.source).toEqual(expect.any(String));
    }
    expect(holdsFile.holds.find((h: any) => h.market_code === 'STEAM')).toMatchObject({ hold_days: 7 });
  });

  it("each route answers its buy market's hold: Steam's 7-day trade protection when bought on Steam", async () => {
    const data = expectEnvelope(await t.get(ROUTES(HOLD, 'currency=USD&fund=balance&payout=balance'), t.auth()));
    const steam = data.routes.find((r: any) => r.buy.market_code === 'STEAM');
    expect(steam).toMatchObject({ hold_days: 7, hold_source: expect.stringContaining('Trade Protect') });
    for (const r of data.routes) {
      const row = holdsFile.holds.find((h: any) => h.market_code === r.buy.market_code);
      expect({ days: r.hold_days, source: r.hold_source, note: r.hold_note }).toEqual({ days: row.hold_days, source: row.source, note: row.note });
    }
  });
});

describe('liquidity floor', () => {
  it('min_quantity drops routes whose quote reports fewer items; a quote without a quantity is kept and flagged', async () => {
    const one = expectEnvelope(await t.get(ROUTES(GAMMA, 'currency=USD&fund=balance&payout=balance&min_quantity=1'), t.auth()));
    const route = one.routes.find((r: any) => r.buy.market_code === 'CSMONEY');
    expect(route).toMatchObject({ quantity_known: false, buy: { quantity: 1 }, sell: { quantity: null } });
    const two = expectEnvelope(await t.get(ROUTES(GAMMA, 'currency=USD&fund=balance&payout=balance&min_quantity=2'), t.auth()));
    expect(two.routes).toEqual([]); // CSMONEY reports 1 item on both routes (its ask is the buy leg of one, the sell leg of the other)
    const alpha = expectEnvelope(await t.get(ROUTES(ALPHA, 'currency=USD&fund=balance&payout=balance&min_quantity=5'), t.auth()));
    expect(alpha.routes[0]).toMatchObject({ quantity_known: true, buy: { quantity: 5 }, sell: { quantity: 5 } });
  });
});

describe('the market-wide scan (GET /prices/routes/top, GraphQL topRoutes)', () => {
  const TOP = (q: string) => `/prices/routes/top?currency=USD&fund=balance&payout=balance&${q}`;
  const summary = (data: any) => data.routes.map((r: any) => [r.market_hash_name, r.route.buy.market_code, r.route.sell.market_code, r.route.margin]);

  it('answers the best priced route of each item, ranked by margin, charged 5 credits once', async () => {
    const a = await createAccount(t.db, { credits: 100n });
    const res = await t.get(TOP(''), bearer(a.key));
    const data = expectEnvelope(res);
    expect(res.body.meta).toMatchObject({ billable: true, credit: { cost: 5 } });
    expect(data).toMatchObject({ app_id: '730', currency_code: 'USD', fund: 'balance', payout: 'balance' });
    const rows = summary(data);
    expect(rows.slice(0, 4)).toEqual([
      [ALPHA, 'BITSKINS', 'CSFLOAT', '0.96'],
      [HOLD, 'STEAM', 'BITSKINS', '0.8'],
      [GAMMA, 'CSMONEY', 'CSFLOAT', '0.47'],
      [BETA, 'BITSKINS', 'CSFLOAT', '0.176'],
    ]);
    // Delta's only priced route loses money; its route to C5GAME (unknown sale fee) is not ranked.
    expect(rows[4]).toEqual([DELTA, 'C5GAME', 'BITSKINS', expect.stringMatching(/^-0\./)]);
    expect(rows).toHaveLength(5);
    const margins = data.routes.map((r: any) => Number(r.route.margin));
    expect(margins).toEqual([...margins].sort((x, y) => y - x));
    expect(data.routes[1].route).toMatchObject({ hold_days: 7, status: 'priced', fee_source: 'official' });
    expect(await used(a.key)).toBe(5);
  });

  it('holds its filters: min_margin, limit, min_quantity, buy_on, min_credibility; fee_profile ranks an unknown-fee market', async () => {
    expect(summary(expectEnvelope(await t.get(TOP('min_margin=0.2'), t.auth()))).map((r: any) => r[0])).toEqual([ALPHA, HOLD, GAMMA]);
    expect(summary(expectEnvelope(await t.get(TOP('limit=2'), t.auth()))).map((r: any) => r[0])).toEqual([ALPHA, HOLD]);
    // Gamma's CSMONEY quote reports 1 item.
    expect(summary(expectEnvelope(await t.get(TOP('min_quantity=2&min_margin=0'), t.auth()))).map((r: any) => r[0])).toEqual([ALPHA, HOLD, BETA]);
    expect(summary(expectEnvelope(await t.get(TOP('buy_on=CSMONEY'), t.auth())))).toEqual([[GAMMA, 'CSMONEY', 'CSFLOAT', '0.47']]);
    // Every quote was observed months before the request: none is credible at 0.5.
    expect(expectEnvelope(await t.get(TOP('min_credibility=0.5'), t.auth())).routes).toEqual([]);
    // With the caller's 5 % sale fee on C5GAME, Delta's BITSKINS -> C5GAME route is priced: 200 CNY x 0.95 in USD over 10 USD.
    const profiled = expectEnvelope(await t.get(TOP('fee_profile=C5GAME:sale=0.05&limit=1'), t.auth()));
    expect(summary(profiled)).toEqual([[DELTA, 'BITSKINS', 'C5GAME', expect.any(String)]]);
    expect(profiled.routes[0].route).toMatchObject({ fee_source: 'caller', sell: { caller_fees: ['sale'] } });
    expect(Number(profiled.routes[0].route.margin)).toBeGreaterThan(1.7);
  });

  it('says which markets an unknown fee left out and how to bring them in (REST and GraphQL)', async () => {
    // Balance to balance: only the sale fee matters; C5GAME's is unknown in the official schedule.
    const balance = expectEnvelope(await t.get(TOP(''), t.auth()));
    expect(balance.unpriced_buy_markets).toEqual([]);
    expect(balance.unpriced_sell_markets).toContain('C5GAME');
    expect(balance.unpriced_sell_markets).toEqual([...balance.unpriced_sell_markets].sort());
    expect(balance.left_out_reason).toMatch(/^unknown official fee for selling \(sale\) on .*C5GAME.*; give your own rates with fee_profile/);
    expect(balance.left_out_reason).not.toMatch(/fund=balance|payout=balance/);
    // The caller's sale fee brings C5GAME in.
    const profiled = expectEnvelope(await t.get(TOP('fee_profile=C5GAME:sale=0.05'), t.auth()));
    expect(profiled.unpriced_sell_markets).not.toContain('C5GAME');
    // With cash, buying needs each market's deposit fee: markets without one are named, and the balance switches offered.
    const cash = expectEnvelope(await t.get('/prices/routes/top?currency=USD', t.auth()));
    expect(cash.unpriced_buy_markets.length).toBeGreaterThan(0);
    // A deprecated market (OPSKINS) takes no part in the scan, so it is never named.
    expect([...cash.unpriced_buy_markets, ...cash.unpriced_sell_markets]).not.toContain('OPSKINS');
    expect(cash.left_out_reason).toContain(`buying with cash (deposit) on ${cash.unpriced_buy_markets.join(', ')}`);
    expect(cash.left_out_reason).toMatch(/fund=balance/);
    const gql = await t.gql(`{ topRoutes(currency: "USD") { unpricedBuyMarkets unpricedSellMarkets leftOutReason } }`, {}, t.auth());
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.topRoutes).toEqual({ unpricedBuyMarkets: cash.unpriced_buy_markets, unpricedSellMarkets: cash.unpriced_sell_markets, leftOutReason: cash.left_out_reason });
  });

  it('GraphQL topRoutes gives the same ranking, billed as its row', async () => {
    const res = await t.gql(
      `{ topRoutes(currency: "USD", fund: balance, payout: balance, minMargin: "0", limit: 3) { currencyCode candidateItems routes { marketHashName route { margin holdDays feeSource buy { marketCode } sell { marketCode } } } } }`,
      {},
      t.auth(),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.topRoutes.routes.map((r: any) => [r.marketHashName, r.route.buy.marketCode, r.route.sell.marketCode, r.route.margin])).toEqual([
      [ALPHA, 'BITSKINS', 'CSFLOAT', '0.96'],
      [HOLD, 'STEAM', 'BITSKINS', '0.8'],
      [GAMMA, 'CSMONEY', 'CSFLOAT', '0.47'],
    ]);
    expect(res.body.extensions.billing).toMatchObject({ billable: true, credit: { cost: 5 } });
  });

  it('bad parameters are 422 with every problem listed and cost nothing; no key is 401', async () => {
    const a = await createAccount(t.db, { credits: 100n });
    const bad = await t.get('/prices/routes/top?currency=usd&limit=101&min_margin=5%25&min_quantity=-1&fee_profile=X&min_credibility=2', bearer(a.key));
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.errors.map((e: any) => e.field).sort()).toEqual(['currency', 'fee_profile', 'limit', 'min_credibility', 'min_margin', 'min_quantity']);
    expect((await t.get('/prices/routes/top?currency=USD&limit=0', bearer(a.key))).status).toBe(422);
    expect((await t.get('/prices/routes/top', bearer(a.key))).status).toBe(422); // currency is required
    const unknown = await t.get('/prices/routes/top?currency=XXX', bearer(a.key));
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.details.errors).toEqual([expect.objectContaining({ location: 'query', field: 'currency' })]);
    const gql = await t.gql(`{ topRoutes(currency: "USD", limit: 500) { candidateItems } }`, {}, bearer(a.key));
    expect(gql.body.errors?.[0]?.extensions?.code).toBe('validation_failed');
    expect((await t.get('/prices/routes/top?currency=USD')).status).toBe(401);
    expect(await used(a.key)).toBe(0);
  });

  it('is a documented, billed and limited catalogue row', async () => {
    const rows = expectEnvelope(await t.get('/endpoints'));
    expect(rows.find((r: any) => r.path === '/prices/routes/top')).toEqual({
      method: 'GET',
      path: '/prices/routes/top',
      premium: false,
      credit_cost: 5,
      recommended_interval_seconds: 300,
      rate_limit: { max_requests: 12, window_seconds: 60 },
      unit_pricing: null,
      roles: ['user'],
    });
    const doc = (await t.get('/openapi.json')).body;
    expect(doc.paths['/prices/routes/top'].get['x-quotegate']).toMatchObject({ credit_cost: 5, rate_limit: { max_requests: 12, window_seconds: 60 } });
  });
});

describe("the scan's exact step", () => {
  it("bestRoute (pairing only the cheapest and best-paying legs) is the first priced route of tradeRoutes, on generated quotes", async () => {
    const book = await loadFeeBook(t.db, new Date());
    const markets = ['STEAM', 'BUFF163', 'BITSKINS', 'CSMONEY', 'SKINPORT', 'CSFLOAT', 'C5GAME', 'YOUPIN'];
    const currencyOf: Record<string, string> = { BUFF163: 'CNY', C5GAME: 'CNY', YOUPIN: 'CNY', SKINPORT: 'EUR' };
    const now = new Date('2026-07-17T00:00:00Z');
    const quote = fc.record({
      market: fc.constantFrom(...markets),
      side: fc.constantFrom<'ask' | 'bid'>('ask', 'bid'),
      cents: fc.integer({ min: 1, max: 20_000 }),
      hoursOld: fc.integer({ min: 0, max: 96 }),
      quantity: fc.option(fc.integer({ min: 0, max: 5 })),
    });
    const options = fc.record({
      fund: fc.constantFrom<'cash' | 'balance'>('cash', 'balance'),
      payout: fc.constantFrom<'cash' | 'balance'>('cash', 'balance'),
      minCredibility: fc.constantFrom(0, 0.5),
      minQuantity: fc.constantFrom(null, 2),
      profile: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.uniqueArray(quote, { selector: (q) => `${q.market} ${q.side}`, maxLength: 16 }), options, (qs, o) => {
        const quotes: MarketQuote[] = qs.map((q) => ({
          appId: '730', marketHashName: 'x', marketCode: q.market, providerCode: q.market, side: q.side, currencyCode: currencyOf[q.market] ?? 'USD',
          price: toMoney((q.cents / 100).toFixed(2)), quantity: q.quantity, isQuantityMinimum: null, isAllItemsSamePrice: null,
          changedAt: now, observedAt: new Date(now.getTime() - q.hoursOld * 3_600_000), delistedAt: null, freshAt: now, valuation: null,
        }));
        const feeProfile = o.profile ? new Map([['C5GAME', { sale: toMoney('0.03'), deposit: toMoney('0.01') }], ['STEAM', { deposit: toMoney('0.02') }]]) : null;
        const opts = { currency: 'USD', buyOn: null, sellOn: null, fund: o.fund, payout: o.payout, minCredibility: o.minCredibility, minQuantity: o.minQuantity, feeProfile, now };
        const all = tradeRoutes(quotes, book, opts).find((r) => r.priced) ?? null;
        const best = bestRoute(quotes, book, opts);
        const key = (r: typeof best) => (r === null ? null : [r.buy.marketCode, r.sell.marketCode, r.sell.side, r.margin!.toString(), r.net!.toString()]);
        expect(key(best)).toEqual(key(all));
      }),
      { numRuns: 300, seed: 44 },
    );
  });
});
