/**
 * Fees applied, as a GraphQL client sees them (issue: fees applied, points 1, 2 and 5): every bundled
 * marketplace with known fees reproduced by hand, Steam's exact per-component rule, a chain with a convert
 * step, unknown fees unpriced, conversions with their rates' dates, and bad currencies refused with 422
 * and never billed. The REST fee schedules stay the spec's chains.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope } from '../helpers/shapes.js';
import { ingestBatch } from '../../src/quotes/ingestion.js';
import { createAccount } from '../../src/accounts/accounts.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
const CHEAP = 'Sticker | Cheap (Foil)';
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

let t: TestApp;

beforeAll(async () => {
  t = await testApp();
  await ingestBatch(t.db, [
    obs(ITEM, { marketCode: 'STEAM', providerCode: 'STEAM', currencyCode: 'USD', price: '1000.00' }),
    obs(ITEM, { marketCode: 'BUFF163', providerCode: 'BUFF163', currencyCode: 'CNY', price: '100' }),
    obs(ITEM, { marketCode: 'BITSKINS', providerCode: 'BITSKINS', currencyCode: 'USD', price: '10' }),
    obs(ITEM, { marketCode: 'CSMONEY', providerCode: 'CSMONEY', currencyCode: 'USD', price: '10' }),
    obs(ITEM, { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', price: '10' }),
    obs(ITEM, { marketCode: 'CSFLOAT', providerCode: 'CSFLOAT', currencyCode: 'USD', price: '10' }),
    obs(ITEM, { marketCode: 'C5GAME', providerCode: 'C5GAME', currencyCode: 'CNY', price: '70' }),
    obs(CHEAP, { marketCode: 'STEAM', providerCode: 'STEAM', currencyCode: 'USD', price: '0.03' }),
    obs(CHEAP, { marketCode: 'STEAM', providerCode: 'STEAM', currencyCode: 'USD', price: '0.20', side: 'bid' }),
  ]);
});
afterAll(async () => {
  await t.close();
});

const FIELDS = 'path priced amount currencyCode unknownPurposes reason steps { purpose kind operator value valueCurrencyCode amountBefore currencyBefore amount currencyCode note } rates { currencyCode usdRate rateDate }';

/** The item's ask quotes with the given after-fee selections, by market code. */
async function quotes(name: string, selection: string, key = t.key): Promise<{ body: any; byMarket: Record<string, any> }> {
  const res = await t.gql(`query($n: String!) { item(marketHashName: $n) { quotes(side: ask) { marketCode ${selection} } } }`, { n: name }, bearer(key));
  expect(res.status).toBe(200);
  const byMarket: Record<string, any> = {};
  for (const q of res.body.data?.item?.quotes ?? []) byMarket[q.marketCode] = q;
  return { body: res.body, byMarket };
}

