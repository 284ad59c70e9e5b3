import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { QUOTE_KEYS, RFC3339_UTC, VALUATION_KEYS, expectEnvelope, expectError, expectKeys } from '../helpers/shapes.js';
import { createAccount } from '../../src/accounts/accounts.js';

let t: TestApp;
const day = (d: string) => new Date(`2026-07-${d}T00:00:00Z`);
const ITEM = 'AK-47 | Redline (Field-Tested)';
const q = (name: string, extra = '') => `/prices?market_hash_name=${encodeURIComponent(name)}${extra}`;

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [
    // BUFF163: aggregator ask (newer) and direct ask (older): direct wins.
    obs(ITEM, { marketCode: 'BUFF163', providerCode: 'CSGOTRADER', price: '201.85', quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null, observedAt: day('16') }),
    obs(ITEM, { marketCode: 'BUFF163', providerCode: 'BUFF163', price: '199.50', quantity: 120, observedAt: day('14') }),
    obs(ITEM, { marketCode: 'BUFF163', providerCode: 'BUFF163', side: 'bid', price: '195.00', quantity: 30, observedAt: day('14') }),
    // SKINPORT: two aggregators, the more recently confirmed wins.
    obs(ITEM, { marketCode: 'SKINPORT', providerCode: 'AGG_A', currencyCode: 'EUR', price: '27.10', observedAt: day('13') }),
    obs(ITEM, { marketCode: 'SKINPORT', providerCode: 'AGG_B', currencyCode: 'EUR', price: '27.30', observedAt: day('16') }),
    // CSFLOAT: direct source delisted, aggregator still lists it: listed wins over direct.
    obs(ITEM, { marketCode: 'CSFLOAT', providerCode: 'CSFLOAT', currencyCode: 'USD', price: '28.00', observedAt: day('12') }),
    obs(ITEM, { marketCode: 'CSFLOAT', providerCode: 'CSGOTRADER', currencyCode: 'USD', price: '28.18', observedAt: day('12') }),
    // YOUPIN: only source delisted -> published delisted with its last price and quantity 0.
    obs(ITEM, { marketCode: 'YOUPIN', providerCode: 'YOUPIN', price: '200.1000', quantity: 4, observedAt: day('11') }),
    // An item with one quote only.
    obs('Recoil Case', { price: '2.590', quantity: 17237 }),
    obs('Recoil Case', { side: 'bid', price: '2.6', quantity: 12352 }),
    // Another app id.
    obs('Arcana', { appId: '570', price: '100' }),
  ]);
  await ingestQuotes(t.db, [
    obs(ITEM, { marketCode: 'CSFLOAT', providerCode: 'CSFLOAT', currencyCode: 'USD', price: null, delisted: true, observedAt: day('13') }),
    obs(ITEM, { marketCode: 'YOUPIN', providerCode: 'YOUPIN', price: null, delisted: true, observedAt: day('12') }),
  ]);
  // A stored valuation -> the CSCP quote.
  await t.db.prisma.$executeRawUnsafe(
    `INSERT INTO valuation (item_id, valuation_date, mid_amount, ask_amount, bid_amount, uncertainty, is_two_sided, ask_quote_count, bid_quote_count, computed_at)
     SELECT id, '2026-07-17', 198.250, 200.5, 196.00, 0.05, true, 4, 1, '2026-07-17T00:05:00Z' FROM item WHERE market_hash_name = $1`,
    ITEM,
  );
});
afterAll(async () => {
  await t?.close();
});

