/**
 * A charge follows the data (issue 41, point 1; README, Billing; docs/reliability.md): a metered root field is
 * charged its full cost whenever any of its priced data leaves the service, and when it is not charged none of its
 * data is sent. Errors inside a field's answer (an unknown currency on `converted`, a bad date on a fee schedule)
 * never waive its charge, and errors elsewhere in the operation never waive another field.
 *
 * Checked as a property (fast-check) on both faces, for every catalogue row with a credit cost (data/endpoints.json;
 * the subscriptions are billed per minute while open, live/live-billing.ts, and are not answers of one request):
 * - GraphQL: operations of one to three metered root fields with generated selections whose nested arguments are
 *   valid or not (unknown and malformed currencies, impossible and out-of-range dates, nulls, bad markets);
 * - REST: the same operations with valid and invalid parameters, HEAD, conditional exports, streamed batches;
 * by a rich key (charged from a credit lease), a 5-credit key and a 0-credit key. Quote selections also take the
 * metered edges (a quote's `item`, its marketplace's quote page; docs/graphql.md), charged per value delivered. After each request, GET /me
 * `credit.used` moved by exactly the cost of the fields whose data the body holds (an export answered "not
 * modified" holds none), `extensions.billing` / `meta` report that cost, and an answer with data is a 200.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { creditCounters } from '../helpers/credits.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { currentSnapshot, runExportSnapshots } from '../../src/exports/exports.js';
import { createRateLimiter } from '../../src/limits/rate-limiter.js';
import { ENDPOINTS, type EndpointInfo } from '../../src/catalogue/endpoints.js';
import { operationCost } from '../../src/accounts/billing.js';
import { schema } from '../../src/graphql/schema.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 4141;
/** Generated cases per property: FUZZ_RUNS (100-1000), default 200. */
const RUNS = process.env.FUZZ_RUNS ? Math.max(100, Math.min(Number(process.env.FUZZ_RUNS), 1000)) : 200;
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

let t: TestApp;
let etag: string;
let rich: { id: string; key: string };

/** Catalogue rows with a credit cost, by the GraphQL query root field tied to them. */
const QUERY_FIELDS = schema.getQueryType()!.getFields();
const PRICED_ROWS = ENDPOINTS.filter((e) => e.creditCost > 0);
const ROW_OF_FIELD = new Map<string, EndpointInfo>(PRICED_ROWS.flatMap((e) => e.graphqlFields.filter((f) => f in QUERY_FIELDS).map((f) => [f, e] as const)));

beforeAll(async () => {
  t = await testApp({ rateLimiter: createRateLimiter({ enabled: false }) });
  const ask = (market: string, currency: string, price: string) => obs(ITEM, { marketCode: market, providerCode: market, currencyCode: currency, price });
  await ingestQuotes(t.db, [
    ask('BUFF163', 'CNY', '1450'),
    ask('STEAM', 'USD', '260.12'),
    ask('SKINPORT', 'EUR', '180.5'),
    ask('CSFLOAT', 'USD', '199.99'),
    ask('C5GAME', 'CNY', '1420'),
    ask('BITSKINS', 'USD', '195'),
    obs(ITEM, { side: 'bid', price: '1400' }),
    obs('Recoil Case', { price: '2.59' }),
    obs('Recoil Case', { side: 'bid', price: '2.6' }),
  ]);
  await runExportSnapshots(t.db);
  etag = (await currentSnapshot(t.db, '730', 'ask'))!.etag;
  const a = await createAccount(t.db, { credits: 1_000_000n }); // charged from a credit lease (README, Billing)
  rich = { id: a.accountId, key: a.key };
}, 120_000);
afterAll(async () => {
  await t?.close();
});

type Caller = 'rich' | 'five' | 'zero';

/** The key of a caller kind: the rich account, or a new account with 5 or 0 credits. */
async function keyOf(kind: Caller): Promise<{ id: string; key: string }> {
  if (kind === 'rich') return rich;
  const a = await createAccount(t.db, { credits: kind === 'five' ? 5n : 0n });
  return { id: a.accountId, key: a.key };
}

/** GET /me `credit.used` of a key (what the account has spent, leases included). */
async function used(key: string): Promise<number> {
  const me = await t.get('/me', bearer(key));
  expect(me.status).toBe(200);
  expect(typeof me.body.data.credit.used).toBe('number');
  return me.body.data.credit.used;
}

