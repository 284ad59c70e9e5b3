/**
 * The TypeScript client (clients/typescript; issue: live, point 5) against a real server over HTTP: REST calls
 * typed from /openapi.json, typed GraphQL documents validated against the schema and run, the export kept by its
 * ETag (a 304 costs nothing), a 429 retried after its Retry-After, and follow() equal to the served state over a
 * run with ingestion in between.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, validate } from 'graphql';
import { schema } from '../../src/graphql/schema.js';
import { createAccount } from '../../src/services/accounts.js';
import { ingestBatch } from '../../src/services/ingestion.js';
import { runExportSnapshots } from '../../src/services/exports.js';
import { createRateLimiter } from '../../src/plugins/rate-limiter.js';
import { ItemQuotes, Me, PriceChanges, QuotegateError, createQuotegateClient, quoteKey, type FollowStep } from '../../clients/typescript/src/index.js';
import { obs, testApp, type TestApp } from '../helpers/app.js';
import { listen } from '../helpers/live.js';

let t: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
let clock = Date.now();
const NAMES = ['AK-47 | Client (Field-Tested)', 'AWP | Client (Minimal Wear)', 'M4A4 | Client (Factory New)'];
const at = (h: number) => new Date(Date.UTC(2026, 6, 16, h));

beforeAll(async () => {
  t = await testApp({ rateLimiter: createRateLimiter({ now: () => clock }) });
  server = await listen(t.app);
  await ingestBatch(t.db.prisma, NAMES.flatMap((n, i) => [obs(n, { price: `${100 + i}`, observedAt: at(0) }), obs(n, { side: 'bid', price: `${90 + i}`, observedAt: at(0) })]));
  await runExportSnapshots(t.db, { sides: ['all'] });
});
afterAll(async () => {
  await server?.close();
  await t?.close();
});

describe('the typed client', () => {
  it('calls REST paths typed from /openapi.json and keeps the RateLimit state', async () => {
    const client = createQuotegateClient({ baseUrl: server.url, apiKey: t.key });
    const { data, response } = await client.api.GET('/prices', { params: { query: { market_hash_name: NAMES[0]!, markets: 'BUFF163' } } });
    expect(response.status).toBe(200);
    const ask = data!.data.markets.find((q) => q.side === 'ask')!;
    expect(ask.market_price_amount).toBe('100');
    expect(client.rateLimit).toMatchObject({ policy: 'getPrices', limit: 120, windowSeconds: 60 });
    expect(client.rateLimit!.remaining).toBeLessThan(120);
  });

  it('ships GraphQL documents that validate against the schema, and runs them typed', async () => {
    for (const doc of [ItemQuotes, PriceChanges, Me]) expect(validate(schema, parse(doc))).toEqual([]);
    const client = createQuotegateClient({ baseUrl: server.url, apiKey: t.key });
    const r = await client.graphql(ItemQuotes, { name: NAMES[1]!, currency: 'USD' });
    const buff = r.item!.quotes.find((q) => q.marketCode === 'BUFF163' && q.side === 'bid')!;
    expect(buff.marketPriceAmount).toBe('91');
    expect(buff.website?.code).toBe('BUFF163');
    expect(buff.afterFees?.currencyCode).toBe('USD');
    await expect(client.graphql(PriceChanges, { since: '999999999' })).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('keeps the export by its ETag: the second download is a free 304 that returns the copy held', async () => {
    const acct = await createAccount(t.db, { credits: 100n });
    const client = createQuotegateClient({ baseUrl: server.url, apiKey: acct.key });
    const first = await client.exportPrices('all');
    expect(first.notModified).toBe(false);
    expect(first.body.items.map((i) => i.market_hash_name)).toEqual(expect.arrayContaining(NAMES));
    const second = await client.exportPrices('all');
    expect(second.notModified).toBe(true);
    expect(second.body).toBe(first.body);
    const [{ used }] = (await t.db.query<{ used: string }>(`SELECT credits_used::text AS used FROM account WHERE id = $1`, [acct.accountId])) as [{ used: string }];
    expect(used).toBe('10'); // the download only
  });

  it('waits out a 429 for its Retry-After and then gets the answer', async () => {
    const acct = await createAccount(t.db, { credits: 100n });
    const waits: number[] = [];
    const client = createQuotegateClient({
      baseUrl: server.url,
      apiKey: acct.key,
      // The service's limiter runs on the test's clock: waiting moves it.
      sleep: async (ms) => {
        waits.push(ms);
        clock += ms;
      },
    });
    await client.exportPrices('all'); // 1 of 2 a minute
    await client.exportPrices('all'); // 2 of 2 (a 304 counts too)
    const third = await client.exportPrices('all');
    expect(third.notModified).toBe(true);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThanOrEqual(1000);
    expect(waits[0]).toBeLessThanOrEqual(60_000);
    const patient = createQuotegateClient({ baseUrl: server.url, apiKey: acct.key, maxRetries: 0 });
    await patient.exportPrices('all');
    await expect(patient.exportPrices('all')).rejects.toBeInstanceOf(QuotegateError);
  });

  it('follow(): the export, then the change feed; the local copy equals the served state through ingestion', async () => {
    const acct = await createAccount(t.db, { credits: 1000n });
    const client = createQuotegateClient({ baseUrl: server.url, apiKey: acct.key });
    const stop = new AbortController();
    const steps = client.follow({ signal: stop.signal, intervalMs: 20, pageLimit: 2 });
    const next = async () => (await steps.next()).value as FollowStep;
    const served = async () => {
      const res = await client.api.POST('/prices/batch', { body: { market_hash_names: [...NAMES, 'P250 | Client new (Field-Tested)'] } });
      const out = new Map<string, unknown>();
      for (const item of res.data!.data.items) for (const q of item.markets) out.set(quoteKey(item.market_hash_name, q.market_code, q.side), q);
      return out;
    };
    const first = await next();
    expect(first.downloaded).toBe(true);
    expect(first.copy.quotes).toEqual(await served());
    const seen = new Set<string>();
    for (let round = 0; round < 3; round++) {
      await ingestBatch(t.db.prisma, [
        obs(NAMES[round]!, { price: `${200 + round}.5`, observedAt: at(1 + round) }),
        obs('P250 | Client new (Field-Tested)', { price: `${5 + round}`, observedAt: at(1 + round) }),
        obs(NAMES[(round + 1) % 3]!, { side: 'bid', price: null, quantity: 0, observedAt: at(1 + round) }),
      ]);
      const step = await next();
      for (const c of step.changes) {
        expect(seen.has(c.seq)).toBe(false); // never twice
        seen.add(c.seq);
      }
      expect(step.copy.quotes).toEqual(await served());
    }
    stop.abort();
    await steps.return(undefined);
  });
});
