/**
 * GraphQL safety limits against the attacks that got through them, in process on the real app: padding
 * that made the cost estimator give up (it failed open), aliased introspection and `status` fields that
 * cost 1 each, and answers far larger than their estimated cost. Each is refused before any resolver
 * (or, for the answer bound, instead of the data, uncharged); GraphiQL's introspection query and every
 * REST document keep working.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getIntrospectionQuery, parse, validate } from 'graphql';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { schema } from '../../src/graphql/schema.js';
import { DOCUMENTS } from '../../src/rest/documents.js';
import { BATCH_SELECTION } from '../helpers/shapes.js';
import { estimateCost, MAX_ALIASES, MAX_COMPLEXITY, MAX_DEPTH, MAX_QUERY_NODES, RESULT_CHECK_COST, maxResultBytes } from '../../src/plugins/safety.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
let t: TestApp;

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [obs(ITEM, { price: '201.85' }), obs(ITEM, { side: 'bid', price: '198.19' })]);
});
afterAll(async () => {
  await t?.close();
});

const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

async function subscriber() {
  return createAccount(t.db, { credits: 0n, subscription: { category: 'api', planId: 'pro', expiresAt: new Date(Date.now() + 86_400_000) } });
}

async function creditsUsed(accountId: string): Promise<number> {
  const [row] = await t.db.query<{ used: string }>(`SELECT credits_used::text AS used FROM account WHERE id = $1`, [accountId]);
  return Number(row!.used);
}

/**
 * Padding that expands to 10^4 `health { status }` selections through four levels of fragments, each
 * spreading the one below ten times: small to send and to execute (graphql-js collects a fragment once
 * per selection set), but past the estimator's node limit.
 */
const PADDING =
  `fragment P0 on Query { health { status } }\n` +
  [1, 2, 3, 4].map((i) => `fragment P${i} on Query { ${`...P${i - 1} `.repeat(10)}}`).join('\n');

/** Every quote field of the REST batch document, without its aliases. */
function batchSelection(): string {
  return BATCH_SELECTION;
}

const thousandNames = Array.from({ length: 1000 }, (_, i) => (i % 2 === 0 ? ITEM : `unknown ${i}`));

function expectRefused(res: { status: number; body: any }, code = 'query_too_complex') {
  expect(res.status).toBe(422);
  expect(res.body.data ?? null).toBeNull();
  expect(res.body.errors[0].extensions.code).toBe(code);
  expect(res.body.errors[0].extensions.details.errors[0].field).toBe('query');
}

describe('the cost limit fails closed', () => {
  it('refuses two full batches padded with nested fragment spreads (answered 200 for a subscription key before)', async () => {
    const a = await subscriber();
    const selection = batchSelection();
    const two = `query Two($n: [String!]!) { ...P4 a: batchPrices(marketHashNames: $n) ${selection} b: batchPrices(marketHashNames: $n) ${selection} }\n${PADDING}`;
    const before = t.db.queryCount();
    const res = await t.gql(two, { n: thousandNames }, bearer(a.key));
    expectRefused(res);
    expect(res.body.errors[0].message).toContain(`more than ${MAX_QUERY_NODES} fields`);
    expect(res.body.errors[0].extensions.details.max_query_nodes).toBe(MAX_QUERY_NODES);
    // Refused before any resolver: not even the key was looked up.
    expect(t.db.queryCount()).toBe(before);
    // Without the padding the same two batches are refused by their cost, as before.
    const plain = await t.gql(two.slice(0, two.indexOf('\nfragment')).replace('...P4 ', ''), { n: thousandNames }, bearer(a.key));
    expectRefused(plain);
    expect(plain.body.errors[0].extensions.details.complexity).toBeGreaterThan(MAX_COMPLEXITY);
  });

  it('refuses a small padded public GET /graphql instead of answering it unestimated', async () => {
    const query = `{ ...P4 websites(includeDeprecated: true) { code name url feeSchedule { websiteCode } } }\n${PADDING}`;
    const res = await t.get(`/graphql?query=${encodeURIComponent(query)}`, { Accept: 'application/graphql-response+json' });
    expectRefused(res);
    expect(res.body.errors[0].extensions.details.errors[0].location).toBe('query');
    // The same query without the padding is answered.
    const plain = await t.get(`/graphql?query=${encodeURIComponent('{ websites(includeDeprecated: true) { code name url feeSchedule { websiteCode } } }')}`, {
      Accept: 'application/graphql-response+json',
    });
    expect(plain.status).toBe(200);
    expect(plain.body.data.websites.length).toBeGreaterThan(0);
  });

  it('still lets execution report variables that do not coerce', async () => {
    const res = await t.gql(`query($n: [String!]!) { batchPrices(marketHashNames: $n) { appId } }`, { n: [1, 2] });
    expect(res.body.data ?? null).toBeNull();
    expect(res.body.errors[0].message).toMatch(/Variable "\$n"/);
    expect(res.body.errors[0].extensions?.code).not.toBe('query_too_complex');
  });
});