const callerArb = fc.oneof({ arbitrary: fc.constant<Caller>('rich'), weight: 5 }, { arbitrary: fc.constant<Caller>('five'), weight: 3 }, { arbitrary: fc.constant<Caller>('zero'), weight: 1 });
const maybe = <T,>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 2 });
const lit = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? `[${v.map(lit).join(', ')}]` : JSON.stringify(v));
const arg = (name: string, v: unknown): string => (v === undefined ? '' : `${name}: ${lit(v)}`);
const args = (...parts: string[]): string => {
  const kept = parts.filter((p) => p !== '');
  return kept.length > 0 ? `(${kept.join(', ')})` : '';
};

// Argument pools: valid values and the invalid ones a client sends (unknown and malformed codes, impossible and
// out-of-range dates, nulls, empty strings). A root field's arguments are mostly valid (an invalid one refuses the
// whole operation before any resolver runs); nested arguments are invalid half of the time.
const mostly = <T,>(valid: readonly T[], invalid: readonly T[]): fc.Arbitrary<T> =>
  fc.oneof({ arbitrary: fc.constantFrom(...valid), weight: 8 }, { arbitrary: fc.constantFrom(...invalid), weight: 1 });
const GOOD_CURRENCIES = ['USD', 'EUR', 'CNY'] as const;
const BAD_CURRENCIES = ['ZZZ', 'XXX', 'usd', '', null] as const;
const CURRENCIES = [...GOOD_CURRENCIES, ...BAD_CURRENCIES] as const;
const GOOD_DATES = ['2026-07-16', '2025-09-01', '2026-07-01', '2024-02-29'] as const;
const BAD_DATES = ['0000-01-01', '9999-12-31', '2026-02-30', '2025-02-29', 'not a date', '', null] as const;
const DATES = [...GOOD_DATES, ...BAD_DATES] as const;
const name = mostly([ITEM, ITEM, 'Recoil Case', 'No Such Item'], ['']);
const markets = mostly([undefined, undefined, null, ['BUFF163'], ['STEAM', 'SKINPORT'], ['NOPE1']], [['bad code'], []]);
const rootDate = mostly([undefined, undefined, ...GOOD_DATES], BAD_DATES);
const SIDES = [undefined, 'all', 'ask', 'bid'] as const;
const FEE_PATHS = ['SALE', 'DEPOSIT', 'SALE_THEN_WITHDRAW', 'WITHDRAW'] as const;

/** A MarketQuote selection: plain fields and nested fields with generated arguments. */
const quoteSelection: fc.Arbitrary<string> = fc
  .record({
    plain: fc.subarray(['marketCode', 'side', 'marketPriceAmount', 'marketCurrencyCode', 'quantity', 'observedAt']),
    converted: maybe(fc.constantFrom(...CURRENCIES)),
    afterFees: maybe(fc.tuple(fc.constantFrom(...FEE_PATHS), fc.constantFrom(undefined, ...CURRENCIES))),
    website: maybe(fc.constantFrom(undefined, ...DATES)),
    valuation: fc.boolean(),
    // Metered edges (docs/graphql.md): the quote's item, its marketplace's quote page (sizes valid or not).
    item: fc.oneof({ arbitrary: fc.constant(false), weight: 3 }, { arbitrary: fc.constant(true), weight: 1 }),
    page: fc.option(fc.constantFrom(1, 5, 100, 0, 101), { nil: undefined, freq: 4 }),
  })
  .map((s) => {
    const parts: string[] = [...s.plain];
    if (s.item) parts.push('item { marketHashName valuation { mid band { low } } }');
    if (s.page !== undefined) parts.push(`pages${s.page}: website { quotes(first: ${s.page}) { edges { node { marketHashName } } } }`);
    if (s.converted !== undefined) parts.push(`converted${args(arg('currency', s.converted))} { amount currencyCode }`);
    if (s.afterFees) parts.push(`afterFees(path: ${s.afterFees[0]}${s.afterFees[1] === undefined ? '' : `, ${arg('currency', s.afterFees[1])}`}) { amount priced }`);
    if (s.website !== undefined) parts.push(`website { code feeSchedule${args(arg('asOf', s.website ?? undefined))} { asOf } }`);
    if (s.valuation) parts.push('valuation { valuationDate }');
    return `{ ${parts.length > 0 ? parts.join(' ') : '__typename'} }`;
  });

