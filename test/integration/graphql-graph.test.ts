/**
 * GraphQL as a graph (issue 44 point 2; docs/graphql.md), as a client sees it, on PGlite (a real PostgreSQL database
 * with TEST_DATABASE_URL): a marketplace's quotes as a Relay connection (`Website.quotes`), a quote's item
 * (`MarketQuote.item`), the valuation's mid, band, currency and date, amounts at their currency's precision beside
 * the exact ones, and the untyped `status` deprecated. The new edges answer what REST answers for the same item;
 * they are read in a bounded number of SQL statements whatever the number of quotes or websites (no N+1); and they
 * are billed as the data they deliver, from a free root too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope, QUOTE_SELECTION } from '../helpers/shapes.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { createRateLimiter } from '../../src/limits/rate-limiter.js';
import { loadMarketQuotePages, quoteJson, type MarketQuotePageRequest } from '../../src/quotes/quotes.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
/** Items with a BUFF163 ask and bid each (names sort alike in every collation: same prefix, two-digit numbers). */
const NAMES = Array.from({ length: 24 }, (_, i) => `Sticker | Graph ${String(i + 1).padStart(2, '0')}`);
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
const at = (d: string) => new Date(`2026-07-${d}T00:00:00Z`);
const lit = (s: string) => JSON.stringify(s);

let t: TestApp;

