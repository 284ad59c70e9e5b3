import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs } from '../helpers/app.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { mostQuotedItems, readWatchlistFile, sharedWatchlist, WATCHLIST_REUSE_MS } from '../../src/collectors/watchlist.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(async () => {
  await db?.destroy();
});

describe('watch list of per-item sources', () => {
  it('picks the items listed on the most markets, ties by name; delisted and bid quotes do not count', async () => {
    const at = new Date('2026-11-27T00:00:00Z');
    await ingestQuotes(db, [
      obs('Wide', { marketCode: 'BUFF163', providerCode: 'BUFF163', observedAt: at }),
      obs('Wide', { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', observedAt: at }),
      obs('Wide', { marketCode: 'CSFLOAT', providerCode: 'CSFLOAT', currencyCode: 'USD', observedAt: at }),
      obs('Bids', { side: 'bid', observedAt: at }),
      obs('Bids', { side: 'bid', marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', observedAt: at }),
      obs('Bids', { marketCode: 'CSFLOAT', providerCode: 'CSFLOAT', currencyCode: 'USD', observedAt: at }),
      obs('Gone', { observedAt: at, delisted: true }),
      obs('Gone', { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', observedAt: at, delisted: true }),
      obs('Pair B', { observedAt: at }),
      obs('Pair B', { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', observedAt: at }),
      obs('Pair A', { observedAt: at }),
      obs('Pair A', { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', observedAt: at }),
    ]);
    expect(await mostQuotedItems(db, '730', 3)).toEqual(['Pair A', 'Pair B', 'Wide']);
    expect(await mostQuotedItems(db, '730', 1)).toEqual(['Wide']);
    expect(await mostQuotedItems(db, '730', 0)).toEqual([]);
    expect(await mostQuotedItems(db, '570', 5)).toEqual([]);
  });

  it('reads a watch-list file: comments, blank lines and repeats dropped, order kept', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'qg-watch-')), 'watch.txt');
    fs.writeFileSync(file, '# Steam watch list\nAK-47 | Redline (Field-Tested)\r\n\n  AWP | Asiimov (Field-Tested)  \nAK-47 | Redline (Field-Tested)\n');
    expect(readWatchlistFile(file)).toEqual(['AK-47 | Redline (Field-Tested)', 'AWP | Asiimov (Field-Tested)']);
  });
});

describe('shared watch list', () => {
  it('is computed once for the sources that start together, reused for its window, computed again after it', async () => {
    let clock = 1_000_000;
    let loads = 0;
    const shared = sharedWatchlist(async () => {
      loads += 1;
      return [`list ${loads}`];
    }, () => clock);
    const together = await Promise.all([shared(), shared(), shared(), shared()]);
    expect(loads).toBe(1);
    expect(together).toEqual([['list 1'], ['list 1'], ['list 1'], ['list 1']]);
    clock += WATCHLIST_REUSE_MS - 1;
    expect(await shared()).toEqual(['list 1']);
    clock += 1;
    expect(await shared()).toEqual(['list 2']);
    expect(loads).toBe(2);
  });

  it('does not keep a failed computation: the next run tries again', async () => {
    let loads = 0;
    const shared = sharedWatchlist(async () => {
      loads += 1;
      if (loads === 1) throw new Error('database went away');
      return ['back'];
    });
    await expect(shared()).rejects.toThrow('database went away');
    expect(await shared()).toEqual(['back']);
    expect(loads).toBe(2);
  });
});