/** One generated metered root field: its name, text without the alias, and its units (names of a batch). */
interface RootField {
  field: string;
  text: string;
  units: number;
}

/** Generators of every metered query root field (the test checks that none is missing). */
const ROOT_FIELDS: Record<string, fc.Arbitrary<RootField>> = {
  prices: fc.tuple(name, markets, fc.constantFrom(...SIDES), quoteSelection, fc.boolean()).map(([n, m, s, q, json]) => ({
    field: 'prices',
    text: `prices${args(arg('marketHashName', n), arg('markets', m), s ? `side: ${s}` : '')} { marketHashName markets ${q}${json ? ' marketsJson' : ''} }`,
    units: 1,
  })),
  item: fc
    .record({
      name,
      quotes: maybe(fc.tuple(fc.constantFrom(...SIDES), markets, quoteSelection)),
      history: maybe(fc.tuple(fc.constantFrom(undefined, ...DATES), fc.constantFrom(undefined, ...DATES), fc.constantFrom(undefined, 'DAY', 'MONTH'))),
      routes: maybe(fc.constantFrom(...CURRENCIES)),
      valuation: fc.boolean(),
    })
    .map((s) => {
      const parts = ['marketHashName'];
      if (s.quotes) parts.push(`quotes${args(s.quotes[0] ? `side: ${s.quotes[0]}` : '', arg('markets', s.quotes[1]))} ${s.quotes[2]}`);
      if (s.history) parts.push(`history${args(arg('from', s.history[0]), arg('to', s.history[1]), s.history[2] ? `interval: ${s.history[2]}` : '')} { from to series { marketCode } }`);
      if (s.routes !== undefined) parts.push(`routes${args(arg('currency', s.routes))} { status netAmount }`);
      if (s.valuation) parts.push('valuation { valuationDate }');
      return { field: 'item', text: `item${args(arg('marketHashName', s.name))} { ${parts.join(' ')} }`, units: 1 };
    }),
  batchPrices: fc.tuple(mostly([1, 3, 100, 150], [0]), name, markets, quoteSelection).map(([k, n, m, q]) => {
    const names = Array.from({ length: k }, (_, i) => (i % 3 === 2 ? 'Recoil Case' : n));
    return { field: 'batchPrices', text: `batchPrices${args(arg('marketHashNames', names), arg('markets', m))} { side items { marketHashName markets ${q} } }`, units: k };
  }),
  priceChanges: fc.tuple(mostly([undefined, null, '0', '1', '3'], ['abc', '-1', '99999999']), mostly([undefined, 1, 2, 1000], [0]), quoteSelection).map(([since, limit, q]) => ({
    field: 'priceChanges',
    text: `priceChanges${args(arg('since', since), arg('limit', limit))} { nextCursor hasMore changes { seq marketCode quote ${q} } }`,
    units: 1,
  })),
  priceHistory: fc
    .tuple(name, rootDate, rootDate, fc.constantFrom(undefined, 'DAY', 'WEEK', 'MONTH'), markets)
    .map(([n, from, to, interval, m]) => ({
      field: 'priceHistory',
      text: `priceHistory${args(arg('marketHashName', n), arg('from', from), arg('to', to), interval ? `interval: ${interval}` : '', arg('markets', m))} { from to series { marketCode } cscp { __typename } }`,
      units: 1,
    })),
  routes: fc.tuple(name, mostly(GOOD_CURRENCIES, BAD_CURRENCIES), markets).map(([n, c, sell]) => ({
    field: 'routes',
    text: `routes${args(arg('marketHashName', n), arg('currency', c), arg('sellOn', sell))} { currencyCode routes { status netAmount buy { marketCode } } }`,
    units: 1,
  })),
  topRoutes: fc.tuple(mostly(GOOD_CURRENCIES, BAD_CURRENCIES), mostly([undefined, 1, 20, 100], [0, 101]), mostly([undefined, null, '0', '-1'], ['x', '1001'])).map(([c, limit, margin]) => ({
    field: 'topRoutes',
    text: `topRoutes${args(arg('currency', c), arg('limit', limit), arg('minMargin', margin), 'fund: balance, payout: balance')} { candidateItems routes { marketHashName route { margin } } }`,
    units: 1,
  })),
  items: fc
    .tuple(mostly(['redline', 'ak47 redline ft', 'recoil case', 'no such thing'], ['', '|||']), mostly([undefined, 1, 20, 50], [0, 51]), mostly([undefined, null], ['not a cursor']), quoteSelection)
    .map(([search, first, after, q]) => ({
      field: 'items',
      text: `items${args(arg('search', search), arg('first', first), arg('after', after))} { words hits { marketHashName type cscp ${q} } nextCursor }`,
      units: 1,
    })),
  priceExport: fc.constantFrom<string | null | undefined>(undefined, null, 'current', '"other"', '*', '').map((e) => ({
    field: 'priceExport',
    text: `priceExport${args(arg('ifNoneMatch', e === 'current' ? etag : e))} { etag notModified byteSize }`,
    units: 1,
  })),
};