beforeAll(async () => {
  t = await testApp({ rateLimiter: createRateLimiter({ enabled: false }) });
  await ingestQuotes(t.db, [
    ...NAMES.flatMap((n, i) => [obs(n, { price: `${10 + i}.5` }), obs(n, { side: 'bid', price: `${9 + i}.25` })]),
    // ITEM: BUFF163 direct and aggregated (the direct one wins, as in GET /prices), a bid, STEAM in USD.
    obs(ITEM, { price: '201.85', quantity: 12, observedAt: at('15') }),
    obs(ITEM, { providerCode: 'CSGOTRADER', price: '199.00', quantity: null, observedAt: at('16') }),
    obs(ITEM, { side: 'bid', price: '195.5' }),
    obs(ITEM, { marketCode: 'STEAM', providerCode: 'STEAM', currencyCode: 'USD', price: '30.11' }),
    obs(ITEM, { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', price: '25.40' }),
  ]);
  await t.db.query(
    `INSERT INTO valuation (item_id, valuation_date, mid_amount, ask_amount, bid_amount, uncertainty, is_two_sided, ask_quote_count, bid_quote_count, computed_at)
     SELECT id, '2026-07-16', 198.675123, 201.85, 195.5, 0.054321, true, 3, 1, '2026-07-17T00:05:00.250Z' FROM item WHERE market_hash_name = $1`,
    [ITEM],
  );
}, 120_000);
afterAll(async () => {
  await t?.close();
});

/** A quote of GraphQL (QUOTE_SELECTION, camelCase) as the REST MarketQuoteOut writes it. */
function asRest(q: Record<string, unknown>): Record<string, unknown> {
  const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return Object.fromEntries(
    Object.entries(q).map(([k, v]) => [snake(k), v !== null && typeof v === 'object' ? asRest(v as Record<string, unknown>) : v]),
  );
}

/** POST /graphql by the test account; asserts a 200 without errors and returns `data`. */
async function data(query: string, variables: Record<string, unknown> = {}, key = t.key): Promise<any> {
  const res = await t.gql(query, variables, bearer(key));
  expect(res.body.errors, res.text.slice(0, 800)).toBeUndefined();
  expect(res.status).toBe(200);
  return res.body.data;
}

const PAGE = `query($first: Int, $after: String, $last: Int, $before: String, $side: SideFilter! = all) {
  website(code: "BUFF163") { quotes(first: $first, after: $after, last: $last, before: $before, side: $side) {
    edges { cursor node { marketHashName side marketPriceAmount } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }`;

describe('Website.quotes: a marketplace\'s quotes as a cursor connection', () => {
  it('pages forward with first/after: every quote once, in one stable order, the same as one large page', async () => {
    const all = (await data(PAGE, { first: 100 })).website.quotes;
    expect(all.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false });
    const keys = all.edges.map((e: any) => `${e.node.marketHashName}/${e.node.side}`);
    expect(keys).toHaveLength(NAMES.length * 2 + 2);
    expect(new Set(keys).size).toBe(keys.length);
    expect(new Set(keys)).toEqual(new Set([...NAMES.flatMap((n) => [`${n}/ask`, `${n}/bid`]), `${ITEM}/ask`, `${ITEM}/bid`]));
    // Grouped by item, ask before bid.
    for (let i = 0; i < keys.length; i += 2) expect([keys[i].endsWith('/ask'), keys[i + 1].endsWith('/bid')]).toEqual([true, true]);

    const paged: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const page: any = (await data(PAGE, { first: 7, after })).website.quotes;
      pages++;
      expect(page.edges.length).toBeLessThanOrEqual(7);
      expect(page.pageInfo.hasPreviousPage).toBe(after !== null);
      if (page.edges.length > 0) {
        expect(page.pageInfo.startCursor).toBe(page.edges[0].cursor);
        expect(page.pageInfo.endCursor).toBe(page.edges.at(-1).cursor);
      }
      paged.push(...page.edges.map((e: any) => `${e.node.marketHashName}/${e.node.side}`));
      if (!page.pageInfo.hasNextPage) break;
      expect(page.edges).toHaveLength(7);
      after = page.pageInfo.endCursor;
    }
    expect(pages).toBe(Math.ceil(keys.length / 7));
    expect(paged).toEqual(keys);
  });

  it('pages backward with last/before, and filters by side', async () => {
    const all = (await data(PAGE, { first: 100 })).website.quotes.edges;
    const tenth = all[9].cursor;
    const back = (await data(PAGE, { last: 4, before: tenth })).website.quotes;
    expect(back.edges.map((e: any) => e.cursor)).toEqual(all.slice(5, 9).map((e: any) => e.cursor));
    expect(back.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: true });
    const first = (await data(PAGE, { last: 3, before: all[2].cursor })).website.quotes;
    expect(first.edges.map((e: any) => e.cursor)).toEqual(all.slice(0, 2).map((e: any) => e.cursor));
    expect(first.pageInfo.hasPreviousPage).toBe(false);

    const bids = (await data(PAGE, { first: 100, side: 'bid' })).website.quotes.edges;
    expect(bids.map((e: any) => e.node.side)).toEqual(Array(NAMES.length + 1).fill('bid'));
    expect(bids.map((e: any) => e.node.marketHashName)).toEqual(all.filter((e: any) => e.node.side === 'bid').map((e: any) => e.node.marketHashName));
  });

  it('each quote is the one GET /prices gives for its item on the market (the direct quote over the aggregator\'s)', async () => {
    const q = `{ website(code: "BUFF163") { quotes(first: 100) { edges { node { marketHashName appId ${QUOTE_SELECTION.trim().slice(1, -1)} } } } } }`;
    const edges = (await data(q)).website.quotes.edges;
    for (const name of [ITEM, NAMES[0]!, NAMES[23]!]) {
      const rest = expectEnvelope(await t.get(`/prices?market_hash_name=${encodeURIComponent(name)}&markets=BUFF163`, t.auth()));
      const mine = edges.filter((e: any) => e.node.marketHashName === name).map((e: any) => {
        const { marketHashName, appId, ...quote } = e.node;
        expect([marketHashName, appId]).toEqual([name, '730']);
        return asRest(quote);
      });
      expect(mine).toEqual(rest.markets);
    }
    const ask = edges.find((e: any) => e.node.marketHashName === ITEM && e.node.side === 'ask').node;
    expect([ask.providerCode, ask.marketPriceAmount, ask.quantity]).toEqual(['BUFF163', '201.85', 12]);
  });

  it('the page is the same whichever way the market is read (item by item on a dense market, sorted whole on a sparse one)', async () => {
    const all = (await data(PAGE, { first: 100 })).website.quotes.edges.map((e: any) => e.node);
    const at = (i: number) => ({ marketHashName: all[i].marketHashName, side: all[i].side });
    const base: MarketQuotePageRequest = { appId: '730', marketCode: 'BUFF163', side: 'all', after: null, before: null, inverted: false, limit: 8 };
    const requests: MarketQuotePageRequest[] = [
      base,
      { ...base, after: at(6) },
      { ...base, after: at(6), before: at(12) },
      { ...base, inverted: true },
      { ...base, inverted: true, before: at(20), limit: 5 },
      { ...base, inverted: true, after: at(3), before: at(9) },
      { ...base, side: 'bid', after: at(1), limit: 100 },
      { ...base, marketCode: 'STEAM' },
      { ...base, marketCode: 'OPSKINS' },
      { ...base, appId: '570' },
    ];
    const text = (pages: Awaited<ReturnType<typeof loadMarketQuotePages>>) => pages.map((p) => p.map((q) => `${q.marketHashName} ${JSON.stringify(quoteJson(q))}`));
    const dense = text(await loadMarketQuotePages(t.db, requests, 0)); // every market read item by item
    const sorted = text(await loadMarketQuotePages(t.db, requests, 1_000_000)); // every market sorted whole
    expect(dense).toEqual(sorted);
    expect(dense.map((p) => p.length)).toEqual([8, 8, 5, 8, 5, 5, NAMES.length, 1, 0, 0]);
    expect(dense[1]!.map((l) => l.split(' {')[0])).toEqual(all.slice(7, 15).map((q: any) => q.marketHashName));
  });

  it('a bad argument is a validation error on the field, which is then null (the website is still answered)', async () => {
    for (const args of ['first: 0', 'first: 101', 'first: 2, last: 2', 'after: "not-a-cursor"', 'before: "WyJ4Il0"']) {
      const res = await t.gql(`{ website(code: "BUFF163") { code quotes(${args}) { edges { cursor } } } }`, {}, t.auth());
      expect(res.status, args).toBe(200);
      expect(res.body.data.website, args).toEqual({ code: 'BUFF163', quotes: null });
      expect(res.body.errors.map((e: any) => [e.extensions.code, e.path.join('.')]), args).toEqual([['validation_failed', 'website.quotes']]);
      expect(res.body.extensions.billing, args).toEqual({ billable: false });
    }
  });
});

