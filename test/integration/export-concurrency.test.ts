/**
 * The export build does not stall other requests (issue 41, point 6). On embedded PGlite the database is one
 * connection in this process: a build that held it in one transaction made every request wait for the whole build.
 * Here a GET /me made while a build runs answers while the build is still running (paused between two pages, and
 * unpaused: before the build ends), and the file the build publishes is the same: every item with a quote, in
 * code-point order of names, each as GET /prices serves it, byte for byte the same file whatever the page size.
 * No latency is asserted (bench/export.ts measures it): only outcomes and order, with a generous bound.
 */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/accounts.js';
import { buildSnapshots, currentSnapshot, EXPORT_SIDES, sweepFragments } from '../../src/exports/exports.js';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope } from '../helpers/shapes.js';

let t: TestApp;
/** Names whose UTF-16 order differs from their code-point order (U+FF5E against a surrogate pair), and plain ones. */
const names = [
  ...Array.from({ length: 120 }, (_, i) => `Sticker | Concurrency ${String(i).padStart(3, '0')}`),
  'Charm | \u{1F600} Smile',
  'Charm | \uFF5E Wave',
  '★ Karambit | Concurrency',
];

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(
    t.db,
    names.flatMap((name, i) => [
      obs(name, { price: `${1 + i}.25` }),
      obs(name, { side: 'bid', price: `${1 + i}` }),
      obs(name, { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', price: `${2 + i}.5` }),
    ]),
  );
});
afterAll(async () => {
  await t.close();
});

/** Settles with the answer, or with 'timeout' after `ms`. */
const within = <T>(p: Promise<T>, ms: number) => Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms).unref())]);

async function exportDoc(side: string) {
  const res = await t.app.fetch(new Request(`http://test/prices/export?side=${side}`, { headers: { 'X-API-Key': t.key } }));
  expect(res.status).toBe(200);
  return JSON.parse(zlib.gunzipSync(Buffer.from(await res.arrayBuffer())).toString('utf8'));
}