const BATCH = ENDPOINTS.find((e) => e.operationId === 'batchPrices')!;

/**
 * Credits owed for the metered edges in one root field's answer (docs/graphql.md, Billing): the quotes whose `item`
 * is not null are one batch of that many names; the quotes whose marketplace's quote page (aliased `pages<first>`)
 * is not null one batch of as many names as the pages ask for. Each generated root field selects each edge in one
 * place (its quote selection).
 */
function edgesCost(value: unknown): number {
  let items = 0;
  let pageUnits = 0;
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (v === null || typeof v !== 'object') return;
    for (const [k, child] of Object.entries(v as Record<string, any>)) {
      if (k === 'item') items += child === null ? 0 : 1;
      else if (k.startsWith('pages')) pageUnits += child?.quotes ? Number(k.slice('pages'.length)) : 0;
      else walk(child);
    }
  };
  walk(value);
  return (items > 0 ? Number(operationCost(BATCH, items)) : 0) + (pageUnits > 0 ? Number(operationCost(BATCH, pageUnits)) : 0);
}

/** Both media types of GraphQL over HTTP (Yoga picks a status differently for plain JSON). */
const ACCEPTS = ['application/graphql-response+json', 'application/json'] as const;

/** Figures of the GraphQL property, so the test can show the interesting cases were reached. */
const seen = { partialCharged: 0, refusedUncharged: 0, charged: 0, insufficient: 0, edgesCharged: 0 };

