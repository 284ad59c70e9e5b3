/**
 * Accounts, billing and rate limits as a client sees them, in process (PGlite by default, a real
 * PostgreSQL database with TEST_DATABASE_URL): charges and their absence, 402/429 envelopes and
 * headers, /me, the sync mutations, REST and GraphQL drawing from one balance and one limit,
 * GraphQL safety limits, and a canary key found nowhere in the database or the logs.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { BATCH_SELECTION, expectEnvelope, expectError, expectKeys } from '../helpers/shapes.js';
import { createAccount, createApiKey, createServiceToken, revokeApiKey, setAccountDisabled } from '../../src/accounts/accounts.js';
import { grantCredits } from '../../src/accounts/billing.js';
import { createRateLimiter } from '../../src/limits/rate-limiter.js';
import { creditCounters } from '../helpers/credits.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
const OTHER = 'Recoil Case';
const pricesPath = (name = ITEM) => `/prices?market_hash_name=${encodeURIComponent(name)}`;
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

let t: TestApp;
const logLines: string[] = [];

beforeAll(async () => {
  const logger = pino({ level: 'trace' }, new Writable({ write: (chunk, _enc, done) => (logLines.push(String(chunk)), done()) }));
  t = await testApp({ logger, rateLimiter: createRateLimiter({ logger }) });
  await ingestQuotes(t.db, [obs(ITEM, { price: '201.85' }), obs(ITEM, { side: 'bid', price: '198.19' }), obs(OTHER, { price: '2.59' })]);
});
afterAll(async () => {
  await t.close();
});

/** A fresh account with `credits` and `keys` API keys. */
async function account(credits: bigint, opts: { keys?: number; subscription?: { days: number } } = {}) {
  const a = await createAccount(t.db, {
    credits,
    subscription: opts.subscription
      ? { category: 'api', planId: 'pro', expiresAt: new Date(Date.now() + opts.subscription.days * 86_400_000) }
      : undefined,
  });
  const keys = [a.key];
  for (let i = 1; i < (opts.keys ?? 1); i++) keys.push((await createApiKey(t.db, a.accountId)).key);
  return { id: a.accountId, keyId: a.keyId, key: a.key, keys };
}

/**
 * The account's counters and charges once they stand still: charges taken from a credit lease (balances of
 * 10,000 credits and more) are recorded within a second (README, Billing), so they must not change for longer
 * than that. `used` is what GET /me shows (settled + recorded on leases), `charged` and `requests` the charge rows
 * behind it (ledger + leases' unsettled rows); every read checks that credits_used equals the ledger (creditCounters).
 */
async function ledger(accountId: string) {
  let last = await readLedger(accountId);
  let still = 0;
  for (let i = 0; i < 40 && still < 5; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const next = await readLedger(accountId);
    still = JSON.stringify(next) === JSON.stringify(last) ? still + 1 : 0;
    last = next;
  }
  return last;
}

async function readLedger(accountId: string) {
  const { settled: _settled, ...counters } = await creditCounters((sql, params) => t.db.query(sql, params), accountId);
  return counters;
}

const names = (n: number) => Array.from({ length: n }, (_, i) => (i % 2 === 0 ? ITEM : `unknown ${i}`));