describe('MarketQuote.item and the valuation', () => {
  it('a quote reaches its item: the same quotes and valuation as the item root field and GET /prices', async () => {
    const ITEM_SELECTION = `{ appId marketHashName quotes ${QUOTE_SELECTION} valuation { mid midRounded currency asOf band { low high lowRounded highRounded } } }`;
    const viaEdge = await data(`{ website(code: "STEAM") { quotes(first: 5) { edges { node { marketHashName item ${ITEM_SELECTION} } } } } }`);
    const [edge] = viaEdge.website.quotes.edges;
    expect(edge.node.marketHashName).toBe(ITEM);
    const root = await data(`{ item(marketHashName: ${lit(ITEM)}) ${ITEM_SELECTION} }`);
    expect(edge.node.item).toEqual(root.item);
    const rest = expectEnvelope(await t.get(`/prices?market_hash_name=${encodeURIComponent(ITEM)}`, t.auth()));
    expect(edge.node.item.quotes.map(asRest)).toEqual(rest.markets);

    // The valuation: the mid is the CSCP quote's price, the currency its currency, asOf its computation time.
    const cscp = rest.markets.find((m: any) => m.market_code === 'CSCP');
    const v = edge.node.item.valuation;
    expect(v.mid).toBe(cscp.market_price_amount);
    expect(v.mid).toBe('198.675123');
    expect(v.midRounded).toBe('198.68');
    expect(v.currency).toBe(cscp.market_currency_code);
    expect(v.asOf).toBe(cscp.changed_at);
    expect(v.asOf).toBe('2026-07-17T00:05:00.250Z');
    // The band: the figures GET /prices/history publishes for the valuation's day.
    const history = expectEnvelope(await t.get(`/prices/history?market_hash_name=${encodeURIComponent(ITEM)}&from=2026-07-16&to=2026-07-16&side=mid`, t.auth()));
    expect(history.cscp).toHaveLength(1);
    expect([v.band.low, v.band.high]).toEqual([history.cscp[0].band_low, history.cscp[0].band_high]);
    expect([v.band.low, v.band.high]).toEqual(['188.1708', '209.7659']);
    expect([v.band.lowRounded, v.band.highRounded]).toEqual(['188.17', '209.77']);
  });

  it('amounts: the exact value stays, a Rounded sibling gives it at the currency\'s precision (JPY 0 decimals, USD 2)', async () => {
    const d = await data(`{
      prices(marketHashName: ${lit(ITEM)}, markets: ["BUFF163"], side: ask) { markets {
        jpy: converted(currency: "JPY") { amount amountRounded currencyCode }
        usd: converted(currency: "USD") { amount amountRounded }
        afterFees(path: SALE, currency: "USD") { amount amountRounded steps { amount amountRounded currencyCode } } } }
      routes(marketHashName: ${lit(ITEM)}, currency: "USD", includeUnpriced: true) { routes { netAmount netAmountRounded buy { amount amountRounded } } }
      currencies { code decimals } }`);
    const [q] = d.prices.markets;
    expect(q.jpy.amount.split('.')[1]?.length ?? 0).toBeGreaterThan(6); // the converted amount carries its rates' digits
    expect(q.jpy.amountRounded).toMatch(/^\d+$/);
    expect(Math.abs(Number(q.jpy.amountRounded) - Number(q.jpy.amount))).toBeLessThanOrEqual(0.5);
    expect(q.usd.amountRounded).toMatch(/^\d+(\.\d{1,2})?$/);
    expect(q.afterFees.amountRounded).toMatch(/^\d+(\.\d{1,2})?$/);
    for (const s of q.afterFees.steps) expect(s.amountRounded.split('.')[1]?.length ?? 0).toBeLessThanOrEqual(s.currencyCode === 'JPY' ? 0 : 2);
    expect(d.routes.routes.length).toBeGreaterThan(0);
    for (const r of d.routes.routes) {
      if (r.netAmount === null) continue;
      expect(r.netAmountRounded).toMatch(/^-?\d+(\.\d{1,2})?$/);
      expect(Math.abs(Number(r.netAmountRounded) - Number(r.netAmount))).toBeLessThanOrEqual(0.005);
    }
    // The exact fields are what GET /prices/routes answers (their meaning unchanged).
    const rest = expectEnvelope(await t.get(`/prices/routes?market_hash_name=${encodeURIComponent(ITEM)}&currency=USD&include_unpriced=true`, t.auth()));
    expect(d.routes.routes.map((r: any) => r.netAmount)).toEqual(rest.routes.map((r: any) => r.net_amount));
    const decimals = Object.fromEntries(d.currencies.map((c: any) => [c.code, c.decimals]));
    expect([decimals.USD, decimals.CNY, decimals.EUR, decimals.JPY, decimals.KRW]).toEqual([2, 2, 2, 0, 0]);
  });

  it('the untyped `status` is deprecated in favour of `statusHistory`', async () => {
    const d = await data(`{ __type(name: "Query") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }`);
    const byName = Object.fromEntries(d.__type.fields.map((f: any) => [f.name, f]));
    expect(byName.status.isDeprecated).toBe(true);
    expect(byName.status.deprecationReason).toMatch(/statusHistory/);
    expect(byName.statusHistory.isDeprecated).toBe(false);
  });
});

