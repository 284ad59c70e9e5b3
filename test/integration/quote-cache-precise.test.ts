/**
 * Precise invalidation of the quote cache (quotes/quote-cache.ts, issue 45): a write whose changes are in the change
 * sequence drops only the changed names, so an unchanged item stays served from memory while another is ingested, and
 * the changed item is answered with its new price at once; a confirmation drops everything (its observed_at and
 * fresh_at have no change row), except in a collector run's chunks, whose run signals at its end; a signal without a
 * known range (`*`) drops everything. On PGlite; on PostgreSQL with TEST_DATABASE_URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEnvelope } from '../helpers/shapes.js';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { ingestBatch } from '../../src/quotes/ingestion.js';
import { currentSequence } from '../../src/quotes/changes.js';
import { CHANGES_PAYLOAD, QuoteCache, quotesChanged, REMOTE_SIGNAL_GRACE_MS } from '../../src/quotes/quote-cache.js';

let t: TestApp;
const A = 'Precise cache item A';
const B = 'Precise cache item B';
const later = (h: number) => new Date(Date.UTC(2026, 6, 16, h));

const askPrice = (quotes: { side: string; marketCode: string; price: { toString(): string } | null }[] | undefined) =>
  quotes?.find((q) => q.side === 'ask' && q.marketCode === 'BUFF163')?.price?.toString();

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [obs(A, { price: '10.5', observedAt: later(1) }), obs(B, { price: '20.5', observedAt: later(1) })]);
});
afterAll(async () => {
  await t.close();
});

/** Holds the quote cache's invalidation statement (it reads quote_change) behind a lock, so a signal stays pending; resolves with the release. */
async function holdInvalidation(): Promise<() => Promise<void>> {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const tx = t.db.transaction(async (q) => {
    await q.query('LOCK TABLE quote_change IN ACCESS EXCLUSIVE MODE');
    locked();
    await held;
  });
  await isLocked;
  return async () => {
    release();
    await tx;
  };
}