describe('an export build running', () => {
  it('answers GET /me while the build is paused between two pages', async () => {
    let release!: () => void;
    const paused = new Promise<void>((r) => (release = r));
    let reached!: () => void;
    const atPage = new Promise<void>((r) => (reached = r));
    let done = false;
    const build = buildSnapshots(t.db, '730', EXPORT_SIDES, {
      pageItems: 5,
      onPage: async (n) => {
        if (n !== 3) return;
        reached();
        await paused;
      },
    }).finally(() => (done = true));
    try {
      await atPage;
      const me = await within(t.get('/me', t.auth()), 5000);
      expect(me).not.toBe('timeout');
      expect(done).toBe(false);
      expect(expectEnvelope(me as Awaited<ReturnType<TestApp['get']>>).credit).toBeTruthy();
    } finally {
      release();
      await build;
    }
  });

  it('answers GET /me while an unpaused build still reads its pages', async () => {
    // A key this app has not looked up yet: its lookup and its balance are read from the database.
    const { key } = await createAccount(t.db, { credits: 10n });
    let pagesRead = 0;
    let request: Promise<{ me: Awaited<ReturnType<TestApp['get']>> | 'timeout'; pagesRead: number }> | null = null;
    // The request is made once the build reads its pages (after the first one), and the build goes on at once.
    await buildSnapshots(t.db, '730', EXPORT_SIDES, {
      pageItems: 1,
      now: new Date('2026-07-17T00:00:00Z'),
      onPage: (n) => {
        pagesRead = n;
        if (n === 1) request = within(t.get('/me', { 'X-API-Key': key }), 5000).then((me) => ({ me, pagesRead }));
      },
    });
    const answered = await request!;
    expect(answered.me).not.toBe('timeout');
    expect((answered.me as Awaited<ReturnType<TestApp['get']>>).status).toBe(200);
    // One page per item: the answer came while most of the pages were still to be read.
    expect(pagesRead).toBe(names.length);
    expect(answered.pagesRead).toBeLessThan(names.length / 2);
  });

  it('publishes the same file: every item in code-point order, each as GET /prices serves it, whatever the page size', async () => {
    const results = await buildSnapshots(t.db, '730', EXPORT_SIDES, { pageItems: 7, now: new Date('2026-07-17T00:05:00Z') });
    expect(results.map((r) => r.published)).toEqual([false, false, false, false, false, false, false, false]); // the same items as the build above (4 sides x 2 formats)
    const doc = await exportDoc('all');
    const order = (await t.db.query<{ n: string }>(`SELECT market_hash_name AS n FROM item WHERE app_id = '730' ORDER BY market_hash_name COLLATE "C"`)).map((r) => r.n);
    expect(doc.items.map((i: { market_hash_name: string }) => i.market_hash_name)).toEqual(order);
    expect(order.indexOf('Charm | \uFF5E Wave')).toBeLessThan(order.indexOf('Charm | \u{1F600} Smile')); // code points, not UTF-16 units
    // The ndjson file of the same build: the same quotes in the same order, one per line (issue 44, point 4).
    const res = await t.app.fetch(new Request('http://test/prices/export?side=all&format=ndjson', { headers: { 'X-API-Key': t.key } }));
    expect(res.status).toBe(200);
    const lines = zlib.gunzipSync(Buffer.from(await res.arrayBuffer())).toString('utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((l) => JSON.parse(l))).toEqual(
      doc.items.flatMap((i: { market_hash_name: string; markets: object[] }) => i.markets.map((q) => ({ market_hash_name: i.market_hash_name, ...q }))),
    );
    for (const item of doc.items.filter((_: unknown, i: number) => i % 20 === 0 || i >= doc.items.length - 3)) {
      const served = expectEnvelope(await t.get(`/prices?market_hash_name=${encodeURIComponent(item.market_hash_name)}`, t.auth()));
      expect(item.markets).toEqual(served.markets);
    }
    // Stored texts whose item left the catalogue (first, between and after the others in key order, on several
    // sides) are deleted by the sweep after each build, in keyset slices; the others are kept.
    const count = async () => Number((await t.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM export_fragment`))[0]!.n);
    const kept = await count();
    const gone = ['AAA | Gone', 'Sticker | Concurrency 050 Gone', '\u{1F600} Gone'];
    for (const name of gone) {
      for (const side of ['all', 'ask', 'bid']) {
        await t.db.query(`INSERT INTO export_fragment (app_id, market_hash_name, side, digest, deflated, quote_count) VALUES ('730', $1, $2, repeat('0', 32), NULL, 0)`, [name, side]);
      }
    }
    expect(await sweepFragments(t.db, '730', 7)).toBe(9);
    expect(await count()).toBe(kept);
    await t.db.query(`INSERT INTO export_fragment (app_id, market_hash_name, side, digest, deflated, quote_count) VALUES ('730', 'Gone | Item', 'all', repeat('0', 32), NULL, 0)`);
    await buildSnapshots(t.db, '730', ['all'], { now: new Date('2026-07-17T00:07:00Z') });
    expect(await count()).toBe(kept);
    // Built again from scratch (no stored item text) in one page per 250 names: the same bytes (the ETag).
    const etag = (await currentSnapshot(t.db, '730', 'all'))!.etag;
    await t.db.query(`DELETE FROM export_fragment`);
    const again = await buildSnapshots(t.db, '730', ['all'], { pageItems: 250, now: new Date('2026-07-17T00:10:00Z') });
    expect(again[0]!.published).toBe(false);
    expect(again[0]!.snapshot.etag).toBe(etag);
  });

  it('stops between two pages when the service stops: nothing is published, and the next build publishes', async () => {
    await ingestQuotes(t.db, [obs(names[0]!, { price: '999.5', observedAt: new Date('2026-07-16T01:00:00Z') })]);
    const before = (await currentSnapshot(t.db, '730', 'all'))!.etag;
    const stop = new AbortController();
    let pages = 0;
    const aborted = buildSnapshots(t.db, '730', ['all'], {
      pageItems: 5,
      now: new Date('2026-07-17T00:20:00Z'),
      signal: stop.signal,
      onPage: (n) => {
        pages = n;
        if (n === 2) stop.abort(new Error('the service is stopping'));
      },
    });
    await expect(aborted).rejects.toThrow('the service is stopping');
    expect(pages).toBe(2);
    expect((await currentSnapshot(t.db, '730', 'all'))!.etag).toBe(before);
    const next = await buildSnapshots(t.db, '730', ['all'], { now: new Date('2026-07-17T00:25:00Z') });
    expect(next[0]!.published).toBe(true);
    expect(next[0]!.snapshot.etag).not.toBe(before);
  });

  it('on embedded PGlite (no autovacuum) analyzes the stored item texts after writing many, so the planner knows their number', async () => {
    if (t.db.kind !== 'pglite') return; // PostgreSQL's autovacuum keeps its statistics
    await ingestQuotes(
      t.db,
      Array.from({ length: 140 }, (_, i) => obs(`Sticker | Analyzed ${String(i).padStart(3, '0')}`, { price: `${3 + i}.75` })),
    );
    await t.db.query(`DELETE FROM export_fragment`);
    await t.db.query(`ANALYZE export_fragment`);
    const rows = async () => Number((await t.db.query<{ n: number }>(`SELECT reltuples::float8 AS n FROM pg_class WHERE relname = 'export_fragment'`))[0]!.n);
    expect(await rows()).toBeLessThanOrEqual(0);
    await buildSnapshots(t.db, '730', EXPORT_SIDES, { now: new Date('2026-07-17T00:30:00Z') });
    const stored = Number((await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM export_fragment`))[0]!.n);
    expect(stored).toBeGreaterThanOrEqual(1000);
    expect(await rows()).toBe(stored);
  });
});