describe('loaders batch every new edge (no N+1)', () => {
  /** The fewest SQL statements of three runs of `query` (a background statement of the app may land in one run). */
  async function statements(x: TestApp, query: string, key: string): Promise<number> {
    let fewest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 3; i++) {
      const before = x.db.queryCount();
      const res = await x.gql(query, {}, bearer(key));
      expect(res.body.errors, res.text.slice(0, 500)).toBeUndefined();
      fewest = Math.min(fewest, x.db.queryCount() - before);
    }
    return fewest;
  }

  const ITEMS_OF_PAGE = (n: number) =>
    `{ website(code: "BUFF163") { quotes(first: ${n}, side: ask) { edges { node { marketPriceAmount website { code } item { marketHashName quotes { marketCode } valuation { mid band { low } } } } } } } }`;

  for (const quoteCache of [true, false]) {
    it(`20 quotes' item edges cost the statements of 2 (quote cache ${quoteCache ? 'on' : 'off'})`, async () => {
      const x = quoteCache ? t : await testApp({ quoteCache: false, rateLimiter: createRateLimiter({ enabled: false }) });
      try {
        if (!quoteCache) await ingestQuotes(x.db, NAMES.map((n) => obs(n, { price: '3' })));
        const a = await createAccount(x.db, { credits: 1_000_000n }); // charged from a credit lease: no statement per request
        const two = await statements(x, ITEMS_OF_PAGE(2), a.key);
        const twenty = await statements(x, ITEMS_OF_PAGE(20), a.key);
        expect((await x.gql(ITEMS_OF_PAGE(20), {}, bearer(a.key))).body.data.website.quotes.edges.filter((e: any) => e.node.item !== null)).toHaveLength(20);
        expect(twenty).toBe(two);
        // The website, the page, and without the quote cache the items' quotes: one statement each.
        expect(twenty).toBeLessThanOrEqual(quoteCache ? 2 : 3);
      } finally {
        if (x !== t) await x.close();
      }
    });
  }

  it("every website's quotes in one query cost the statements of one website's", async () => {
    const a = await createAccount(t.db, { credits: 1_000_000n });
    const count = (await data('{ websites { code } }')).websites.length;
    expect(count).toBeGreaterThanOrEqual(10);
    const one = await statements(t, '{ website(code: "BUFF163") { quotes(first: 3) { edges { node { marketPriceAmount } } } } }', a.key);
    const all = await statements(t, '{ websites { code quotes(first: 3) { edges { node { marketPriceAmount } } pageInfo { hasNextPage } } } }', a.key);
    // `websites` lists the marketplaces (one statement); all their pages are one more.
    expect(all).toBeLessThanOrEqual(one + 1);
    expect(all).toBeLessThanOrEqual(2);
  });
});

