import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../helpers/app.js';
import { CURRENCY_KEYS, ENDPOINT_KEYS, PUBLIC_CURRENCY_KEYS, WEBSITE_KEYS, expectEnvelope, expectError, expectKeys } from '../helpers/shapes.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
});
afterAll(async () => {
  await t?.close();
});

describe('GET /health and /config', () => {
  it('/health is a bare object with status ok and a request id header', async () => {
    const r = await t.get('/health');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ok' });
    expect(r.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('/config gives the home currency, enveloped, with Cache-Control: no-store', async () => {
    const r = await t.get('/config');
    expect(expectEnvelope(r)).toEqual({ home_currency: 'USD' });
    expect(r.headers.get('cache-control')).toBe('no-store');
  });

  it('request ids are unique per request', async () => {
    const a = await t.get('/config');
    const b = await t.get('/config');
    expect(a.body.meta.request_id).not.toBe(b.body.meta.request_id);
  });
});

describe('GET /websites', () => {
  it('lists supported marketplaces ordered by code, without deprecated ones by default', async () => {
    const data = expectEnvelope(await t.get('/websites'));
    const codes = data.map((w: any) => w.code);
    expect(codes).toEqual([...codes].sort());
    expect(codes).toContain('BUFF163');
    expect(codes).not.toContain('OPSKINS');
    for (const w of data) {
      expectKeys(w, WEBSITE_KEYS);
      expect(w.is_deprecated).toBe(false);
    }
  });

  it('include_deprecated=true adds deprecated marketplaces flagged as such', async () => {
    const data = expectEnvelope(await t.get('/websites?include_deprecated=true'));
    const ops = data.find((w: any) => w.code === 'OPSKINS');
    expect(ops).toEqual({ code: 'OPSKINS', name: 'OPSkins', url: null, category: 'marketplace', subCategory: 'p2p', is_deprecated: true });
    const codes = data.map((w: any) => w.code);
    expect(codes).toEqual([...codes].sort());
  });

  it.each(['yes', '1', 'TRUE', ''])('include_deprecated=%s is 422 with details', async (value) => {
    const err = expectError(await t.get(`/websites?include_deprecated=${value}`), 422, 'validation_failed');
    expect(err.details).toEqual({ errors: [{ location: 'query', field: 'include_deprecated', message: 'must be true or false' }] });
  });

  it('a repeated parameter is 422', async () => {
    const err = expectError(await t.get('/websites?include_deprecated=true&include_deprecated=false'), 422, 'validation_failed');
    expect(err.details.errors[0].field).toBe('include_deprecated');
  });
});

describe('GET /websites/{code}', () => {
  it('returns one marketplace, deprecated ones too', async () => {
    expectKeys(expectEnvelope(await t.get('/websites/BUFF163')), WEBSITE_KEYS);
    expect(expectEnvelope(await t.get('/websites/OPSKINS')).is_deprecated).toBe(true);
  });

  it('404 not_found for an unknown code (codes are case-sensitive)', async () => {
    expectError(await t.get('/websites/NOPE'), 404, 'not_found');
    expectError(await t.get('/websites/buff163'), 404, 'not_found');
  });

  it('422 for a code that is too long or badly encoded', async () => {
    expectError(await t.get(`/websites/${'A'.repeat(65)}`), 422, 'validation_failed');
    expectError(await t.get('/websites/%E0%A4%A'), 422, 'validation_failed');
  });
});

describe('GET /websites/{code}/fee-schedule', () => {
  it('publishes known chains fully expanded and unknown purposes as null', async () => {
    const data = expectEnvelope(await t.get('/websites/BUFF163/fee-schedule'));
    expectKeys(data, ['website_code', 'slots']);
    expectKeys(data.slots, ['deposit', 'sale', 'withdraw']);
    expect(data.website_code).toBe('BUFF163');
    expect(data.slots.deposit).toBeNull();
    const sale = data.slots.sale;
    expectKeys(sale, ['purpose', 'calculation_chain']);
    expect(sale.purpose).toBe('sale');
    const chain = sale.calculation_chain;
    expectKeys(chain, ['id', 'name', 'start_currency', 'steps']);
    expect(chain.start_currency).toBe('CNY');
    expect(chain.steps).toHaveLength(2);
    const [fee, convert] = chain.steps;
    expectKeys(fee, ['kind', 'id', 'name', 'operator', 'value', 'currency_code']);
    expect(fee).toMatchObject({ kind: 'fee', operator: 'mul', value: '0.975', currency_code: null });
    expectKeys(convert, ['kind', 'id', 'name', 'from', 'to', 'mode', 'rate']);
    expect(convert).toMatchObject({ kind: 'convert', mode: 'auto', rate: null });
    expectKeys(convert.from, PUBLIC_CURRENCY_KEYS);
    expect(convert.from.code).toBe('CNY');
    expect(convert.to.code).toBe('USD');
    expect(data.slots.withdraw.calculation_chain.steps[0]).toMatchObject({ kind: 'fee', operator: 'mul', value: '0.99' });
  });

  it('USD marketplaces need no convert step; marketplaces with no known fee have only null slots', async () => {
    const csfloat = expectEnvelope(await t.get('/websites/CSFLOAT/fee-schedule'));
    expect(csfloat.slots.sale.calculation_chain.steps.map((s: any) => s.kind)).toEqual(['fee']);
    const youpin = expectEnvelope(await t.get('/websites/YOUPIN/fee-schedule'));
    expect(youpin.slots).toEqual({ deposit: null, sale: null, withdraw: null });
  });

  it('404 for an unknown marketplace', async () => {
    expectError(await t.get('/websites/NOPE/fee-schedule'), 404, 'not_found');
  });
});

describe('GET /currencies', () => {
  it('lists official currencies ordered by code with exact fields and decimal-string rates', async () => {
    const data = expectEnvelope(await t.get('/currencies'));
    expect(data.length).toBeGreaterThan(30);
    const codes = data.map((c: any) => c.code);
    expect(codes).toEqual([...codes].sort());
    for (const c of data) {
      expectKeys(c, CURRENCY_KEYS);
      expect(c.usd_rate).toMatch(/^\d+(\.\d*[1-9])?$/);
      expect(c.is_official).toBe(true);
      expect(c.is_deleted).toBe(false);
      expect(c.owner_user_id).toBeNull();
    }
    const usd = data.find((c: any) => c.code === 'USD');
    expect(usd.usd_rate).toBe('1');
    const cny = data.find((c: any) => c.code === 'CNY');
    expect(cny.ref_count).toBe(1);
  });

  it('search is a case-insensitive substring of the code', async () => {
    const data = expectEnvelope(await t.get('/currencies?search=u'));
    expect(data.map((c: any) => c.code)).toEqual(['AUD', 'EUR', 'HUF', 'RUB', 'UAH', 'USD', 'UYU']);
    expect(expectEnvelope(await t.get('/currencies?search=cNy')).map((c: any) => c.code)).toEqual(['CNY']);
    expect(expectEnvelope(await t.get('/currencies?search=zzz'))).toEqual([]);
  });

  it('GET /currencies/{id} returns one; 404 for unknown; 422 for a non-integer', async () => {
    const list = expectEnvelope(await t.get('/currencies?search=EUR'));
    const one = expectEnvelope(await t.get(`/currencies/${list[0].id}`));
    expect(one).toEqual(list[0]);
    expectError(await t.get('/currencies/999999'), 404, 'not_found');
    for (const bad of ['abc', '-1', '1.5', '99999999999']) expectError(await t.get(`/currencies/${bad}`), 422, 'validation_failed');
  });
});

describe('GET /endpoints', () => {
  it("lists the spec's 13 documented operations and the extensions (GET /prices/routes, GET /prices/routes/top, GET /prices/history, GET /prices/changes, GET /valuation/accuracy, GET /catalogue/items, the alerts), sorted by path then method", async () => {
    const data = expectEnvelope(await t.get('/endpoints'));
    expect(data).toHaveLength(24);
    expect(data.map((e: any) => e.path)).toEqual(expect.arrayContaining(['/prices/routes', '/prices/routes/top', '/prices/history', '/prices/changes', '/valuation/accuracy', '/catalogue/items', '/alerts', '/alerts/{id}', '/alerts/{id}/deliveries']));
    for (const e of data) expectKeys(e, ENDPOINT_KEYS);
    const keys = data.map((e: any) => `${e.path} ${e.method}`);
    expect(keys).toEqual([...keys].sort());
    const batch = data.find((e: any) => e.path === '/prices/batch');
    expect(batch).toEqual({
      method: 'POST', path: '/prices/batch', premium: false, credit_cost: 1, recommended_interval_seconds: 60,
      rate_limit: { max_requests: 20, window_seconds: 60 }, unit_pricing: { unit_size: 100, units_body_field: 'market_hash_names', max_units: 1000 },
      roles: ['user'],
    });
    expect(data.find((e: any) => e.path === '/prices/export').credit_cost).toBe(10);
    expect(data.find((e: any) => e.path === '/health').roles).toEqual([]);
    // The alert rows: free, rate limited per account (docs/alerts.md, Rate limits).
    const alertRows = data.filter((e: any) => e.path.startsWith('/alerts')).map((e: any) => [e.method, e.path, e.credit_cost, e.rate_limit]);
    expect(alertRows).toEqual([
      ['GET', '/alerts', 0, { max_requests: 60, window_seconds: 60 }],
      ['POST', '/alerts', 0, { max_requests: 30, window_seconds: 60 }],
      ['DELETE', '/alerts/{id}', 0, { max_requests: 30, window_seconds: 60 }],
      ['GET', '/alerts/{id}/deliveries', 0, { max_requests: 60, window_seconds: 60 }],
    ]);
  });
});

describe('unknown paths and methods', () => {
  it('unknown path -> 404 error envelope', async () => {
    expectError(await t.get('/no/such/path'), 404, 'route_not_found');
  });
  it('wrong method -> 405 error envelope with Allow', async () => {
    const r = await t.post('/websites', {});
    expectError(r, 405, 'method_not_allowed');
    expect(r.headers.get('allow')).toBe('GET');
    expectError(await t.get('/prices/batch'), 405, 'method_not_allowed');
  });
});