describe('GraphQL: a metered root field is charged whenever its data is in the answer', () => {
  it('the generators cover every metered query root field of the catalogue', () => {
    expect(Object.keys(ROOT_FIELDS).sort()).toEqual([...ROW_OF_FIELD.keys()].sort());
  });

  it(`${RUNS} generated operations (one to three metered fields, invalid nested arguments): the full cost is charged or the body holds none of the field's data`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(...Object.values(ROOT_FIELDS)), { minLength: 1, maxLength: 3 }), callerArb, fc.constantFrom(...ACCEPTS), async (fields, kind, accept) => {
        const caller = await keyOf(kind);
        const query = `{ ${fields.map((f, i) => `f${i}: ${f.text}`).join(' ')} }`;
        const before = await used(caller.key);
        const res = await t.gql(query, {}, { ...bearer(caller.key), Accept: accept });
        const after = await used(caller.key);
        const data = res.body?.data as Record<string, any> | null | undefined;
        let cost = 0;
        let delivered = false;
        fields.forEach((f, i) => {
          const value = data?.[`f${i}`];
          if (value === null || value === undefined) return;
          delivered = true;
          // An export answered "not modified" (the 304 of GraphQL) holds no priced data and is free.
          if (f.field === 'priceExport' && value.notModified === true) return;
          const edges = edgesCost(value);
          if (edges > 0) seen.edgesCharged++;
          cost += Number(operationCost(ROW_OF_FIELD.get(f.field)!, f.units)) + edges;
        });
        const where = `${kind} (${accept}) ${query}\n  -> ${res.status} ${res.text.slice(0, 600)}`;
        expect(after - before, `credits used ${before} -> ${after}, data worth ${cost}: ${where}`).toBe(cost);
        if (cost > 0) {
          expect(res.body.extensions?.billing, where).toMatchObject({ billable: true, credit: { cost } });
          seen.charged++;
          if (res.body.errors?.length) seen.partialCharged++;
        } else {
          expect(res.body.extensions?.billing?.billable ?? false, where).toBe(false);
          if (res.body.errors?.length) seen.refusedUncharged++;
        }
        // GraphQL over HTTP: an answer that carries data is a 200, errors or not; a charged answer is never a 4xx.
        if (delivered) expect(res.status, where).toBe(200);
        if (kind === 'zero') expect(cost, where).toBe(0);
        if (res.body.errors?.some((e: any) => e.extensions?.code === 'credit_insufficient')) {
          seen.insufficient++;
          expect(data ?? null, where).toBeNull();
          expect(res.status, where).toBe(402);
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
    console.log(`billing-follows-data (GraphQL): seed ${SEED}, ${RUNS} runs, ${JSON.stringify(seen)}`);
    // The property reached the cases that matter: charged answers with nested errors, refusals, 402s.
    expect(seen.partialCharged, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.refusedUncharged, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.insufficient, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.edgesCharged, JSON.stringify(seen)).toBeGreaterThan(0);
    // The books agree with what GET /me showed (creditCounters throws when credits_used and the ledger disagree).
    const counters = await creditCounters((sql, params) => t.db.query(sql, params), rich.id);
    expect(counters.used).toBe(await used(rich.key));
    expect(counters.charged).toBe(counters.used);
  }, 600_000);

  it('the reported cases: converted(currency: "ZZZ") under prices, item, batchPrices of 1,000 names and priceChanges(since: "0") are each charged', async () => {
    const five = await keyOf('five');
    const q = (where: string) => `{ ${where} }`;
    const CONVERTED = `{ marketCode marketPriceAmount converted(currency: "ZZZ") { amount } }`;

    const prices = await t.gql(q(`prices(marketHashName: ${lit(ITEM)}) { markets ${CONVERTED} }`), {}, bearer(five.key));
    expect(prices.status).toBe(200);
    expect(prices.body.data.prices.markets).toHaveLength(7);
    expect(prices.body.errors).toHaveLength(7);
    expect(prices.body.errors.every((e: any) => e.extensions.code === 'validation_failed' && e.path.at(-1) === 'converted')).toBe(true);
    expect(prices.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 4 } });

    const item = await t.gql(
      q(`item(marketHashName: ${lit(ITEM)}) { quotes ${CONVERTED} history(from: "2026-07-01") { from } routes(currency: "USD") { status } valuation { valuationDate } }`),
      {},
      bearer(five.key),
    );
    expect(item.status).toBe(200);
    expect(item.body.data.item.quotes.length).toBeGreaterThan(0);
    expect(item.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 3 } });

    const changes = await t.gql(q(`priceChanges(since: "0") { nextCursor changes { seq quote ${CONVERTED} } }`), {}, bearer(five.key));
    expect(changes.status).toBe(200);
    expect(changes.body.data.priceChanges.changes.length).toBeGreaterThan(0);
    expect(changes.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 2 } });
    expect(await used(five.key)).toBe(3);

    const ten = await createAccount(t.db, { credits: 10n });
    const names = Array.from({ length: 1000 }, (_, i) => (i % 2 ? ITEM : 'Recoil Case'));
    const batch = await t.gql(`query($n: [String!]!) { batchPrices(marketHashNames: $n) { items { markets ${CONVERTED} } } }`, { n: names }, bearer(ten.key));
    expect(batch.status).toBe(200);
    expect(batch.body.data.batchPrices.items).toHaveLength(1000);
    expect(batch.body.errors.length).toBeGreaterThan(1000);
    expect(batch.body.extensions.billing).toEqual({ billable: true, credit: { cost: 10, remaining: 0 } });
    expect(await used(ten.key)).toBe(10);

    // With nothing left: 402 and none of the data.
    const broke = await t.gql(q(`prices(marketHashName: ${lit(ITEM)}) { markets ${CONVERTED} }`), {}, bearer(ten.key));
    expect(broke.status).toBe(402);
    expect(broke.body.data ?? null).toBeNull();
    expect(broke.body.errors[0].extensions.code).toBe('credit_insufficient');
    expect(await used(ten.key)).toBe(10);
  }, 120_000);

  it('an error in one metered field never waives another: a refused routes beside a delivered prices pays for prices', async () => {
    const five = await keyOf('five');
    // routes(currency: "ZZZ") fails at its root (non-null: no routes data); prices is delivered and charged alone.
    const r = await t.gql(`{ item(marketHashName: ${lit(ITEM)}) { routes(currency: "ZZZ") { status } } p: prices(marketHashName: ${lit(ITEM)}) { marketHashName } }`, {}, bearer(five.key));
    expect(r.status).toBe(200);
    expect(r.body.data.item).toBeNull();
    expect(r.body.data.p.marketHashName).toBe(ITEM);
    expect(r.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 4 } });
    expect(await used(five.key)).toBe(1);
  });
});