describe('billing follows the data of the new edges', () => {
  /** GET /me `credit.used` of a key. */
  async function used(key: string): Promise<number> {
    return expectEnvelope(await t.get('/me', bearer(key))).credit.used;
  }

  it('a 5-credit account pays each page and item batch it receives, from a free root too; what it cannot pay it does not get', async () => {
    const five = await createAccount(t.db, { credits: 5n });
    // A page of 10 (up to 100 quotes: one started block of POST /prices/batch).
    const page = await t.gql('{ website(code: "BUFF163") { code quotes(first: 10) { edges { node { marketHashName } } } } }', {}, bearer(five.key));
    expect(page.status).toBe(200);
    expect(page.body.data.website.quotes.edges).toHaveLength(10);
    expect(page.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 4 } });
    expect(await used(five.key)).toBe(1);

    // The page and its 10 items: 1 + 1 credits.
    const items = await t.gql('{ website(code: "BUFF163") { quotes(first: 10) { edges { node { item { valuation { mid } } } } } } }', {}, bearer(five.key));
    expect(items.body.data.website.quotes.edges.map((e: any) => e.node.item === null)).toEqual(Array(10).fill(false));
    expect(items.body.extensions.billing).toEqual({ billable: true, credit: { cost: 2, remaining: 2 } });
    expect(await used(five.key)).toBe(3);

    // Below a quote's item, routes are GET /prices/routes per item: 1 (item) + 1 (its 5 quotes' items) + 5 (their routes),
    // and at least 3 are needed up front (one of each).
    const routes = await t.gql(`{ item(marketHashName: ${lit(ITEM)}) { quotes { item { routes(currency: "USD") { status } } } } }`, {}, bearer(five.key));
    expect(routes.status).toBe(402);
    expect(routes.body.data ?? null).toBeNull();
    expect(routes.body.errors[0].extensions.code).toBe('credit_insufficient');
    expect(await used(five.key)).toBe(3);

    // Every website's page of 100: admitted (one page's credit is left), but more than the 2 credits left once read,
    // so nothing is sent and nothing is charged.
    const all = await t.gql('{ websites { code quotes(first: 100) { edges { node { marketHashName } } } } }', {}, bearer(five.key));
    expect(all.status).toBe(402);
    expect(all.body.data ?? null).toBeNull();
    expect(all.body.errors[0].extensions.code).toBe('credit_insufficient');
    expect(await used(five.key)).toBe(3);

    // The free fields of the same roots stay free; a bad page argument is not charged.
    const free = await t.gql('{ websites { code } website(code: "BUFF163") { name quotes(first: 0) { edges { cursor } } } }', {}, bearer(five.key));
    expect(free.status).toBe(200);
    expect(free.body.extensions.billing).toEqual({ billable: false });
    expect(await used(five.key)).toBe(3);
  });

  it('the exact charge of edges under a metered root: item (1) + its quotes\' items (1 batch) + their routes (1 each)', async () => {
    const rich = await createAccount(t.db, { credits: 100n });
    const res = await t.gql(`{ item(marketHashName: ${lit(ITEM)}) { routes(currency: "USD") { status } quotes { marketCode item { routes(currency: "USD") { status } } } } }`, {}, bearer(rich.key));
    expect(res.status).toBe(200);
    const quotes = res.body.data.item.quotes.length;
    expect(quotes).toBe(5); // BUFF163 ask and bid, CSCP, SKINPORT, STEAM, as GET /prices lists them
    expect(res.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1 + 1 + quotes, remaining: 100 - 2 - quotes } });
    expect(await used(rich.key)).toBe(2 + quotes);
  });

  it('a 0-credit account is refused the edges (402, nothing sent) but keeps the free catalogue; no key: 401', async () => {
    const zero = await createAccount(t.db, { credits: 0n });
    for (const q of ['{ website(code: "BUFF163") { quotes(first: 1) { edges { cursor } } } }', `{ websites { quotes { edges { node { item { marketHashName } } } } } }`]) {
      const res = await t.gql(q, {}, bearer(zero.key));
      expect(res.status, q).toBe(402);
      expect(res.body.data ?? null, q).toBeNull();
      expect(res.body.errors[0].extensions.code, q).toBe('credit_insufficient');
    }
    const free = await t.gql('{ website(code: "BUFF163") { code feeSchedule { asOf } } }', {}, bearer(zero.key));
    expect(free.status).toBe(200);
    expect(free.body.data.website.code).toBe('BUFF163');
    expect(await used(zero.key)).toBe(0);
    const anonymous = await t.gql('{ website(code: "BUFF163") { quotes(first: 1) { edges { cursor } } } }');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.data ?? null).toBeNull();
    expect((await t.gql('{ websites { code } }')).status).toBe(200);
  });

  it('each selection of an edge counts one request towards its row\'s rate limit (POST /prices/batch: 20 a minute)', async () => {
    const x = await testApp(); // the default limiter
    try {
      await ingestQuotes(x.db, [obs(ITEM, { price: '1' })]);
      const a = await createAccount(x.db, { credits: 1000n });
      const two = '{ a: website(code: "BUFF163") { quotes(first: 1) { edges { cursor } } } b: website(code: "STEAM") { quotes(first: 1) { edges { cursor } } } }';
      for (let i = 0; i < 10; i++) expect((await x.gql(two, {}, bearer(a.key))).status).toBe(200);
      const refused = await x.gql('{ website(code: "BUFF163") { quotes(first: 1) { edges { cursor } } } }', {}, bearer(a.key));
      expect(refused.status).toBe(429);
      expect(refused.body.errors[0].extensions.code).toBe('rate_limited');
      // The free fields of the same root are not limited.
      expect((await x.gql('{ website(code: "BUFF163") { code } }', {}, bearer(a.key))).status).toBe(200);
    } finally {
      await x.close();
    }
  });

  it('a subscription may not select an edge (its data would go out with every event): 422 before it starts, nothing charged', async () => {
    const a = await createAccount(t.db, { credits: 10n });
    const res = await t.gql('subscription { quoteChanged { marketHashName quote { item { valuation { mid } } } } }', {}, { ...bearer(a.key), Accept: 'text/event-stream' });
    expect(res.text).toContain('validation_failed');
    expect(res.text).toContain('MarketQuote.item cannot be selected in a subscription');
    expect(await used(a.key)).toBe(0);
  });
});
