/**
 * API-key lookups cached per replica (accounts/caller-cache.ts), as a client and an operator see them,
 * on PGlite (a real PostgreSQL database with TEST_DATABASE_URL): the second request of a key does not
 * ask the database who is calling, and every change of the account (key revoked, account disabled,
 * subscription, credits) takes effect on the very next request. Across processes: replicas.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope, expectError } from '../helpers/shapes.js';
import { createAccount, createApiKey, revokeApiKey, setAccountDisabled, setSubscriptions } from '../../src/accounts/accounts.js';
import { grantCredits } from '../../src/accounts/billing.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
const PRICES = `/prices?market_hash_name=${encodeURIComponent(ITEM)}`;
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

let t: TestApp;
let uncached: TestApp;

beforeAll(async () => {
  t = await testApp();
  uncached = await testApp({ authCacheSeconds: 0 });
  for (const x of [t, uncached]) await ingestQuotes(x.db, [obs(ITEM, { price: '201.85' })]);
});
afterAll(async () => {
  await t.close();
  await uncached.close();
});

/** SQL statements one GET /prices of `key` sends. */
async function statementsOf(x: TestApp, key: string): Promise<number> {
  const before = x.db.queryCount();
  expectEnvelope(await x.get(PRICES, bearer(key)));
  return x.db.queryCount() - before;
}

/**
 * The fewest statements of three requests of `key`: a statement of the app's own background work (the lease
 * sweep, the change listener reconnecting) can land in one request's window, never in all three; a key lookup
 * on every request would show in each.
 */
async function fewestStatementsOf(x: TestApp, key: string): Promise<number> {
  return Math.min(await statementsOf(x, key), await statementsOf(x, key), await statementsOf(x, key));
}

describe('the caller is looked up once, then reused', () => {
  it('the second request of a key sends one statement fewer (no key lookup); without the cache it does not', async () => {
    const a = await createAccount(t.db, { credits: 100n });
    await statementsOf(t, a.key);
    // The quote comes from the quote cache; what is left is the charge (a small balance: one statement each).
    expect(await fewestStatementsOf(t, a.key)).toBe(1);
    const b = await createAccount(uncached.db, { credits: 100n });
    await statementsOf(uncached, b.key); // the quote is cached from here on
    expect(await fewestStatementsOf(uncached, b.key)).toBe(2); // the key lookup and the charge, on every request
  });

  it('keys first seen together are looked up in one statement, each answered as its own account (a revoked one 401, a subscription free)', async () => {
    const x = await testApp({ creditLeases: false });
    try {
      // On PostgreSQL the app's LISTEN connection opens in the background, and when it is up every cache drops
      // what it holds (signals may have been missed before): under load that came after the GET below and the 32
      // requests loaded the quotes again (62 statements in one CI run). Wait for it, so they find the quotes cached.
      await vi.waitFor(() => expect(x.db.listening()).toBe(true), { timeout: 30_000, interval: 50 });
      await ingestQuotes(x.db, [obs(ITEM, { price: '201.85' })]);
      expectEnvelope(await x.get(PRICES, x.auth())); // the quotes cached
      const accounts = await Promise.all(Array.from({ length: 30 }, (_, i) => createAccount(x.db, { credits: BigInt(100 + i) })));
      const subscribed = await createAccount(x.db, { subscription: { category: 'api', planId: 'p', expiresAt: new Date(Date.now() + 86_400_000) } });
      const revoked = await createAccount(x.db, { credits: 100n });
      await revokeApiKey(x.db, revoked.keyId);
      const before = x.db.queryCount();
      const replies = await Promise.all([...accounts, subscribed, revoked].map((a) => x.get(PRICES, bearer(a.key))));
      // 30 charges (one statement each: leases off) and the lookups of all 32 keys together, not one each.
      expect(x.db.queryCount() - before).toBeLessThanOrEqual(30 + 2);
      accounts.forEach((_, i) => expect(replies[i]!.body.meta).toMatchObject({ billable: true, credit: { cost: 1, remaining: 99 + i } }));
      expect(replies[30]!.body.meta.billable).toBe(false);
      expectError(replies[31]!, 401, 'unauthorized');
    } finally {
      await x.close();
    }
  });

  it('the balance shown stays exact across cached requests', async () => {
    const a = await createAccount(t.db, { credits: 3n });
    for (const remaining of [2, 1, 0]) {
      expect((await t.get(PRICES, bearer(a.key))).body.meta).toMatchObject({ billable: true, credit: { cost: 1, remaining } });
    }
    expect(expectError(await t.get(PRICES, bearer(a.key)), 402, 'credit_insufficient').details).toEqual({ required: 1, remaining: 0 });
  });
});

describe('every change takes effect on the next request', () => {
  it("a revoked key: 401 at once; the account's other key still works", async () => {
    const a = await createAccount(t.db, { credits: 100n });
    const other = await createApiKey(t.db, a.accountId);
    expectEnvelope(await t.get(PRICES, bearer(a.key)));
    expectEnvelope(await t.get(PRICES, bearer(other.key)));
    await revokeApiKey(t.db, a.keyId);
    expectError(await t.get(PRICES, bearer(a.key)), 401, 'unauthorized');
    expectEnvelope(await t.get(PRICES, bearer(other.key)));
  });

  it('a disabled account: 403 at once, and 200 again once enabled', async () => {
    const a = await createAccount(t.db, { credits: 100n });
    expectEnvelope(await t.get(PRICES, bearer(a.key)));
    await setAccountDisabled(t.db, a.accountId, true);
    expectError(await t.get(PRICES, bearer(a.key)), 403, 'forbidden');
    await setAccountDisabled(t.db, a.accountId, false);
    expectEnvelope(await t.get(PRICES, bearer(a.key)));
  });

  it('a new subscription makes the next request free; credits granted after a 402 are usable at once', async () => {
    const a = await createAccount(t.db, { credits: 0n });
    expectError(await t.get(PRICES, bearer(a.key)), 402, 'credit_insufficient');
    await grantCredits(t.db, a.accountId, 5n);
    const paid = await t.get(PRICES, bearer(a.key));
    expect(paid.body.meta).toMatchObject({ billable: true, credit: { cost: 1, remaining: 4 } });
    await setSubscriptions(t.db, a.accountId, [{ category: 'api', planId: 'pro', expiresAt: new Date(Date.now() + 86_400_000) }]);
    expect((await t.get(PRICES, bearer(a.key))).body.meta).toEqual(expect.objectContaining({ billable: false }));
    await setSubscriptions(t.db, a.accountId, []);
    expect((await t.get(PRICES, bearer(a.key))).body.meta).toMatchObject({ billable: true, credit: { cost: 1, remaining: 3 } });
  });
});