/** One generated REST request of a metered operation, with the cost its data is worth. */
interface RestCase {
  operationId: string;
  method: 'GET' | 'POST' | 'HEAD';
  path: string;
  body?: unknown;
  headers: Record<string, string>;
  units: number;
}

const q = (params: Record<string, string | undefined>) => {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) s.append(k, v);
  const text = s.toString();
  return text ? `?${text}` : '';
};
const REST_NAMES = [ITEM, 'Recoil Case', 'No Such Item', '', undefined] as const;
const REST_DATES = [undefined, '2026-07-16', '2025-01-01', '0000-01-01', '2026-02-30', '9999-12-31', 'yesterday'] as const;
const REST_MARKETS = [undefined, 'BUFF163', 'STEAM,SKINPORT', 'bad code', ''] as const;
const getOrHead = fc.constantFrom<'GET' | 'HEAD'>('GET', 'GET', 'GET', 'HEAD');

/** Generators of every metered REST operation that answers one request (the test checks that none is missing). */
const REST_CASES: Record<string, fc.Arbitrary<RestCase>> = {
  getPrices: fc.tuple(getOrHead, fc.constantFrom(...REST_NAMES), fc.constantFrom(...REST_MARKETS), fc.constantFrom(undefined, 'ask', 'sideways')).map(([method, n, m, side]) => ({
    operationId: 'getPrices', method, path: `/prices${q({ market_hash_name: n, markets: m, side })}`, headers: {}, units: 1,
  })),
  getRoutes: fc.tuple(getOrHead, fc.constantFrom(...REST_NAMES), fc.constantFrom(undefined, 'USD', 'EUR', 'ZZZ', 'usd', ''), fc.constantFrom(...REST_MARKETS)).map(([method, n, c, sell]) => ({
    operationId: 'getRoutes', method, path: `/prices/routes${q({ market_hash_name: n, currency: c, sell_on: sell })}`, headers: {}, units: 1,
  })),
  getTopRoutes: fc.tuple(getOrHead, fc.constantFrom(undefined, 'USD', 'EUR', 'ZZZ', 'usd', ''), fc.constantFrom(undefined, '1', '100', '0', '101', 'x'), fc.constantFrom(undefined, '0', '-1', '5%', '')).map(([method, c, limit, margin]) => ({
    operationId: 'getTopRoutes', method, path: `/prices/routes/top${q({ currency: c, limit, min_margin: margin, fund: 'balance', payout: 'balance' })}`, headers: {}, units: 1,
  })),
  getPriceHistory: fc.tuple(getOrHead, fc.constantFrom(...REST_NAMES), fc.constantFrom(...REST_DATES), fc.constantFrom(...REST_DATES), fc.constantFrom(undefined, 'day', 'month', 'hour')).map(([method, n, from, to, interval]) => ({
    operationId: 'getPriceHistory', method, path: `/prices/history${q({ market_hash_name: n, from, to, interval })}`, headers: {}, units: 1,
  })),
  getPriceChanges: fc.tuple(getOrHead, fc.constantFrom(undefined, '0', '1', 'abc', '-1', '99999999', ''), fc.constantFrom(undefined, '1', '1000', '0', '5000')).map(([method, since, limit]) => ({
    operationId: 'getPriceChanges', method, path: `/prices/changes${q({ since, limit })}`, headers: {}, units: 1,
  })),
  searchItems: fc.tuple(getOrHead, fc.constantFrom('redline', 'AK-47 | Redline (Field-Tested)', 'case st', 'no such thing', '', '|||', undefined), fc.constantFrom(undefined, '1', '50', '0', '51', 'x'), fc.constantFrom(undefined, 'not-a-cursor', '')).map(([method, query, limit, cursor]) => ({
    operationId: 'searchItems', method, path: `/catalogue/items${q({ q: query, limit, cursor })}`, headers: {}, units: 1,
  })),
  batchPrices: fc.tuple(fc.constantFrom(0, 1, 3, 99, 100, 150, 1001), fc.constantFrom(...REST_NAMES), fc.constantFrom(undefined, ['BUFF163'], ['bad code'], null)).map(([k, n, m]) => {
    const names = Array.from({ length: k }, (_, i) => (i % 3 === 2 ? 'Recoil Case' : (n ?? ITEM)));
    return { operationId: 'batchPrices', method: 'POST' as const, path: '/prices/batch', body: { market_hash_names: names, ...(m === undefined ? {} : { markets: m }) }, headers: {}, units: k };
  }),
  exportPrices: fc.tuple(getOrHead, fc.constantFrom<string | undefined>(undefined, 'current', '"other"', '*', ''), fc.constantFrom(undefined, 'json', 'ndjson', 'csv')).map(([method, tag, format]) => ({
    operationId: 'exportPrices', method, path: `/prices/export${q({ format })}`, headers: tag === undefined ? {} : ({ 'If-None-Match': tag === 'current' ? etag : tag } as Record<string, string>), units: 1,
  })),
};

