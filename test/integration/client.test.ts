/**
 * The TypeScript client (clients/typescript; issue: live, point 5; issue 44, point 6) against a real server over
 * HTTP: REST calls typed from /openapi.json, every RateLimit policy of an answer kept, typed GraphQL documents
 * validated against the schema and run, the export kept by its ETag (a 304 costs nothing), a 429 retried after its
 * Retry-After, and follow() equal to the served state over a run with ingestion in between: on the live stream, on
 * the polled feed, and falling back from the one to the other while the stream is refused.
 * (test/integration/client-package.test.ts installs the packed package into a clean folder and runs it from node.)
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, validate } from 'graphql';
import { schema } from '../../src/graphql/schema.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { ingestBatch } from '../../src/quotes/ingestion.js';
import { runExportSnapshots } from '../../src/exports/exports.js';
import { createRateLimiter } from '../../src/limits/rate-limiter.js';
import { ItemQuotes, Me, PriceChanges, QuotegateError, createQuotegateClient, quoteKey, type FollowStep, type QuotegateClient } from '../../clients/typescript/src/index.js';
import { obs, testApp, type TestApp } from '../helpers/app.js';
import { listen, openStream } from '../helpers/live.js';

let t: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
let clock = Date.now();
const NAMES = ['AK-47 | Client (Field-Tested)', 'AWP | Client (Minimal Wear)', 'M4A4 | Client (Factory New)'];
const at = (h: number) => new Date(Date.UTC(2026, 6, 16, h));

beforeAll(async () => {
  // One live subscription per account at once, so a test can hold an account's slot and see follow() fall back.
  t = await testApp({ rateLimiter: createRateLimiter({ now: () => clock }), live: { maxConcurrent: 1 } });
  server = await listen(t.app);
  await ingestBatch(t.db, NAMES.flatMap((n, i) => [obs(n, { price: `${100 + i}`, observedAt: at(0) }), obs(n, { side: 'bid', price: `${90 + i}`, observedAt: at(0) })]));
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
    expect(client.rateLimits).toHaveLength(1);
  });

  it('keeps every RateLimit policy of an answer: a GraphQL query of two metered operations has two', async () => {
    const acct = await createAccount(t.db, { credits: 100n });
    const client = createQuotegateClient({ baseUrl: server.url, apiKey: acct.key });
    await client.graphql(`query Two($name: String!) { item(marketHashName: $name) { marketHashName } priceChanges(limit: 1) { nextCursor } }`, { name: NAMES[0]! });
    const byPolicy = new Map(client.rateLimits.map((p) => [p.policy, p]));
    expect([...byPolicy.keys()].sort()).toEqual(['getPriceChanges', 'getPrices']);
    expect(byPolicy.get('getPrices')).toMatchObject({ limit: 120, windowSeconds: 60, remaining: 119 });
    expect(byPolicy.get('getPriceChanges')).toMatchObject({ limit: 120, windowSeconds: 60, remaining: 119 });
    // Two getPrices fields (aliased) and one getPriceChanges: getPrices now has fewer left, so `rateLimit` names it.
    await client.graphql(`query Again($name: String!) { item(marketHashName: $name) { marketHashName } priceChanges(limit: 1) { nextCursor } a: item(marketHashName: $name) { marketHashName } }`, { name: NAMES[0]! });
    expect(client.rateLimits.map((p) => [p.policy, p.remaining]).sort()).toEqual([['getPriceChanges', 118], ['getPrices', 117]]);
    expect(client.rateLimit).toMatchObject({ policy: 'getPrices', remaining: 117 });
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

  it('reads the NDJSON export a quote at a time: the JSON file\'s quotes, its own ETag, then a free 304 with no lines', async () => {
    const acct = await createAccount(t.db, { credits: 100n });
    const client = createQuotegateClient({ baseUrl: server.url, apiKey: acct.key });
    const file = await client.exportLines('all');
    expect(file.notModified).toBe(false);
    const lines = [];
    for await (const line of file.lines) lines.push(line);
    const other = await createAccount(t.db, { credits: 100n });
    const json = await createQuotegateClient({ baseUrl: server.url, apiKey: other.key }).exportPrices('all');
    expect(file.etag).toMatch(/^"/);
    expect(file.etag).not.toBe(json.etag);
    const fromJson = json.body.items.flatMap((item) => item.markets.map((q) => quoteKey(item.market_hash_name, q.market_code, q.side)));
    expect(lines.map((l) => quoteKey(l.market_hash_name, l.market_code, l.side))).toEqual(fromJson);
    const ask = lines.find((l) => l.market_hash_name === NAMES[0] && l.side === 'ask' && l.market_code === 'BUFF163')!;
    expect(ask.market_price_amount).toBe('100');
    const again = await client.exportLines('all', { ifNoneMatch: file.etag });
    expect(again.notModified).toBe(true);
    const none = [];
    for await (const line of again.lines) none.push(line);
    expect(none).toEqual([]);
    const [{ used }] = (await t.db.query<{ used: string }>(`SELECT credits_used::text AS used FROM account WHERE id = $1`, [acct.accountId])) as [{ used: string }];
    expect(used).toBe('10'); // the download only; the 304 is free
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

  /** The quotes GET /prices serves now for NAMES and the new item, keyed like a LocalCopy. */
  const served = async (client: QuotegateClient) => {
    const res = await client.api.POST('/prices/batch', { body: { market_hash_names: [...NAMES, 'P250 | Client new (Field-Tested)'] } });
    const out = new Map<string, unknown>();
    for (const item of res.data!.data.items) for (const q of item.markets) out.set(quoteKey(item.market_hash_name, q.market_code, q.side), q);
    return out;
  };
  /** The change sequence now (the feed's empty page without `since`). */
  const currentSeq = async (client: QuotegateClient) => BigInt((await client.api.GET('/prices/changes', { params: { query: {} } })).data!.data.next_cursor);
  let round = 0;
  /**
   * One ingestion of three changes: a new ask price, a new item's price, and a bid delisted or listed again (a
   * key is touched every third round, so its state alternates: every row changes the served state; an
   * observation that changes nothing moves only `observed_at`, which no change reports).
   */
  const ingestRound = async () => {
    const r = round++;
    await ingestBatch(t.db, [
      obs(NAMES[r % 3]!, { price: `${200 + r}.5`, observedAt: at(1 + r) }),
      obs('P250 | Client new (Field-Tested)', { price: `${5 + r}`, observedAt: at(1 + r) }),
      obs(NAMES[(r + 1) % 3]!, r % 2 === 0 ? { side: 'bid', price: null, quantity: 0, observedAt: at(1 + r) } : { side: 'bid', price: `${50 + r}`, observedAt: at(1 + r) }),
    ]);
  };
  /** Takes steps until the copy is current to `target` (the sequence after an ingestion); returns the last. */
  const until = async (next: () => Promise<FollowStep>, target: bigint, last: FollowStep, each: (step: FollowStep) => void = () => {}) => {
    let step = last;
    while (BigInt(step.copy.cursor) < target) {
      step = await next();
      each(step);
    }
    return step;
  };

  for (const transport of ['stream', 'poll'] as const) {
    it(`follow() over the ${transport === 'stream' ? 'live stream' : 'polled feed'}: the export, then the changes; the local copy equals the served state through ingestion`, async () => {
      const acct = await createAccount(t.db, { credits: 1000n });
      const client = createQuotegateClient({ baseUrl: server.url, apiKey: acct.key });
      const stop = new AbortController();
      const steps = client.follow({ signal: stop.signal, transport, intervalMs: 20, pageLimit: 2 });
      const next = async () => (await steps.next()).value as FollowStep;
      const seen = new Set<string>();
      const check = (step: FollowStep) => {
        expect(step.via).toBe(transport);
        expect(step.changes.length).toBeGreaterThan(0);
        for (const c of step.changes) {
          expect(seen.has(c.seq)).toBe(false); // never twice
          seen.add(c.seq);
        }
      };
      const first = await next();
      expect(first).toMatchObject({ downloaded: true, via: 'export' });
      // The export was built before the other tests' ingestion: the changes since its change_seq bring it up to date.
      let step = await until(next, await currentSeq(client), first, check);
      expect(step.copy.quotes).toEqual(await served(client));
      for (let i = 0; i < 3; i++) {
        await ingestRound();
        step = await until(next, await currentSeq(client), step, check);
        expect(step.copy.quotes).toEqual(await served(client));
      }
      stop.abort();
      expect((await steps.next()).done).toBe(true); // the abort ends it (an open stream is closed)
    });
  }

  it('follow() stopped by its signal closes the live stream, also after a garbage collection (the account\'s one slot is free again)', async () => {
    // Node's fetch follows a Request's signal through a weak reference: after a collection the abort alone did not
    // reach the connection, and the next step waited on the open stream for ever (CI, 2026-11-29).
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const acct = await createAccount(t.db, { credits: 1000n });
    const client = createQuotegateClient({ baseUrl: server.url, apiKey: acct.key });
    const stop = new AbortController();
    const steps = client.follow({ signal: stop.signal, transport: 'stream', intervalMs: 20 });
    const next = async () => (await steps.next()).value as FollowStep;
    const step = await next();
    expect(step.via).toBe('export');
    await ingestRound();
    const open = await until(next, await currentSeq(client), step, (s) => expect(s.via).toBe('stream')); // the stream is open
    expect(open.via).toBe('stream');
    for (let i = 0; i < 3; i++) gc();
    stop.abort();
    expect((await steps.next()).done).toBe(true);
    // The service sees the connection close and frees the account's one live slot (maxConcurrent 1).
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      const other = await openStream(`${server.url}/prices/changes/stream`, { headers: { 'X-API-Key': acct.key } });
      status = other.status;
      other.abort();
      await other.ended;
      if (status !== 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(200);
  }, 30_000);

  it('follow() falls back to the feed while the stream is refused (429 too_many_subscriptions), then returns to the stream', async () => {
    const acct = await createAccount(t.db, { credits: 1000n });
    const held = await openStream(`${server.url}/prices/changes/stream`, { headers: { 'X-API-Key': acct.key } }); // the account's one slot
    expect(held.status).toBe(200);
    const client = createQuotegateClient({ baseUrl: server.url, apiKey: acct.key });
    const stop = new AbortController();
    const steps = client.follow({ signal: stop.signal, intervalMs: 20, streamRetryMs: 50 });
    const next = async () => (await steps.next()).value as FollowStep;
    let step = await next();
    expect(step.via).toBe('export');
    await ingestRound();
    step = await until(next, await currentSeq(client), step, (s) => expect(s.via).toBe('poll')); // the stream is refused each time
    expect(step.via).toBe('poll');
    expect(step.copy.quotes).toEqual(await served(client));

    held.abort(); // the slot frees: the next try of the stream gets it
    await held.ended;
    const vias: string[] = [];
    for (let i = 0; i < 20 && !vias.includes('stream'); i++) {
      await ingestRound();
      step = await until(next, await currentSeq(client), step, (s) => vias.push(s.via));
      expect(step.copy.quotes).toEqual(await served(client));
    }
    expect(vias).toContain('stream');
    stop.abort();
    expect((await steps.next()).done).toBe(true);
  });
});