describe('afterFees reproduces every known fee by hand', () => {
  it('SALE in the market currency: price x the sale factor, for every marketplace with a known sale fee', async () => {
    const { body, byMarket } = await quotes(ITEM, `sale: afterFees(path: SALE) { ${FIELDS} }`);
    expect(body.errors).toBeUndefined();
    const amount = (m: string) => byMarket[m].sale.amount;
    expect(amount('BITSKINS')).toBe('9'); // 10 x 0.90
    expect(amount('CSMONEY')).toBe('9.3'); // 10 x 0.93
    expect(amount('CSFLOAT')).toBe('9.8'); // 10 x 0.98
    // Chains of non-USD markets end with a convert step into USD; the answer comes back into the market's currency exactly.
    expect(amount('BUFF163')).toBe('97.5'); // 100 CNY x 0.975
    expect(amount('SKINPORT')).toBe('9.2'); // 10 EUR x 0.92
    // Steam: its exact rule, not 1000 / 1.15 = 869.5652...
    expect(amount('STEAM')).toBe('869.58');
    expect(byMarket.STEAM.sale.steps).toEqual([
      expect.objectContaining({ purpose: 'sale', kind: 'steam_market_fee', value: '130.42', valueCurrencyCode: 'USD', amountBefore: '1000', amount: '869.58', currencyCode: 'USD' }),
    ]);
    expect(byMarket.STEAM.sale.steps[0].note).toMatch(/Steam fee 43\.47 \+ game fee 86\.95/);
    for (const m of ['BITSKINS', 'CSMONEY', 'CSFLOAT', 'BUFF163', 'SKINPORT', 'STEAM']) expect(byMarket[m].sale).toMatchObject({ path: 'SALE', priced: true, unknownPurposes: [], reason: null });
  });

  it('a chain with a convert step shows each step, its running amount, and the official rates with their dates', async () => {
    const { byMarket } = await quotes(ITEM, `usd: afterFees(path: SALE, currency: "USD") { ${FIELDS} }`);
    const skinport = byMarket.SKINPORT.usd;
    // 10 EUR x 0.92 = 9.2 EUR; EUR -> USD at 1.1684 USD per EUR (ECB, 2026-04-13) = 10.74928 USD.
    expect(skinport).toMatchObject({ priced: true, amount: '10.74928', currencyCode: 'USD' });
    expect(skinport.steps.map((s: any) => [s.kind, s.operator, s.value, s.amountBefore, s.currencyBefore, s.amount, s.currencyCode])).toEqual([
      ['fee', 'mul', '0.92', '10', 'EUR', '9.2', 'EUR'],
      ['convert', 'auto', '1.1684', '9.2', 'EUR', '10.74928', 'USD'],
    ]);
    expect(skinport.rates).toEqual(
      expect.arrayContaining([
        { currencyCode: 'EUR', usdRate: '1.1684', rateDate: '2026-04-13' },
        { currencyCode: 'USD', usdRate: '1', rateDate: '2026-04-13' },
      ]),
    );
  });

  it('SALE_THEN_WITHDRAW: Buff163 pays 100 CNY x 0.975 x 0.99 = 96.525 CNY in cash; markets without a known withdraw fee are unpriced', async () => {
    const { byMarket } = await quotes(ITEM, `cash: afterFees(path: SALE_THEN_WITHDRAW, currency: "CNY") { ${FIELDS} }`);
    expect(byMarket.BUFF163.cash).toMatchObject({ priced: true, amount: '96.525', currencyCode: 'CNY', unknownPurposes: [] });
    expect(byMarket.BUFF163.cash.steps.map((s: any) => [s.purpose, s.kind, s.amount, s.currencyCode])).toEqual([
      ['sale', 'fee', '97.5', 'CNY'],
      ['sale', 'convert', '14.270735466', 'USD'], // 97.5 x 0.1463665176 USD per CNY
      ['conversion', 'official_rate', '97.5', 'CNY'],
      ['withdraw', 'fee', '96.525', 'CNY'],
      ['withdraw', 'convert', '14.12802811134', 'USD'], // 96.525 x 0.1463665176
      ['conversion', 'official_rate', '96.525', 'CNY'],
    ]);
    for (const m of ['STEAM', 'BITSKINS', 'CSMONEY', 'SKINPORT', 'CSFLOAT']) {
      expect(byMarket[m].cash).toMatchObject({ priced: false, amount: null, unknownPurposes: ['withdraw'] });
      expect(byMarket[m].cash.reason).toMatch(/not known/);
    }
  });

  it('unknown is never free: an unknown sale fee (C5GAME) and every deposit are unpriced, with no amount', async () => {
    const { byMarket } = await quotes(ITEM, `sale: afterFees(path: SALE) { ${FIELDS} } deposit: afterFees(path: DEPOSIT) { ${FIELDS} }`);
    expect(byMarket.C5GAME.sale).toMatchObject({ priced: false, amount: null, unknownPurposes: ['sale'], steps: [] });
    for (const q of Object.values(byMarket)) expect(q.deposit).toMatchObject({ path: 'DEPOSIT', priced: false, amount: null, unknownPurposes: ['deposit'] });
  });

  it("Steam's smallest prices: 0.03 pays the seller 0.01, a 0.20 buy order 0.18", async () => {
    const res = await t.gql(
      `query($n: String!) { item(marketHashName: $n) { quotes { side afterFees(path: SALE) { amount steps { note } } } } }`,
      { n: CHEAP },
      t.auth(),
    );
    const by = Object.fromEntries(res.body.data.item.quotes.map((q: any) => [q.side, q.afterFees.amount]));
    expect(by).toEqual({ ask: '0.01', bid: '0.18' });
  });
});

describe('converted: a price in another currency at official rates', () => {
  it('gives the amount, the rate and the dates of the rates used; the quote itself stays in its own currency', async () => {
    const { byMarket } = await quotes(ITEM, 'marketPriceAmount marketCurrencyCode converted(currency: "USD") { amount currencyCode rate rates { currencyCode usdRate rateDate } }');
    expect(byMarket.BUFF163).toMatchObject({ marketPriceAmount: '100', marketCurrencyCode: 'CNY' });
    expect(byMarket.BUFF163.converted).toEqual({
      amount: '14.63665176',
      currencyCode: 'USD',
      rate: '0.1463665176',
      rates: [
        { currencyCode: 'CNY', usdRate: '0.1463665176', rateDate: '2026-04-13' },
        { currencyCode: 'USD', usdRate: '1', rateDate: '2026-04-13' },
      ],
    });
  });
});