describe('REST: an answer with data is charged, an error envelope is not', () => {
  it('the generators cover every metered REST operation answered in one request', () => {
    const oneShot = PRICED_ROWS.filter((e) => e.graphqlFields.some((f) => f in QUERY_FIELDS)).map((e) => e.operationId);
    expect(Object.keys(REST_CASES).sort()).toEqual(oneShot.sort());
  });

  it(`${RUNS} generated requests (invalid parameters, HEAD, conditional exports, streamed batches): charged exactly when the body holds data`, async () => {
    const rows = new Map(PRICED_ROWS.map((e) => [e.operationId, e]));
    await fc.assert(
      fc.asyncProperty(fc.oneof(...Object.values(REST_CASES)), callerArb, async (c, kind) => {
        const caller = await keyOf(kind);
        const before = await used(caller.key);
        const init: RequestInit = { method: c.method, headers: { ...bearer(caller.key), ...c.headers } };
        if (c.body !== undefined) {
          init.body = JSON.stringify(c.body);
          (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
        }
        const res = await t.app.fetch(new Request(`http://test${c.path}`, init));
        const bytes = Buffer.from(await res.arrayBuffer()); // read whole: a streamed answer is delivered, so it stays paid
        const after = await used(caller.key);
        const type = res.headers.get('content-type') ?? '';
        let body: any;
        if (type.startsWith('application/json') && bytes.length > 0 && res.headers.get('content-encoding') !== 'gzip') body = JSON.parse(bytes.toString('utf8'));
        const where = `${kind} ${c.method} ${c.path} ${c.body ? JSON.stringify(c.body).slice(0, 200) : ''}\n  -> ${res.status} ${bytes.toString('utf8').slice(0, 400)}`;
        const cost = Number(operationCost(rows.get(c.operationId)!, c.units));
        // Data leaves with a 200 to a GET or POST (the export's file included); HEAD, 304 and every error send none.
        const delivered = res.status === 200 && c.method !== 'HEAD';
        expect(after - before, `credits used ${before} -> ${after}: ${where}`).toBe(delivered ? cost : 0);
        if (c.method === 'HEAD') expect(bytes.length, where).toBe(0);
        if (res.status >= 400 && c.method !== 'HEAD') {
          expect(body?.error?.code, where).toBeTypeOf('string');
          expect(body?.data, where).toBeUndefined();
          expect(body?.meta?.billable, where).toBe(false);
        }
        if (delivered && body) expect(body.meta, where).toMatchObject({ billable: true, credit: { cost } });
        if (delivered && c.operationId === 'exportPrices') expect([res.headers.get('x-billable'), res.headers.get('x-credit-cost')], where).toEqual(['true', String(cost)]);
        if (kind === 'zero') expect(delivered, where).toBe(false);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }, 600_000);
});