describe('GET /prices', () => {
  it('returns one quote per market and side, sorted by market then side, with exact fields', async () => {
    const data = expectEnvelope(await t.get(q(ITEM), t.auth()));
    expectKeys(data, ['app_id', 'market_hash_name', 'markets']);
    expect(data.app_id).toBe('730');
    expect(data.market_hash_name).toBe(ITEM);
    expect(data.markets.map((m: any) => `${m.market_code}/${m.side}`)).toEqual([
      'BUFF163/ask', 'BUFF163/bid', 'CSCP/mid', 'CSFLOAT/ask', 'SKINPORT/ask', 'YOUPIN/ask',
    ]);
    for (const m of data.markets) {
      expectKeys(m, QUOTE_KEYS);
      expect(m.changed_at).toMatch(RFC3339_UTC);
      expect(m.fresh_at).toMatch(RFC3339_UTC);
    }
  });

  it('precedence: direct over aggregator, listed over delisted, then the latest fresh_at', async () => {
    const data = expectEnvelope(await t.get(q(ITEM), t.auth()));
    const by = (code: string, side = 'ask') => data.markets.find((m: any) => m.market_code === code && m.side === side);
    expect(by('BUFF163')).toMatchObject({ provider_code: 'BUFF163', market_price_amount: '199.5', quantity: 120, market_currency_code: 'CNY' });
    expect(by('CSFLOAT')).toMatchObject({ provider_code: 'CSGOTRADER', market_price_amount: '28.18', delisted_at: null, market_currency_code: 'USD' });
    expect(by('SKINPORT')).toMatchObject({ provider_code: 'AGG_B', market_price_amount: '27.3', market_currency_code: 'EUR' });
  });

  it('a market delisted by every source is reported delisted with its last price and quantity 0', async () => {
    const data = expectEnvelope(await t.get(q(ITEM), t.auth()));
    const youpin = data.markets.find((m: any) => m.market_code === 'YOUPIN');
    expect(youpin).toMatchObject({ market_price_amount: '200.1', quantity: 0, delisted_at: '2026-07-12T00:00:00.000Z', changed_at: '2026-07-12T00:00:00.000Z' });
  });

  it('the CSCP quote carries the valuation; every other quote has valuation null', async () => {
    const data = expectEnvelope(await t.get(q(ITEM), t.auth()));
    const cscp = data.markets.find((m: any) => m.market_code === 'CSCP');
    expect(cscp).toMatchObject({
      provider_code: 'CSCP', side: 'mid', market_currency_code: 'CNY', market_price_amount: '198.25', quantity: null,
      changed_at: '2026-07-17T00:05:00.000Z', fresh_at: '2026-07-17T00:05:00.000Z',
    });
    expectKeys(cscp.valuation, VALUATION_KEYS);
    expect(cscp.valuation).toMatchObject({ valuation_date: '2026-07-17', is_two_sided: true, ask_amount: '200.5', bid_amount: '196', ask_quote_count: 4, bid_quote_count: 1 });
    expect(Math.abs(cscp.valuation.credibility - Math.exp(-0.05))).toBeLessThan(1e-12);
    for (const m of data.markets.filter((x: any) => x.market_code !== 'CSCP')) expect(m.valuation).toBeNull();
  });

  it('filters markets (spaces ignored) and side; a filter that excludes everything is 200 with empty markets', async () => {
    const a = expectEnvelope(await t.get(q(ITEM, '&markets=%20SKINPORT%20,BUFF163&side=ask'), t.auth()));
    expect(a.markets.map((m: any) => `${m.market_code}/${m.side}`)).toEqual(['BUFF163/ask', 'SKINPORT/ask']);
    const mid = expectEnvelope(await t.get(q(ITEM, '&side=mid'), t.auth()));
    expect(mid.markets.map((m: any) => m.market_code)).toEqual(['CSCP']);
    const cscp = expectEnvelope(await t.get(q(ITEM, '&markets=CSCP'), t.auth()));
    expect(cscp.markets.map((m: any) => m.market_code)).toEqual(['CSCP']);
    const none = expectEnvelope(await t.get(q(ITEM, '&markets=STEAM'), t.auth()));
    expect(none.markets).toEqual([]);
    const bid = expectEnvelope(await t.get(q('Recoil Case', '&side=bid'), t.auth()));
    expect(bid.markets).toHaveLength(1);
    expect(bid.markets[0]).toMatchObject({ side: 'bid', market_price_amount: '2.6' });
  });

  it('decimal strings are plain with trailing zeros trimmed', async () => {
    const data = expectEnvelope(await t.get(q('Recoil Case', '&side=ask'), t.auth()));
    expect(data.markets[0].market_price_amount).toBe('2.59');
  });

  it('404 when the item has no quotes for the app id (exact, case-sensitive match)', async () => {
    expectError(await t.get(q('No Such Item'), t.auth()), 404, 'not_found');
    expectError(await t.get(q(ITEM.toLowerCase()), t.auth()), 404, 'not_found');
    expectError(await t.get(q(ITEM, '&app_id=570'), t.auth()), 404, 'not_found');
    expect(expectEnvelope(await t.get(q('Arcana', '&app_id=570'), t.auth())).app_id).toBe('570');
  });

  it('401 without a valid key; both header forms work', async () => {
    expectError(await t.get(q(ITEM)), 401, 'unauthorized');
    expectError(await t.get(q(ITEM), { Authorization: 'Bearer qg_nottherightlength' }), 401, 'unauthorized');
    expectError(await t.get(q(ITEM), { Authorization: `Bearer qg_${'A'.repeat(32)}` }), 401, 'unauthorized');
    expectError(await t.get(q(ITEM), { Authorization: `Basic ${t.key}` }), 401, 'unauthorized');
    expect((await t.get(q(ITEM), { 'X-API-Key': t.key })).status).toBe(200);
    const err = expectError(await t.get(q(ITEM), { Authorization: `Bearer ${t.key}x` }), 401, 'unauthorized');
    expect(JSON.stringify(err)).not.toContain(t.key);
  });

  it('403 for a valid key of a disabled account', async () => {
    const other = await createAccount(t.db, { credits: 10n });
    await t.db.prisma.account.update({ where: { id: other.accountId }, data: { disabled: true } });
    expectError(await t.get(q(ITEM), { 'X-API-Key': other.key }), 403, 'forbidden');
  });

  it.each([
    ['', 'market_hash_name'],
    ['?market_hash_name=', 'market_hash_name'],
    [`?market_hash_name=${'x'.repeat(256)}`, 'market_hash_name'],
    ['?market_hash_name=a%00b', 'market_hash_name'],
    ['?market_hash_name=a&app_id=', 'app_id'],
    [`?market_hash_name=a&app_id=${'7'.repeat(17)}`, 'app_id'],
    ['?market_hash_name=a&markets=', 'markets'],
    ['?market_hash_name=a&markets=buff163', 'markets.0'],
    ['?market_hash_name=a&markets=BUFF163,,CSFLOAT', 'markets.1'],
    ['?market_hash_name=a&side=both', 'side'],
    ['?market_hash_name=a&market_hash_name=b', 'market_hash_name'],
  ])('422 for %s (field %s)', async (query, field) => {
    const err = expectError(await t.get(`/prices${query}`, t.auth()), 422, 'validation_failed');
    expect(err.details.errors.map((d: any) => d.field)).toContain(field);
  });

  it('255 characters (code points) are accepted', async () => {
    const name = '★'.repeat(255);
    expectError(await t.get(q(name), t.auth()), 404, 'not_found');
  });

  it('counts a character outside the BMP (two UTF-16 units) once: 255 pass, 256 are refused', async () => {
    expectError(await t.get(q('😀'.repeat(255)), t.auth()), 404, 'not_found');
    expectError(await t.get(q(`a${'😀'.repeat(127)}`), t.auth()), 404, 'not_found');
    const err = expectError(await t.get(q('😀'.repeat(256)), t.auth()), 422, 'validation_failed');
    expect(err.details.errors.map((d: any) => d.field)).toContain('market_hash_name');
    const app = expectError(await t.get(`${q('a')}&app_id=${encodeURIComponent('😀'.repeat(17))}`, t.auth()), 422, 'validation_failed');
    expect(app.details.errors.map((d: any) => d.field)).toContain('app_id');
  });
});