describe('billing on REST', () => {
  it('charges 1 credit for /prices and reports it in meta and headers', async () => {
    const a = await account(10n);
    const res = await t.get(pricesPath(), bearer(a.key));
    expectEnvelope(res);
    expect(res.body.meta).toEqual({ request_id: res.body.meta.request_id, billable: true, credit: { cost: 1, remaining: 9 } });
    expect(res.headers.get('ratelimit-policy')).toBe('"getPrices";q=120;w=60');
    expect(res.headers.get('ratelimit')).toMatch(/^"getPrices";r=119;t=(60|59)$/);
    expect(await ledger(a.id)).toEqual({ total: 10, used: 1, charged: 1, granted: 10, requests: 1 });
  });

  it('records a large balance\'s charges per flush: every request counted, one ledger row per key and flush, each of its requests\' credits', async () => {
    const a = await account(20_000n, { keys: 2 });
    for (let i = 0; i < 30; i++) expectEnvelope(await t.get(pricesPath(), bearer(a.keys[i % 2]!)));
    expect(await ledger(a.id)).toMatchObject({ used: 30, charged: 30, requests: 30 });
    // GET /me settles this replica's charges of the account: credits_used and the ledger hold all 30 at once.
    expect(expectEnvelope(await t.get('/me', bearer(a.key))).credit).toMatchObject({ used: 30 });
    expect((await creditCounters((sql, params) => t.db.query(sql, params), a.id)).settled).toBe(30);
    const rows = await t.db.query<{ key_id: string; amount: string; requests: number; request_id: string | null }>(
      `SELECT key_id, amount::text AS amount, requests, request_id FROM credit_ledger WHERE account_id = $1 AND kind = 'charge'`,
      [a.id],
    );
    // 30 requests answered within a flush or two: far fewer rows than requests, both keys named, 1 credit each.
    expect(rows.length).toBeLessThan(30);
    expect(new Set(rows.map((r) => r.key_id)).size).toBe(2);
    for (const r of rows) expect(Number(r.amount)).toBe(r.requests);
    for (const r of rows) expect(r.request_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('charges a batch 1 per started block of 100 names, duplicates counted', async () => {
    const a = await account(100n);
    const cases: [number, number][] = [[1, 1], [100, 1], [101, 2], [250, 3], [1000, 10]];
    let used = 0;
    for (const [n, cost] of cases) {
      const list = Array.from({ length: n }, () => ITEM); // all duplicates
      const res = await t.post('/prices/batch', { market_hash_names: list }, bearer(a.key));
      expect(expectEnvelope(res).items).toHaveLength(n);
      used += cost;
      expect(res.body.meta.credit).toEqual({ cost, remaining: 100 - used });
    }
    expect(await ledger(a.id)).toMatchObject({ used, charged: used });
  });

  it('answers 402 credit_insufficient with required and remaining, before any work, and charges nothing', async () => {
    const a = await account(2n);
    const res = await t.post('/prices/batch', { market_hash_names: names(300) }, bearer(a.key));
    const err = expectError(res, 402, 'credit_insufficient');
    expect(err.details).toEqual({ required: 3, remaining: 2 });
    expect(res.body.meta).toEqual({ request_id: res.body.meta.request_id, billable: false });
    const empty = await account(0n);
    expect(expectError(await t.get(pricesPath(), bearer(empty.key)), 402, 'credit_insufficient').details).toEqual({ required: 1, remaining: 0 });
    expect(await ledger(a.id)).toMatchObject({ used: 0, requests: 0 });
    expect(await ledger(empty.id)).toMatchObject({ used: 0, requests: 0 });
  });

  it('charges nothing for 401, 403, 404 and 422', async () => {
    const a = await account(50n, { keys: 3 });
    const limited = await createApiKey(t.db, a.id, { operations: ['getMe'] });
    const revoked = a.keys[2]!;
    const keyIds = await t.db.query<{ id: string; prefix: string }>(`SELECT id, prefix FROM api_key WHERE account_id = $1`, [a.id]);
    await revokeApiKey(t.db, keyIds.find((k) => revoked.startsWith(k.prefix))!.id);
    const token = (await createServiceToken(t.db, 'dashboard')).token;

    expectError(await t.get(pricesPath()), 401, 'unauthorized');
    expectError(await t.get(pricesPath(), { Authorization: 'Basic abc' }), 401, 'unauthorized');
    expectError(await t.get(pricesPath(), bearer('qg_short')), 401, 'unauthorized');
    expectError(await t.get(pricesPath(), bearer(`qg_${'A'.repeat(32)}`)), 401, 'unauthorized');
    expectError(await t.get(pricesPath(), bearer(revoked)), 401, 'unauthorized');
    expectError(await t.get(pricesPath(), { 'X-API-Key': revoked }), 401, 'unauthorized');
    expectError(await t.get(pricesPath(), bearer(limited.key)), 403, 'forbidden');
    expectError(await t.get(pricesPath(), bearer(token)), 403, 'forbidden');
    expectError(await t.get(pricesPath('No such item'), bearer(a.key)), 404, 'not_found');
    expectError(await t.get('/prices?market_hash_name=', bearer(a.key)), 422, 'validation_failed');
    expectError(await t.post('/prices/batch', { market_hash_names: names(1001) }, bearer(a.key)), 422, 'validation_failed');
    expectError(await t.post('/prices/batch', { market_hash_names: [ITEM], extra: 1 }, bearer(a.key)), 422, 'validation_failed');
    expect(await ledger(a.id)).toMatchObject({ used: 0, requests: 0 });

    // The key allowed only /me reads /me; a disabled account gets 403 everywhere.
    expect((await t.get('/me', bearer(limited.key))).status).toBe(200);
    await setAccountDisabled(t.db, a.id, true);
    expectError(await t.get(pricesPath(), bearer(a.key)), 403, 'forbidden');
    expectError(await t.get('/me', bearer(a.key)), 403, 'forbidden');
    expect(await ledger(a.id)).toMatchObject({ used: 0, requests: 0 });
  });

  it('never charges an account with an active subscription; an expired one pays again', async () => {
    const sub = await account(5n, { subscription: { days: 30 } });
    for (let i = 0; i < 3; i++) {
      const res = await t.get(pricesPath(), bearer(sub.key));
      expect(expectEnvelope(res)).toBeTruthy();
      expect(res.body.meta).toEqual({ request_id: res.body.meta.request_id, billable: false });
    }
    const batch = await t.post('/prices/batch', { market_hash_names: names(1000) }, bearer(sub.key));
    expect(batch.body.meta.billable).toBe(false);
    expect(await ledger(sub.id)).toMatchObject({ used: 0, requests: 0 });
    const expired = await account(5n, { subscription: { days: -1 } });
    expect((await t.get(pricesPath(), bearer(expired.key))).body.meta.credit).toEqual({ cost: 1, remaining: 4 });
  });
});

describe('rate limits', () => {
  it('lets exactly 120 of 200 concurrent /prices requests from three keys of one account pass; the rest get 429', async () => {
    const a = await account(10_000n, { keys: 3 });
    const b = await account(10n);
    const responses = await Promise.all(Array.from({ length: 200 }, (_, i) => t.get(pricesPath(), bearer(a.keys[i % 3]!))));
    const ok = responses.filter((r) => r.status === 200);
    const limited = responses.filter((r) => r.status === 429);
    expect(ok).toHaveLength(120);
    expect(limited).toHaveLength(80);
    for (const r of limited) {
      expectError(r, 429, 'rate_limited');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(r.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      expect(r.headers.get('ratelimit')).toMatch(/^"getPrices";r=0;t=\d+$/);
      expect(r.body.meta.billable).toBe(false);
    }
    // 429s are not charged; the other account and the other operation are unaffected.
    expect(await ledger(a.id)).toMatchObject({ used: 120, charged: 120, requests: 120 });
    expect((await t.get(pricesPath(), bearer(b.key))).status).toBe(200);
    expect((await t.post('/prices/batch', { market_hash_names: [ITEM] }, bearer(a.key))).status).toBe(200);
  });

  it('sends RateLimit-Policy and RateLimit on every metered response, none on public ones', async () => {
    const a = await account(0n);
    const r402 = await t.get(pricesPath(), bearer(a.key));
    expect(r402.status).toBe(402);
    expect(r402.headers.get('ratelimit-policy')).toBe('"getPrices";q=120;w=60');
    const batch = await t.post('/prices/batch', { market_hash_names: [ITEM] }, bearer(a.key));
    expect(batch.headers.get('ratelimit-policy')).toBe('"batchPrices";q=20;w=60');
    expect((await t.get('/websites')).headers.get('ratelimit')).toBeNull();
  });
});

describe('Redis unreachable', () => {
  it('answers without waiting on Redis and keeps enforcing the limit from this replica\'s memory', async () => {
    const limiter = createRateLimiter({ redisUrl: 'redis://127.0.0.1:1' });
    const alone = await testApp({ rateLimiter: limiter });
    try {
      await ingestQuotes(alone.db, [obs(ITEM)]);
      const statuses: number[] = [];
      for (let i = 0; i < 121; i++) statuses.push((await alone.get(pricesPath(), alone.auth())).status);
      expect(statuses.slice(0, 120).every((s) => s === 200)).toBe(true);
      expect(statuses[120]).toBe(429);
    } finally {
      await limiter.close();
      await alone.close();
    }
  });
});

describe('GraphQL and REST share one balance and one limit', () => {
  const PRICES = `query($n: String!) { a: prices(marketHashName: $n) { marketHashName } }`;

  it('charges a GraphQL operation the sum of its metered fields, reported in extensions', async () => {
    const a = await account(20n);
    const r = await t.gql(
      `query($names: [String!]!) { one: prices(marketHashName: "${ITEM}") { marketHashName } two: prices(marketHashName: "${OTHER}") { marketHashName }
         batch: batchPrices(marketHashNames: $names) { items { marketHashName } } }`,
      { names: names(150) },
      bearer(a.key),
    );
    expect(r.status).toBe(200);
    expect(r.body.errors).toBeUndefined();
    expect(r.body.extensions.billing).toEqual({ billable: true, credit: { cost: 4, remaining: 16 } });
    expect(r.headers.get('ratelimit-policy')).toBe('"getPrices";q=120;w=60, "batchPrices";q=20;w=60');
    const me = expectEnvelope(await t.get('/me', bearer(a.key)));
    expect(me.credit).toEqual({ total: 20, used: 4, remaining: 16 });
    const rest = await t.get(pricesPath(), bearer(a.key));
    expect(rest.body.meta.credit).toEqual({ cost: 1, remaining: 15 });
    expect(await ledger(a.id)).toMatchObject({ used: 5, charged: 5, requests: 2 });
  });

  it('does not charge a GraphQL operation whose metered fields fail', async () => {
    const a = await account(10n);
    // Root fields are non-null: one failing field voids the data, so nothing is delivered and nothing charged.
    const r = await t.gql(`{ ok: prices(marketHashName: "${ITEM}") { marketHashName } missing: prices(marketHashName: "nope") { marketHashName } }`, {}, bearer(a.key));
    expect(r.body.errors[0].extensions.code).toBe('not_found');
    expect(r.body.data).toBeNull();
    expect(r.body.extensions.billing).toEqual({ billable: false });
    const bad = await t.gql(`{ prices(marketHashName: "") { marketHashName } }`, {}, bearer(a.key));
    expect(bad.body.errors[0].extensions.code).toBe('validation_failed');
    expect(await ledger(a.id)).toMatchObject({ used: 0, requests: 0 });
    const ok = await t.gql(`{ ok: prices(marketHashName: "${ITEM}") { marketHashName } }`, {}, bearer(a.key));
    expect(ok.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 9 } });
  });

  it('answers GraphQL 402 and 429 before execution with the REST codes, and shares the /prices limit', async () => {
    const poor = await account(2n);
    const r402 = await t.gql(`query($names: [String!]!) { batchPrices(marketHashNames: $names) { appId } }`, { names: names(300) }, bearer(poor.key));
    expect(r402.status).toBe(402);
    expect(r402.body.errors[0].extensions).toMatchObject({ code: 'credit_insufficient', details: { required: 3, remaining: 2 } });
    expect(r402.body.data).toBeUndefined();

    const a = await account(1000n, { keys: 2 });
    // 60 REST requests and 30 GraphQL queries of two prices fields each = 120.
    const rest = await Promise.all(Array.from({ length: 60 }, () => t.get(pricesPath(), bearer(a.keys[0]!))));
    const gql = await Promise.all(
      Array.from({ length: 30 }, () =>
        t.gql(`{ x: prices(marketHashName: "${ITEM}") { appId } y: prices(marketHashName: "${OTHER}") { appId } }`, {}, bearer(a.keys[1]!)),
      ),
    );
    expect(rest.every((r) => r.status === 200)).toBe(true);
    expect(gql.every((r) => r.status === 200 && !r.body.errors)).toBe(true);
    const over = await t.gql(PRICES, { n: ITEM }, bearer(a.keys[1]!));
    expect(over.status).toBe(429);
    expect(over.body.errors[0].extensions.code).toBe('rate_limited');
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expectError(await t.get(pricesPath(), bearer(a.keys[0]!)), 429, 'rate_limited');
    expect(await ledger(a.id)).toMatchObject({ used: 120, charged: 120 });
  });

  it('keeps the balance exact under 200 concurrent requests (limits off)', async () => {
    const unlimited = await testApp({ rateLimiter: createRateLimiter({ enabled: false }) });
    try {
      await ingestQuotes(unlimited.db, [obs(ITEM)]);
      for (const [cost, body] of [[1, null], [3, { market_hash_names: names(201) }]] as const) {
        const k = 1 + Math.floor(Math.random() * 150);
        const a = await createAccount(unlimited.db, { credits: BigInt(k) });
        const responses = await Promise.all(
          Array.from({ length: 200 }, (_, i) =>
            body === null || i % 2 === 0
              ? body === null
                ? unlimited.get(pricesPath(), bearer(a.key))
                : unlimited.post('/prices/batch', body, bearer(a.key))
              : unlimited.gql(`query($n: [String!]!) { batchPrices(marketHashNames: $n) { appId } }`, { n: body.market_hash_names }, bearer(a.key)),
          ),
        );
        const ok = responses.filter((r) => r.status === 200).length;
        expect(ok).toBe(Math.floor(k / cost));
        expect(responses.filter((r) => r.status === 402).length).toBe(200 - ok);
        const [row] = await unlimited.db.query<{ used: string; charged: string }>(
          `SELECT credits_used::text AS used, (SELECT COALESCE(sum(amount), 0) FROM credit_ledger WHERE account_id = $1 AND kind = 'charge')::text AS charged FROM account WHERE id = $1`,
          [a.accountId],
        );
        expect(Number(row!.used)).toBe(ok * cost);
        expect(Number(row!.charged)).toBe(ok * cost);
        for (const r of responses.filter((x) => x.status === 200 && x.body.meta)) expect(r.body.meta.credit.remaining).toBeGreaterThanOrEqual(0);
      }
    } finally {
      await unlimited.close();
    }
  });
});

describe('GET /me and the sync mutations', () => {
  const UPSERT = `mutation($u: SyncUserInput!) { syncUpsertProfile(user: $u) { userId profileSynced view { user { id name } } } }`;
  const SUBS = `mutation($id: String!, $s: [SyncSubscriptionInput!]!) { syncSetSubscriptions(userId: $id, subscriptions: $s) { profileSynced } }`;
  const TOTAL = `mutation($id: String!, $t: Credits!) { syncSetCreditTotal(userId: $id, total: $t) { view { credit { total used remaining } } } }`;

  it('returns SyncUserView with exactly the spec fields and reflects charges at once', async () => {
    const a = await account(7n);
    const me = expectEnvelope(await t.get('/me', bearer(a.key)));
    expectKeys(me, ['user', 'subscription', 'credit']);
    expectKeys(me.user, ['id', 'name', 'email', 'email_verified', 'image', 'steam_id', 'created_at', 'base_currency']);
    expect(me.user.id).toBe(a.id);
    expect(me.subscription).toBeNull();
    expect(me.credit).toEqual({ total: 7, used: 0, remaining: 7 });
    await t.get(pricesPath(), bearer(a.key));
    expect(expectEnvelope(await t.get('/me', bearer(a.key))).credit).toEqual({ total: 7, used: 1, remaining: 6 });
    expect((await t.get('/me', bearer(a.key))).body.meta).toEqual({ request_id: expect.any(String) });
    await grantCredits(t.db, a.id, 5n);
    expect(expectEnvelope(await t.get('/me', bearer(a.key))).credit).toEqual({ total: 12, used: 1, remaining: 11 });
  });

  it('answers 404 until the dashboard syncs the profile, then follows every sync mutation', async () => {
    const machine = bearer((await createServiceToken(t.db, 'dashboard')).token);
    const id = `user_${Math.random().toString(36).slice(2)}`;
    // Credits arrive before the profile: the account exists, unsynced.
    const total = await t.gql(TOTAL, { id, t: 50 }, machine);
    expect(total.body.data.syncSetCreditTotal.view).toBeNull();
    const key = (await createApiKey(t.db, id)).key;
    expectError(await t.get('/me', bearer(key)), 404, 'not_found');
    expect((await t.gql(`{ me { user { id } } }`, {}, bearer(key))).body.errors[0].extensions.code).toBe('not_found');

    const profile = { id, name: 'Ann', email: 'ann@example.com', emailVerified: true, image: null, steamId: '76561198000000000', createdAt: '2026-01-02T03:04:05Z', baseCurrency: 'EUR' };
    const up = await t.gql(UPSERT, { u: profile }, machine);
    expect(up.body.data.syncUpsertProfile).toEqual({ userId: id, profileSynced: true, view: { user: { id, name: 'Ann' } } });
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    await t.gql(SUBS, { id, s: [{ category: 'api', planId: 'basic', expiresAt: new Date(Date.now() + 3_600_000).toISOString() }, { category: 'api', planId: 'pro', expiresAt: expires }, { category: 'old', planId: 'x', expiresAt: '2020-01-01T00:00:00Z' }] }, machine);
    const me = expectEnvelope(await t.get('/me', bearer(key)));
    expect(me.user).toEqual({ id, name: 'Ann', email: 'ann@example.com', email_verified: true, image: null, steam_id: '76561198000000000', created_at: '2026-01-02T03:04:05.000Z', base_currency: 'EUR' });
    expect(me.subscription).toEqual({ category: 'api', plan_id: 'pro', expires_at: expires });
    expect(me.credit).toEqual({ total: 50, used: 0, remaining: 50 });
    // With the subscription, prices are free.
    expect((await t.get(pricesPath(), bearer(key))).body.meta.billable).toBe(false);
    // Lowering the total below what is used: remaining never below 0.
    await t.gql(SUBS, { id, s: [] }, machine);
    await t.get(pricesPath(), bearer(key));
    await t.get(pricesPath(), bearer(key));
    const lowered = await t.gql(TOTAL, { id, t: 1 }, machine);
    expect(lowered.body.data.syncSetCreditTotal.view.credit).toEqual({ total: 1, used: 2, remaining: 0 });
    expectError(await t.get(pricesPath(), bearer(key)), 402, 'credit_insufficient');
    expect(await ledger(id)).toEqual({ total: 1, used: 2, charged: 2, granted: 1, requests: 2 });
  });

  it('lets only a machine token call the sync mutations, and validates their input', async () => {
    const a = await account(1n);
    const anon = await t.gql(TOTAL, { id: a.id, t: 5 });
    expect(anon.body.errors[0].extensions.code).toBe('unauthorized');
    const user = await t.gql(TOTAL, { id: a.id, t: 5 }, bearer(a.key));
    expect(user.body.errors[0].extensions.code).toBe('forbidden');
    const machine = bearer((await createServiceToken(t.db, 'dashboard')).token);
    const bad = await t.gql(UPSERT, { u: { id: '', baseCurrency: 'euro', createdAt: 'yesterday' } }, machine);
    expect(bad.body.errors[0].extensions.code).toBe('validation_failed');
    expect(bad.body.errors[0].extensions.details.errors.map((d: { field: string }) => d.field).sort()).toEqual(['user.baseCurrency', 'user.createdAt', 'user.id']);
    const negative = await t.gql(TOTAL, { id: a.id, t: -1 }, machine);
    expect(negative.body.errors).toBeDefined();
    expect(expectEnvelope(await t.get('/me', bearer(a.key))).credit.total).toBe(1);
  });
});

describe('GraphQL safety limits', () => {
  it('rejects deep, alias-heavy and too costly queries before any resolver runs', async () => {
    const a = await account(100n);
    const deep = `{ ${'a { '.repeat(13)}b${' }'.repeat(13)} }`;
    const depth = await t.gql(deep, {}, bearer(a.key));
    expect(depth.body.errors.map((e: { message: string }) => e.message).join(' ')).toMatch(/depth limit of 12/i);
    const nested = `{ me { user { id } } ${Array.from({ length: 51 }, (_, i) => `a${i}: health { status }`).join(' ')} }`;
    const aliases = await t.gql(nested, {}, bearer(a.key));
    expect(aliases.body.errors[0].message).toMatch(/alias/i);
    // Every quote field, camelCase (no aliases): one such batch is allowed, two are too costly.
    const selection = BATCH_SELECTION;
    const one = await t.gql(`query($n: [String!]!) { a: batchPrices(marketHashNames: $n) ${selection} }`, { n: names(1000) }, bearer(a.key));
    expect(one.status).toBe(200);
    const afterAllowed = t.db.queryCount();
    const costly = await t.gql(
      `query($n: [String!]!) { a: batchPrices(marketHashNames: $n) ${selection} b: batchPrices(marketHashNames: $n) ${selection} }`,
      { n: names(1000) },
      bearer(a.key),
    );
    expect(costly.status).toBe(422);
    expect(costly.body.errors[0].extensions.code).toBe('query_too_complex');
    // Nothing ran: not even the key lookup.
    expect(t.db.queryCount()).toBe(afterAllowed);
    expect(await ledger(a.id)).toMatchObject({ used: 10 });
  });
});

describe('secrets', () => {
  it('never writes an API key or service token to the database or the logs', async () => {
    const canary = await account(3n);
    const token = (await createServiceToken(t.db, 'canary')).token;
    await t.get(pricesPath(), bearer(canary.key));
    await t.get(pricesPath('nope'), { 'X-API-Key': canary.key });
    await t.get('/me', bearer(canary.key));
    await t.gql(`{ me { user { id } } }`, {}, bearer(canary.key));
    await t.gql(`mutation { syncSetCreditTotal(userId: "${canary.id}", total: 9) { userId } }`, {}, bearer(token));
    await t.get(pricesPath(), bearer(`${canary.key}x`));
    const tables = await t.db.query<{ tablename: string }>(`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`);
    let dump = '';
    for (const { tablename } of tables) {
      const rows = await t.db.query<{ r: string }>(`SELECT t::text AS r FROM "${tablename}" t`);
      dump += rows.map((r) => r.r).join('\n');
    }
    expect(dump).toContain(canary.id); // the dump holds the account...
    expect(logLines.length).toBeGreaterThan(5); // ...and the logs hold the requests
    for (const secret of [canary.key, canary.key.slice(3), token, token.slice(4)]) {
      expect(dump.includes(secret)).toBe(false);
      expect(logLines.join('').includes(secret)).toBe(false);
    }
  });
});
