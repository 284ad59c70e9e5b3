/**
 * The replica's quote cache (quotes/quote-cache.ts) under traffic spread over many items (issue 45): lookups that
 * miss in the same turn of the event loop, from different requests, are read by one statement, each request gets
 * its own item's quotes (an unknown name none), and a change signalled while the statement runs is not stored; a load
 * of LARGE_LOAD names or more stores every name it read (an unknown one as "no quotes") under the same rule.
 * (Answers served from memory afterwards: caller-cache.test.ts; on a loaded server the cache's 1 s rule while its
 * change listener reconnects can drop an entry, so it is not asserted here.) On PGlite; on PostgreSQL with TEST_DATABASE_URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { LARGE_LOAD, QuoteCache } from '../../src/quotes/quote-cache.js';
import { QUOTES_SQL } from '../../src/quotes/quotes.js';
import type { Database } from '../../src/db/client.js';

let t: TestApp;
const items = Array.from({ length: 12 }, (_, i) => `Quote cache item ${i + 1}`);

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(
    t.db,
    items.map((name, i) => obs(name, { price: `${10 + i}.5` })),
  );
});
afterAll(async () => {
  await t.close();
});

describe('quote cache', () => {
  it('misses of different requests in one turn share one statement, and each request gets its own item', async () => {
    // The quote lookups the cache sends (the app's own background statements are not counted).
    let lookups = 0;
    const counted: Database = {
      ...t.db,
      query: <T>(sql: string, params?: unknown[]) => {
        if (sql === QUOTES_SQL) lookups += 1;
        return t.db.query<T>(sql, params);
      },
    };
    for (let round = 0; round < 3; round++) {
      const cache = new QuoteCache(counted);
      const names = items.slice(round * 4, round * 4 + 4);
      lookups = 0;
      const answers = await Promise.all([...names.map((n) => cache.load('730', [n])), cache.load('730', ['No such item in the cache test'])]);
      expect(lookups).toBe(1);
      names.forEach((name, i) => {
        expect([...answers[i]!.keys()]).toEqual([name]);
        const ask = answers[i]!.get(name)!.find((q) => q.side === 'ask' && q.marketCode === 'BUFF163')!;
        expect(ask.price?.toString()).toBe(`${10 + round * 4 + i}.5`);
      });
      expect(answers[names.length]!.size).toBe(0);
      cache.close();
    }
  });

  it('a change signalled while the shared statement runs is not stored', async () => {
    const cache = new QuoteCache(t.db);
    const pending = cache.load('730', [items[0]!]);
    // The shared statement starts on the next turn (setImmediate); this one runs after it has started.
    await new Promise((resolve) => setImmediate(resolve));
    cache.clear();
    const answer = await pending;
    expect(answer.get(items[0]!)?.length).toBeGreaterThan(0);
    expect(cache.peek('730', items[0]!)).toBeUndefined();
    cache.close();
  });

  it('a large load stores every name it read, unknown ones as no quotes, unless a change is signalled meanwhile', async () => {
    const unknown = Array.from({ length: LARGE_LOAD }, (_, i) => `Not an item of the cache test ${i}`);
    const names = [...items, ...unknown];
    // The change signal under test is the cache's own `clear` (what a signal calls): this cache hears no other, so a
    // late notification of the test's ingestion or a reconnect of the app's change listener cannot drop its entries.
    const quiet: Database = { ...t.db, onNotify: () => () => undefined, listening: () => true };
    const cache = new QuoteCache(quiet);
    const answer = await cache.load('730', names);
    expect([...answer.keys()]).toEqual(items);
    expect(cache.size).toBe(names.length);
    expect(cache.peek('730', items[3]!)).toEqual(answer.get(items[3]!));
    expect(cache.peek('730', unknown[0]!)).toEqual([]);
    cache.close();

    const signalled = new QuoteCache(quiet);
    const pending = signalled.load('730', names);
    // The load has begun (its generation is read before its first await); the signal comes before its statement ends.
    signalled.clear();
    const read = await pending;
    expect([...read.keys()]).toEqual(items);
    expect(signalled.size).toBe(0);
    expect(signalled.peek('730', items[3]!)).toBeUndefined();
    signalled.close();
  });
});
