import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';

let t: TestApp;

async function gql(query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const res = await t.app.fetch(
    new Request('http://test/graphql', { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify({ query, variables }) }),
  );
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

const FULL_SCHEDULES = `{ websites(includeDeprecated: true) { code feeSchedule { websiteCode slots {
  deposit { purpose calculationChain { id steps { kind id name ... on FeeOperatorStep { operator value } ... on ConvertOperatorStep { mode from { code usdRate } to { code } } } } }
  sale { purpose calculationChain { id steps { kind id name ... on FeeOperatorStep { operator value } ... on ConvertOperatorStep { mode from { code usdRate } to { code } } } } }
  withdraw { purpose calculationChain { id steps { kind id name ... on FeeOperatorStep { operator value } ... on ConvertOperatorStep { mode from { code usdRate } to { code } } } } }
} } } }`;

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [obs('Recoil Case', { price: '2.59' }), obs('Recoil Case', { side: 'bid', price: '2.6' })]);
});
afterAll(async () => {
  await t?.close();
});

describe('GraphQL', () => {
  it('all websites with their full fee schedules run a bounded number of SQL queries, whatever the number of websites', async () => {
    // Once before counting: the replica's background statements at start (the quote cache reading where the change
    // sequence stands) may otherwise fall inside the count.
    await gql(FULL_SCHEDULES);
    const q0 = t.db.queryCount();
    const first = await gql(FULL_SCHEDULES);
    const cost1 = t.db.queryCount() - q0;
    expect(first.body.errors).toBeUndefined();
    expect(first.body.data.websites.length).toBe(16);
    const buff = first.body.data.websites.find((w: any) => w.code === 'BUFF163');
    expect(buff.feeSchedule.slots.sale.calculationChain.steps.map((s: any) => s.kind)).toEqual(['fee', 'convert']);
    expect(cost1).toBeLessThanOrEqual(8);

    // Forty more websites with fee chains of their own: the number of queries stays the same.
    const chain = await t.db.prisma.calculationChain.findUniqueOrThrow({ where: { key: 'official:BUFF163:sale' } });
    for (let i = 0; i < 40; i++) {
      const code = `TEST${i}`;
      await t.db.prisma.website.create({ data: { code, name: code, category: 'marketplace', currencyCode: 'CNY' } });
      await t.db.prisma.feeScheduleSlot.create({ data: { websiteCode: code, purpose: 'sale', chainId: chain.id } });
    }
    const q1 = t.db.queryCount();
    const second = await gql(FULL_SCHEDULES);
    expect(second.body.data.websites.length).toBe(56);
    expect(t.db.queryCount() - q1).toBe(cost1);
  });

  it('prices needs an API key and returns the same data as REST', async () => {
    const query = `query($n: String!) { prices(marketHashName: $n) { appId markets { marketCode side marketPriceAmount } } }`;
    const anon = await gql(query, { n: 'Recoil Case' });
    expect(anon.body.errors[0].extensions.code).toBe('unauthorized');
    const ok = await gql(query, { n: 'Recoil Case' }, t.auth());
    expect(ok.body.data.prices.markets).toEqual([
      { marketCode: 'BUFF163', side: 'ask', marketPriceAmount: '2.59' },
      { marketCode: 'BUFF163', side: 'bid', marketPriceAmount: '2.6' },
    ]);
    expect(ok.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('argument validation uses the REST rules and reports validation_failed with details', async () => {
    const r = await gql(`{ batchPrices(marketHashNames: [], markets: ["bad code"]) { appId } }`, {}, t.auth());
    const e = r.body.errors[0];
    expect(e.extensions.code).toBe('validation_failed');
    expect(e.extensions.details.errors.map((d: any) => d.field).sort()).toEqual(['marketHashNames', 'markets.0']);
  });

  it('every metered root field refuses bad arguments with validation_failed and charges nothing (the metering rule is their only check)', async () => {
    const before = (await t.get('/me', t.auth())).body.data.credit;
    expect(before).toMatchObject({ total: 1000, used: expect.any(Number), remaining: expect.any(Number) });
    const long = 'x'.repeat(5000);
    const cases: [string, string][] = [
      [`{ prices(marketHashName: "") { appId } }`, 'marketHashName'],
      [`{ item(marketHashName: "${long}") { appId } }`, 'marketHashName'],
      [`{ batchPrices(marketHashNames: []) { appId } }`, 'marketHashNames'],
      [`{ routes(marketHashName: "Recoil Case", currency: "cny") { marketHashName } }`, 'currency'],
      [`{ priceHistory(marketHashName: "Recoil Case", from: "2026-02-30") { marketHashName } }`, 'from'],
      [`{ priceChanges(limit: 0) { nextCursor } }`, 'limit'],
      [`{ priceExport(ifNoneMatch: "${long}") { etag } }`, 'ifNoneMatch'],
    ];
    for (const [query, field] of cases) {
      const r = await gql(query, {}, t.auth());
      expect(r.body.errors?.[0]?.extensions?.code, query.slice(0, 60)).toBe('validation_failed');
      expect(r.body.errors[0].extensions.details.errors.map((d: any) => d.field)).toContain(field);
    }
    expect((await t.get('/me', t.auth())).body.data.credit).toEqual(before);
  });

  it('unknown website is a not_found error', async () => {
    const r = await gql(`{ website(code: "NOPE") { code } }`);
    expect(r.body.errors[0].extensions.code).toBe('not_found');
  });

  it('GET /graphql in a browser serves GraphiQL with the fee schedule example', async () => {
    const res = await t.app.fetch(new Request('http://test/graphql', { headers: { Accept: 'text/html' } }));
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('GraphiQL');
    expect(html).toContain('WebsitesWithFeeSchedules');
  });
});

describe('GraphQL as a graph: a quote reaches its marketplace and fee schedule', () => {
  it("one query returns an item's quotes with each market's marketplace and fee schedule, billed as one GET /prices", async () => {
    const { createAccount } = await import('../../src/accounts/accounts.js');
    await ingestQuotes(t.db, [
      obs('Recoil Case', { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', price: '0.31' }),
      obs('Recoil Case', { marketCode: 'CSFLOAT', providerCode: 'CSFLOAT', currencyCode: 'USD', price: '0.35' }),
    ]);
    const a = await createAccount(t.db, { credits: 10n });
    const query = `{ prices(marketHashName: "Recoil Case") { markets { marketCode side website { code name feeSchedule { websiteCode slots {
      sale { purpose calculationChain { id steps { kind name ... on FeeOperatorStep { operator value } } } } } } } } } }`;
    const r = await gql(query, {}, { Authorization: `Bearer ${a.key}` });
    expect(r.body.errors).toBeUndefined();
    const markets = r.body.data.prices.markets as { marketCode: string; website: { code: string; feeSchedule: { websiteCode: string } } | null }[];
    expect(new Set(markets.map((m) => m.marketCode))).toEqual(new Set(['BUFF163', 'SKINPORT', 'CSFLOAT']));
    for (const m of markets) {
      expect(m.website?.code).toBe(m.marketCode);
      expect(m.website?.feeSchedule.websiteCode).toBe(m.marketCode);
    }
    // Billed like GET /prices: the edges cost nothing extra.
    expect(r.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 9 } });
  });
});

describe('GraphQL item root', () => {
  const ITEM_QUERY = `query($n: String!) { item(marketHashName: $n) {
    marketHashName
    quotes(side: ask) { marketCode side marketPriceAmount website { code feeSchedule { slots { sale { calculationChain { steps { kind } } } } } } }
    valuation { valuationDate }
  } }`;

  it("traverses an item's quotes to each marketplace's fee chain in one query, billed as one GET /prices", async () => {
    const { createAccount } = await import('../../src/accounts/accounts.js');
    const a = await createAccount(t.db, { credits: 10n });
    const res = await gql(ITEM_QUERY, { n: 'Recoil Case' }, { Authorization: `Bearer ${a.key}` });
    expect(res.body.errors).toBeUndefined();
    const item = res.body.data.item;
    expect(item.marketHashName).toBe('Recoil Case');
    // Earlier tests of this file added quotes on other markets: every one is an ask and reaches its own marketplace.
    expect(item.quotes.length).toBeGreaterThan(0);
    for (const q of item.quotes) expect([q.side, q.website.code]).toEqual(['ask', q.marketCode]);
    expect(item.quotes.find((q: { marketCode: string }) => q.marketCode === 'BUFF163')).toEqual({
      marketCode: 'BUFF163',
      side: 'ask',
      marketPriceAmount: '2.59',
      website: { code: 'BUFF163', feeSchedule: { slots: { sale: { calculationChain: { steps: [{ kind: 'fee' }, { kind: 'convert' }] } } } } },
    });
    expect(item.valuation).toBeNull(); // not valued yet
    expect(res.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 9 } });
    expect(res.headers.get('ratelimit')).toContain('"getPrices";r=119');

    // With prices in the same operation: two metered fields, two credits, two requests of the limit.
    const both = await gql(`query($n: String!) { item(marketHashName: $n) { marketHashName } prices(marketHashName: $n) { appId } }`, { n: 'Recoil Case' }, { Authorization: `Bearer ${a.key}` });
    expect(both.body.extensions.billing).toEqual({ billable: true, credit: { cost: 2, remaining: 7 } });
  });

  it('an unknown item is null and not billed; a bad name is 422; no key is 401', async () => {
    const { createAccount } = await import('../../src/accounts/accounts.js');
    const a = await createAccount(t.db, { credits: 10n });
    const unknown = await gql(ITEM_QUERY, { n: 'No Such Item' }, { Authorization: `Bearer ${a.key}` });
    expect(unknown.body.data.item).toBeNull();
    expect(unknown.body.extensions?.billing ?? { billable: false }).toEqual({ billable: false });
    const bad = await gql(ITEM_QUERY, { n: '' }, { Authorization: `Bearer ${a.key}` });
    expect(bad.body.errors[0].extensions.code).toBe('validation_failed');
    const anonymous = await gql(ITEM_QUERY, { n: 'Recoil Case' });
    expect(anonymous.body.errors[0].extensions.code).toBe('unauthorized');
  });
});