describe('POST /prices/batch', () => {
  const post = (body: unknown, headers = t.auth()) => t.post('/prices/batch', body, headers);

  it('one entry per requested name in request order, duplicates kept, unknown names empty', async () => {
    const data = expectEnvelope(await post({ market_hash_names: ['Recoil Case', 'nope', ITEM, 'Recoil Case'] }));
    expectKeys(data, ['app_id', 'side', 'items']);
    expect(data).toMatchObject({ app_id: '730', side: 'all' });
    expect(data.items.map((i: any) => i.market_hash_name)).toEqual(['Recoil Case', 'nope', ITEM, 'Recoil Case']);
    for (const i of data.items) expectKeys(i, ['market_hash_name', 'markets']);
    expect(data.items[1].markets).toEqual([]);
    expect(data.items[0]).toEqual(data.items[3]);
    const single = expectEnvelope(await t.get(q(ITEM), t.auth()));
    expect(data.items[2].markets).toEqual(single.markets);
  });

  it('markets and side filter every item identically; never 404', async () => {
    const data = expectEnvelope(await post({ market_hash_names: [ITEM, 'Recoil Case', 'zzz'], markets: ['BUFF163'], side: 'bid', app_id: '730' }));
    expect(data.side).toBe('bid');
    expect(data.items.map((i: any) => i.markets.map((m: any) => `${m.market_code}/${m.side}`))).toEqual([['BUFF163/bid'], ['BUFF163/bid'], []]);
  });

  it.each([
    [{}, 'market_hash_names'],
    [{ market_hash_names: [] }, 'market_hash_names'],
    [{ market_hash_names: Array(1001).fill('a') }, 'market_hash_names'],
    [{ market_hash_names: ['ok', ''] }, 'market_hash_names.1'],
    [{ market_hash_names: ['x'.repeat(256)] }, 'market_hash_names.0'],
    [{ market_hash_names: 'a' }, 'market_hash_names'],
    [{ market_hash_names: [1] }, 'market_hash_names.0'],
    [{ market_hash_names: ['a'], markets: [] }, 'markets'],
    [{ market_hash_names: ['a'], markets: ['A'.repeat(33)] }, 'markets.0'],
    [{ market_hash_names: ['a'], side: 'ALL' }, 'side'],
    [{ market_hash_names: ['a'], app_id: '' }, 'app_id'],
    [{ market_hash_names: ['a'], extra: true }, 'extra'],
  ])('422 for body %j (field %s)', async (body, field) => {
    const err = expectError(await post(body), 422, 'validation_failed');
    expect(err.details.errors.map((d: any) => d.field)).toContain(field);
  });

  it('422 for malformed JSON, a non-object body or an empty body', async () => {
    expectError(await post('{"market_hash_names": ['), 422, 'validation_failed');
    expectError(await post('[1,2]'), 422, 'validation_failed');
    expectError(await post(''), 422, 'validation_failed');
  });

  it('1000 names are accepted, null markets means every market', async () => {
    const data = expectEnvelope(await post({ market_hash_names: Array(1000).fill(ITEM), markets: null }));
    expect(data.items).toHaveLength(1000);
    expect(data.items[999].markets.length).toBe(6);
  });

  it('concurrent large batches (which take turns per replica) all answer whole, each billed once', async () => {
    const { key } = await createAccount(t.db, { credits: 100n });
    const names = Array.from({ length: 150 }, (_, i) => (i % 3 === 0 ? ITEM : i % 3 === 1 ? 'Recoil Case' : `missing ${i}`));
    const answers = await Promise.all(Array.from({ length: 6 }, () => post({ market_hash_names: names }, { 'X-API-Key': key })));
    const single = expectEnvelope(await t.get(q(ITEM), t.auth()));
    for (const r of answers) {
      const data = expectEnvelope(r);
      expect(data.items.map((i: any) => i.market_hash_name)).toEqual(names);
      expect(data.items[0].markets).toEqual(single.markets);
      expect(data.items[2].markets).toEqual([]);
    }
    // 150 names = 2 units of 100 (data/endpoints.json), so 2 credits per batch, 12 for the six.
    expect(expectEnvelope(await t.get('/me', { 'X-API-Key': key })).credit).toMatchObject({ used: 12 });
  });

  it('413 for a body over the size limit, before parsing', async () => {
    const r = await post('{"market_hash_names":["' + 'a'.repeat(3 * 1024 * 1024) + '"]}');
    expectError(r, 413, 'payload_too_large');
  });

  it('401 without a key', async () => {
    expectError(await post({ market_hash_names: ['a'] }, {}), 401, 'unauthorized');
  });
});