describe('introspection and database-backed fields are priced', () => {
  it("answers GraphiQL's introspection query", async () => {
    const res = await t.gql(getIntrospectionQuery());
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.__schema.queryType.name).toBe('Query');
    expect(res.body.data.__schema.types.map((x: { name: string }) => x.name)).toContain('ItemPrices');
  });

  it('refuses 50 aliased __schema selections from an anonymous caller (12.8 MB before)', async () => {
    const full = getIntrospectionQuery();
    const body = full.slice(full.indexOf('__schema') + '__schema'.length, full.lastIndexOf('}', full.indexOf('fragment FullType')));
    const aliased = `query { ${Array.from({ length: 50 }, (_, i) => `s${i}: __schema ${body}`).join(' ')} }\n${full.slice(full.indexOf('fragment FullType'))}`;
    expect(new TextEncoder().encode(aliased).length).toBeLessThan(20_000);
    expectRefused(await t.gql(aliased));
    // Two small ones are refused too: one __schema per operation.
    const two = await t.gql(`{ a: __schema { queryType { name } } b: __schema { queryType { name } } }`);
    expectRefused(two);
    expect(two.body.errors[0].message).toMatch(/__schema 2 times; at most 1/);
    expect(two.body.errors[0].extensions.details.max_schema_fields).toBe(1);
  });

  it('prices introspection lists by the schema: nesting inside __schema is refused by its cost', async () => {
    // The depth limit does not look inside __schema (graphql-js allows two nested `fields` there); the cost does:
    // each introspection list multiplies by the schema's largest list of its kind.
    const nested = `{ __schema { types { name fields { name args { name type { name fields { name args { name type { name enumValues { name description } } } } } } } } } }`;
    const res = await t.gql(nested);
    expectRefused(res);
    expect(res.body.errors[0].extensions.details.complexity).toBeGreaterThan(MAX_COMPLEXITY);
  });

  it('refuses 50 aliased status fields before running any of their database transactions; a few are answered', async () => {
    const before = t.db.queryCount();
    const fifty = await t.gql(`{ ${Array.from({ length: 50 }, (_, i) => `s${i}: status`).join(' ')} }`);
    expectRefused(fifty);
    expect(t.db.queryCount()).toBe(before);
    const five = await t.gql(`{ ${Array.from({ length: 5 }, (_, i) => `s${i}: status`).join(' ')} }`);
    expect(five.status).toBe(200);
    expect(Object.keys(five.body.data)).toHaveLength(5);
    expectRefused(await t.gql(`{ ${Array.from({ length: 6 }, (_, i) => `s${i}: status`).join(' ')} }`));
  });
});

describe('the answer is bounded by its estimated cost', () => {
  it('replaces an ad-hoc answer far larger than its cost with 422 response_too_large, uncharged', async () => {
    // Ten aliased batches of the same 1000 longest names echo 2.8 MB for a cost of about 20,000.
    const a = await createAccount(t.db, { credits: 1000n });
    const long = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(4, '0')}${'x'.repeat(251)}`);
    const query = `query($n: [String!]!) { ${Array.from({ length: 10 }, (_, i) => `b${i}: batchPrices(marketHashNames: $n) { items { marketHashName } }`).join(' ')} }`;
    const cost = estimateCost(schema, parse(query), undefined, { n: long }).cost;
    expect(cost).toBeGreaterThanOrEqual(RESULT_CHECK_COST);
    const res = await t.gql(query, { n: long }, bearer(a.key));
    expectRefused(res, 'response_too_large');
    const details = res.body.errors[0].extensions.details;
    expect(details.max_bytes).toBe(maxResultBytes(cost));
    expect(details.bytes).toBeGreaterThan(details.max_bytes);
    expect(res.body.extensions?.billing?.billable).not.toBe(true);
    expect(await creditsUsed(a.accountId)).toBe(0);
    // One such batch is answered and charged (10 credits for 1000 names).
    const one = await t.gql(`query($n: [String!]!) { batchPrices(marketHashNames: $n) { appId side items { marketHashName } } }`, { n: long }, bearer(a.key));
    expect(one.status).toBe(200);
    expect(one.body.data.batchPrices.items).toHaveLength(1000);
    expect(await creditsUsed(a.accountId)).toBe(10);
  });
});

describe('the REST documents', () => {
  it('stay under every limit, the batch with 1000 names included', () => {
    const variables = { includeDeprecated: true, code: 'BUFF163', search: 'u', id: '3f0c1f4e-8a57-4a4e-9d0b-6f1f6a2f9a10', marketHashName: ITEM, appId: '730', side: 'all', markets: null, marketHashNames: thousandNames, currency: 'USD', buyOn: null, sellOn: null, fund: 'cash', payout: 'cash', minCredibility: 0, minQuantity: null, feeProfile: null, includeUnpriced: false, minMargin: null, interval: 'DAY', limit: 1000, since: null, first: 50, after: null, format: 'ndjson', cursor: null, input: { kind: 'price', marketHashName: ITEM, marketCode: 'BUFF163', side: 'ask', direction: 'below', level: '1', url: 'https://example.com/' } };
    for (const [id, text] of Object.entries(DOCUMENTS)) {
      const document = parse(text);
      expect(validate(schema, document, [maxDepthRule({ n: MAX_DEPTH }), maxAliasesRule({ n: MAX_ALIASES })]), id).toEqual([]);
      // `$id` is a currency id (Int) in getCurrency and an alert id (String) in the alert operations.
      const { cost, schemaFields } = estimateCost(schema, document, id, id === 'getCurrency' ? { ...variables, id: 1 } : variables);
      expect(cost, id).toBeLessThanOrEqual(MAX_COMPLEXITY);
      expect(schemaFields, id).toBe(0);
    }
  });
});