describe('quote cache, precise invalidation', () => {
  it("another item's ingestion leaves an unchanged item in memory and drops the changed one", async () => {
    const cache = new QuoteCache(t.db);
    await cache.settled();
    await cache.load('730', [A, B]);
    const misses = cache.stats.misses;
    // Ingest B in a transaction (the collectors' path): its signals are heard before and after the commit.
    await ingestBatch(t.db, [obs(B, { price: '21.5', observedAt: later(2) })]);
    await cache.settled();
    const hits = cache.stats.hits;
    const a = await cache.load('730', [A]);
    expect(askPrice(a.get(A))).toBe('10.5');
    expect(cache.stats.hits).toBe(hits + 1);
    expect(cache.stats.misses).toBe(misses);
    const b = await cache.load('730', [B]);
    expect(askPrice(b.get(B))).toBe('21.5');
    expect(cache.stats.misses).toBe(misses + 1);
    expect(cache.invalidations.precise).toBeGreaterThan(0);
    cache.close();
  });

  it('a changed item is answered with its new price by GET /prices as soon as the write returns', async () => {
    const get = async (name: string) => {
      const data = expectEnvelope(await t.get(`/prices?market_hash_name=${encodeURIComponent(name)}`, t.auth()));
      return data.markets.find((m: { market_code: string; side: string }) => m.market_code === 'BUFF163' && m.side === 'ask').market_price_amount;
    };
    expect(await get(A)).toBe('10.5');
    expect(await get(B)).toBe('21.5');
    const hits = t.app.quoteCacheStats()!.hits;
    await ingestBatch(t.db, [obs(B, { price: '22.5', observedAt: later(3) })]);
    expect(await get(B)).toBe('22.5');
    // Without a transaction (the importer's path) too.
    await ingestQuotes(t.db, [obs(B, { price: '23.5', observedAt: later(4) })]);
    expect(await get(B)).toBe('23.5');
    // Let the invalidations settle, then A is still served from memory.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const before = t.app.quoteCacheStats()!.hits;
    expect(before).toBeGreaterThanOrEqual(hits);
    expect(await get(A)).toBe('10.5');
    expect(t.app.quoteCacheStats()!.hits).toBe(before + 1);
  });

  it('a confirmation (the same price seen later) shows its new observed_at and fresh_at on the next GET /prices', async () => {
    const quote = async (name: string) => {
      const data = expectEnvelope(await t.get(`/prices?market_hash_name=${encodeURIComponent(name)}`, t.auth()));
      return data.markets.find((m: { market_code: string; side: string }) => m.market_code === 'BUFF163' && m.side === 'ask');
    };
    const before = await quote(A);
    expect(Date.parse(before.observed_at)).toBe(later(1).getTime());
    await quote(A); // cached now
    await ingestBatch(t.db, [obs(A, { price: '10.5', observedAt: later(5) })]);
    const after = await quote(A);
    expect(after.market_price_amount).toBe('10.5');
    expect(Date.parse(after.observed_at)).toBe(later(5).getTime());
    expect(Date.parse(after.fresh_at)).toBe(later(5).getTime());
    expect(after.changed_at).toBe(before.changed_at);
  });

  it("a collector run's chunks (confirmations later) keep an unchanged item in memory until the run signals its end", async () => {
    const cache = new QuoteCache(t.db);
    await cache.settled();
    await cache.load('730', [A]);
    await ingestBatch(t.db, [obs(A, { price: '10.5', observedAt: later(6) }), obs(B, { price: '24.5', observedAt: later(6) })], { confirmations: 'later' });
    await cache.settled();
    const misses = cache.stats.misses;
    const kept = await cache.load('730', [A]);
    expect(cache.stats.misses).toBe(misses);
    expect(kept.get(A)?.find((q) => q.side === 'ask' && q.marketCode === 'BUFF163')?.observedAt?.getTime()).toBe(later(5).getTime());
    quotesChanged('*'); // the run's end (src/collectors/runner.ts)
    await cache.settled();
    const fresh = await cache.load('730', [A]);
    expect(cache.stats.misses).toBe(misses + 1);
    expect(fresh.get(A)?.find((q) => q.side === 'ask' && q.marketCode === 'BUFF163')?.observedAt?.getTime()).toBe(later(6).getTime());
    cache.close();
  });

  it('a change drops the name from both stores: REST (texts), GraphQL (objects) and the batch answer the new price together', async () => {
    const graphql = async (name: string) => {
      const res = await t.app.fetch(
        new Request('http://test/graphql', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', ...t.auth() },
          body: JSON.stringify({ query: 'query($n: String!) { prices(marketHashName: $n) { markets { marketCode side marketPriceAmount } marketsJson } }', variables: { n: name } }),
        }),
      );
      const body = await res.json();
      expect(body.errors).toBeUndefined();
      return body.data.prices as { markets: { marketCode: string; side: string; marketPriceAmount: string }[]; marketsJson: { market_code: string; side: string; market_price_amount: string }[] };
    };
    const rest = async (name: string) => expectEnvelope(await t.get(`/prices?market_hash_name=${encodeURIComponent(name)}`, t.auth())).markets;
    const batch = async (name: string) => expectEnvelope(await t.post('/prices/batch', { market_hash_names: [name] }, t.auth())).items[0].markets;
    const ask = (markets: { market_code: string; side: string; market_price_amount: string }[]) => markets.find((m) => m.market_code === 'BUFF163' && m.side === 'ask')!.market_price_amount;
    // Load both stores, twice so the second answers come from memory.
    for (let i = 0; i < 2; i++) {
      await graphql(A);
      await rest(A);
    }
    await ingestBatch(t.db, [obs(A, { price: '11.25', observedAt: later(7) })]);
    const g = await graphql(A);
    expect(g.markets.find((m) => m.marketCode === 'BUFF163' && m.side === 'ask')!.marketPriceAmount).toBe('11.25');
    expect(ask(g.marketsJson)).toBe('11.25');
    expect(ask(await rest(A))).toBe('11.25');
    expect(ask(await batch(A))).toBe('11.25');
    // The GraphQL objects and the REST text are the same quotes in the same order.
    expect((await rest(A)).map((m: { market_code: string; side: string }) => `${m.market_code}/${m.side}`)).toEqual(g.markets.map((m) => `${m.marketCode}/${m.side}`));
  });

  it("a change heard from another process: held entries are served while its invalidation runs, for at most REMOTE_SIGNAL_GRACE_MS; this process's own change sends lookups to the database at once", async () => {
    const cache = new QuoteCache(t.db);
    await cache.settled();
    await cache.load('730', [A]);
    const price = askPrice(cache.peek('730', A));
    expect(price).toMatch(/^\d/);
    let release = await holdInvalidation();
    const published = t.db.notify('qg_quotes', CHANGES_PAYLOAD); // as a collector's commit in another process is heard
    expect(cache.pendingSignal).toBe(false);
    expect(askPrice(cache.peek('730', A))).toBe(price); // within the grace: served from memory
    await new Promise((r) => setTimeout(r, REMOTE_SIGNAL_GRACE_MS + 50));
    expect(cache.pendingSignal).toBe(true);
    expect(cache.peek('730', A)).toBeUndefined(); // the invalidation outlived the grace: lookups go to the database
    await release();
    await published;
    await cache.settled();
    expect(cache.pendingSignal).toBe(false);
    expect(askPrice(cache.peek('730', A))).toBe(price); // A did not change: still held

    release = await holdInvalidation();
    quotesChanged(CHANGES_PAYLOAD); // this process's own writer
    expect(cache.pendingSignal).toBe(true);
    expect(cache.peek('730', A)).toBeUndefined(); // at once
    await release();
    await cache.settled();
    expect(askPrice(cache.peek('730', A))).toBe(price);
    cache.close();
  });

  it("loadAsOf (the live hub's read) uses held entries only once the cache has applied every change through the given seq", async () => {
    const cache = new QuoteCache(t.db);
    await cache.settled();
    await cache.load('730', [A]);
    const applied = await currentSequence(t.db);
    const hits = cache.stats.hits;
    expect((await cache.loadAsOf('730', [A], applied)).has(A)).toBe(true);
    expect(cache.stats.hits).toBe(hits + 1); // applied: from memory
    // A change the cache has not applied yet (the hub heard of it first, e.g. over Redis): the database answers.
    expect((await cache.loadAsOf('730', [A], applied + 1n)).has(A)).toBe(true);
    expect(cache.stats.hits).toBe(hits + 1);
    cache.close();
  });

  it('a signal without a known range drops everything', async () => {
    const cache = new QuoteCache(t.db);
    await cache.settled();
    await cache.load('730', [A, B]);
    expect(cache.size).toBe(2);
    quotesChanged('*');
    expect(cache.size).toBe(0);
    await cache.settled();
    const misses = cache.stats.misses;
    await cache.load('730', [A]);
    expect(cache.stats.misses).toBe(misses + 1);
    cache.close();
  });
});