describe('bad currencies are refused in the documented way, and the quotes sent with them are billed', () => {
  it('an unknown code is validation_failed on each afterFees with details; a malformed one too; the quotes still answered are charged (issue 41)', async () => {
    const a = await createAccount(t.db, { credits: 10n });
    let spent = 0;
    for (const currency of ['XXX', 'usd']) {
      const res = await t.gql(
        `query($n: String!, $c: String!) { item(marketHashName: $n) { quotes(side: ask) { marketCode afterFees(path: SALE, currency: $c) { amount } } } }`,
        { n: ITEM, c: currency },
        bearer(a.key),
      );
      // The refusal is on the nested field: every quote is answered, its afterFees null with its own error.
      const quotes = res.body.data?.item?.quotes;
      expect(quotes).toHaveLength(7);
      for (const q of quotes) expect(q.afterFees).toBeNull();
      expect(res.body.errors).toHaveLength(quotes.length);
      for (const error of res.body.errors) {
        expect(error.path).toEqual(['item', 'quotes', expect.any(Number), 'afterFees']);
        expect(error.extensions).toMatchObject({ code: 'validation_failed', details: { errors: [expect.objectContaining({ location: 'argument', field: 'currency' })] } });
      }
      // Quotes left the service, so the item is billed as one GET /prices (README, Billing), and the answer is a 200.
      spent += 1;
      expect(res.status).toBe(200);
      expect(res.body.extensions?.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 10 - spent } });
    }
    const me = await t.get('/me', bearer(a.key));
    expect(expectEnvelope(me).credit).toMatchObject({ used: 2, remaining: 8 });
  });

  it('a bad currency that refuses the whole item (Item.routes is non-null) sends no data and costs nothing', async () => {
    const a = await createAccount(t.db, { credits: 10n });
    const res = await t.gql(`query($n: String!) { item(marketHashName: $n) { marketHashName routes(currency: "XXX") { status } } }`, { n: ITEM }, bearer(a.key));
    expect(res.body.data.item).toBeNull();
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'validation_failed', details: { errors: [expect.objectContaining({ field: 'currency' })] } });
    expect(res.body.extensions?.billing).toEqual({ billable: false });
    expect(expectEnvelope(await t.get('/me', bearer(a.key))).credit).toMatchObject({ used: 0, remaining: 10 });
  });
});

describe('REST fee schedules keep the spec shape', () => {
  it("GET /websites/STEAM/fee-schedule still shows the chain (div 1.15), not the exact rule", async () => {
    const res = await t.get('/websites/STEAM/fee-schedule');
    const data = expectEnvelope(res);
    expect(data.slots.sale.calculation_chain.steps).toHaveLength(1);
    expect(JSON.stringify(data)).not.toMatch(/exact_rule|steam_market_fee/);
  });
});

describe('cross-market routes: buy here, sell there, after both markets\' fees', () => {
  const ROUTES = (q: string) => `/prices/routes?market_hash_name=${encodeURIComponent(ITEM)}&${q}`;

  it('REST: a priced route shows both legs and its margin; a leg with an unknown fee makes its route unpriced', async () => {
    const res = await t.get(ROUTES('currency=USD&fund=balance&payout=balance&buy_on=BITSKINS&sell_on=STEAM,C5GAME&include_unpriced=true'), t.auth());
    const data = expectEnvelope(res);
    expect(res.body.meta).toMatchObject({ billable: true, credit: { cost: 1 } });
    expect(data).toMatchObject({ market_hash_name: ITEM, currency_code: 'USD', fund: 'balance', payout: 'balance' });
    expect(data.routes.map((r: any) => [r.buy.market_code, r.sell.market_code, r.sell.side, r.status, r.net_amount, r.margin])).toEqual([
      // 10 USD on BitSkins; Steam pays 869.58 for a 1,000.00 listing: net 859.58, margin 85.958.
      ['BITSKINS', 'STEAM', 'ask', 'priced', '859.58', '85.958'],
      ['BITSKINS', 'C5GAME', 'ask', 'unpriced', null, null],
    ]);
    const unpriced = data.routes[1];
    expect(unpriced.sell).toMatchObject({ priced: false, amount: null, unknown_purposes: ['sale'] });
    expect(data.routes[0].sell.steps[0]).toMatchObject({ kind: 'steam_market_fee', amount_before: '1000', amount: '869.58' });
  });

  it('by default the buyer pays deposit fees and the seller cashes out: with no known deposit fee every route is unpriced, none profitable', async () => {
    const data = expectEnvelope(await t.get(ROUTES('currency=USD&include_unpriced=true'), t.auth()));
    expect(data.routes.length).toBeGreaterThan(0);
    expect(data).toMatchObject({ unpriced_left_out: 0, left_out_reason: null });
    for (const r of data.routes) {
      expect(r).toMatchObject({ status: 'unpriced', net_amount: null, margin: null });
      expect(r.buy).toMatchObject({ path: 'deposit', priced: false, unknown_purposes: ['deposit'] });
    }
  });

  it('ranks priced routes by margin, converting every leg into the requested currency', async () => {
    const data = expectEnvelope(await t.get(ROUTES('currency=EUR&fund=balance&payout=balance&sell_on=STEAM'), t.auth()));
    const priced = data.routes.filter((r: any) => r.status === 'priced');
    const margins = priced.map((r: any) => Number(r.margin));
    expect(margins).toEqual([...margins].sort((a, b) => b - a));
    // Skinport's 10 EUR ask costs 10 EUR; 869.58 USD is 869.58 / 1.1684 EUR.
    const skinport = priced.find((r: any) => r.buy.market_code === 'SKINPORT');
    expect(skinport.buy.amount).toBe('10');
    expect(skinport.sell.amount).toBe('744.2485450188291680931187949332420403971'); // 40 significant digits, as decimal.js divides
  });

  it('GraphQL Item.routes gives the same routes, billed with the item', async () => {
    const res = await t.gql(
      `query($n: String!) { item(marketHashName: $n) { routes(currency: "USD", fund: balance, payout: balance, buyOn: ["BITSKINS"], sellOn: ["STEAM"]) { status netAmount margin buy { marketCode amount } sell { marketCode amount path } } } }`,
      { n: ITEM },
      t.auth(),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.item.routes).toEqual([
      { status: 'priced', netAmount: '859.58', margin: '85.958', buy: { marketCode: 'BITSKINS', amount: '10' }, sell: { marketCode: 'STEAM', amount: '869.58', path: 'sale' } },
    ]);
    expect(res.body.extensions.billing).toMatchObject({ billable: true, credit: { cost: 1 } });
  });

  it('min_credibility drops routes whose quotes are old (these were observed months before the request)', async () => {
    const data = expectEnvelope(await t.get(ROUTES('currency=USD&min_credibility=0.5'), t.auth()));
    expect(data.routes).toEqual([]);
  });

  it('bad parameters are 422 with every problem listed, an unknown item 404, no key 401; none is billed', async () => {
    const a = await createAccount(t.db, { credits: 5n });
    const bad = await t.get(ROUTES('currency=usd&fund=card&min_credibility=2&buy_on='), bearer(a.key));
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.errors.map((e: any) => e.field).sort()).toEqual(['buy_on', 'currency', 'fund', 'min_credibility']);
    const unknownCurrency = await t.get(ROUTES('currency=XXX'), bearer(a.key));
    expect(unknownCurrency.status).toBe(422);
    expect(unknownCurrency.body.error.details.errors).toEqual([expect.objectContaining({ location: 'query', field: 'currency' })]); // the parameter's REST name
    const missing = await t.get(`/prices/routes?market_hash_name=${encodeURIComponent('No Such Item')}&currency=USD`, bearer(a.key));
    expect(missing.status).toBe(404);
    expect((await t.get(ROUTES('currency=USD'))).status).toBe(401);
    expect(expectEnvelope(await t.get('/me', bearer(a.key))).credit).toMatchObject({ used: 0 });
  });

  it('is a documented, billed and limited catalogue row', async () => {
    const rows = expectEnvelope(await t.get('/endpoints'));
    expect(rows.find((r: any) => r.path === '/prices/routes')).toEqual({
      method: 'GET',
      path: '/prices/routes',
      premium: false,
      credit_cost: 1,
      recommended_interval_seconds: 60,
      rate_limit: { max_requests: 120, window_seconds: 60 },
      unit_pricing: null,
      roles: ['user'],
    });
    const doc = (await t.get('/openapi.json')).body;
    expect(doc.paths['/prices/routes'].get['x-quotegate']).toMatchObject({ credit_cost: 1, rate_limit: { max_requests: 120, window_seconds: 60 } });
  });
});
