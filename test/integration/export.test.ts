/** GET /prices/export as a client sees it: snapshots, ETags, 304s, billing, limits, interrupted builds. */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { RFC3339_UTC, expectError, expectKeys } from '../helpers/shapes.js';
import { responseMismatch } from '../helpers/openapi.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { buildSnapshot, currentSnapshot, ifNoneMatchHits, runExportSnapshots } from '../../src/exports/exports.js';

let t: TestApp;
const day = (d: string) => new Date(`2026-07-${d}T00:00:00Z`);

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [
    obs('Recoil Case', { price: '2.59', quantity: 17237 }),
    obs('Recoil Case', { side: 'bid', price: '2.6', quantity: 12352 }),
    obs('AK-47 | Redline (Field-Tested)', { price: '201.85' }),
    obs('AK-47 | Redline (Field-Tested)', { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', price: '27.14' }),
    obs('★ Karambit | Fade', { side: 'bid', price: '9000' }), // bid only: absent from the ask export
    obs('Zeus x27', { price: '1.5', observedAt: day('15') }),
    obs('Zeus x27', { price: null, delisted: true, observedAt: day('16') }),
    obs('Arcana', { appId: '570', price: '100' }),
  ]);
});
afterAll(async () => {
  await t.close();
});

async function download(headers: Record<string, string>, query = '') {
  const res = await t.app.fetch(new Request(`http://test/prices/export${query}`, { headers }));
  const bytes = Buffer.from(await res.arrayBuffer());
  const doc = res.status === 200 ? JSON.parse(zlib.gunzipSync(bytes).toString('utf8')) : bytes.length > 0 ? JSON.parse(bytes.toString('utf8')) : undefined;
  expect(responseMismatch('GET', '/prices/export', res.status, doc)).toBeNull();
  return { res, bytes, doc };
}

async function account(credits: bigint, subscription = false) {
  const a = await createAccount(t.db, {
    credits,
    subscription: subscription ? { category: 'api', planId: 'pro', expiresAt: new Date(Date.now() + 86_400_000) } : undefined,
  });
  return { ...a, auth: { Authorization: `Bearer ${a.key}` } };
}

const used = async (id: string) =>
  Number((await t.db.query<{ used: string }>(`SELECT credits_used::text AS used FROM account WHERE id = $1`, [id]))[0]!.used);

describe('GET /prices/export', () => {
  it('answers 503 dependency_unavailable before the first snapshot, not charged', async () => {
    const a = await account(100n);
    const { res, doc } = await download(a.auth);
    expect(res.status).toBe(503);
    expect(doc.error.code).toBe('dependency_unavailable');
    expect(doc.meta.request_id).toBe(res.headers.get('x-request-id'));
    expect(await used(a.accountId)).toBe(0);
  });

  it('serves the stored gzip with the documented headers, billed 10 credits', async () => {
    const results = await runExportSnapshots(t.db, { now: new Date('2026-07-17T00:00:00Z') });
    expect(results!.length).toBe(16); // 2 app ids x 4 sides x 2 formats (json, ndjson)
    const a = await account(100n);
    const { res, bytes, doc } = await download(a.auth);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(res.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(res.headers.get('last-modified')).toBe('Fri, 17 Jul 2026 00:00:00 GMT');
    expect(res.headers.get('x-export-generated-at')).toBe('2026-07-17T00:00:00.000Z');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get('x-billable')).toBe('true');
    expect(res.headers.get('x-credit-cost')).toBe('10');
    expect(res.headers.get('x-credit-remaining')).toBe('90');
    expect(res.headers.get('ratelimit-policy')).toBe('"exportPrices";q=2;w=60');
    expect(Number(res.headers.get('content-length'))).toBe(bytes.length);
    // The spec's fields plus the extension change_seq (issue: live): the sequence the build started at.
    expectKeys(doc, ['app_id', 'side', 'generated_at', 'change_seq', 'items']);
    expect(res.headers.get('x-change-sequence')).toBe(doc.change_seq);
    expect(doc.change_seq).toMatch(/^\d+$/);
    expect(doc).toMatchObject({ app_id: '730', side: 'ask', generated_at: '2026-07-17T00:00:00.000Z' });
    expect(doc.generated_at).toMatch(RFC3339_UTC);
    // Every item with an ask quote, sorted by market hash name (code points: 'A' < 'R' < 'Z' < '★').
    expect(doc.items.map((i: { market_hash_name: string }) => i.market_hash_name)).toEqual(['AK-47 | Redline (Field-Tested)', 'Recoil Case', 'Zeus x27']);
    expect(doc.items[0].markets.map((q: { market_code: string }) => q.market_code)).toEqual(['BUFF163', 'SKINPORT']);
    expect(doc.items.flatMap((i: { markets: { side: string }[] }) => i.markets.map((q) => q.side))).toEqual(['ask', 'ask', 'ask', 'ask']);
    // The delisted quote keeps its last price, quantity 0, as in /prices.
    const prices = await t.get(`/prices?market_hash_name=Zeus%20x27&side=ask`, t.auth());
    expect(doc.items[2].markets).toEqual(prices.body.data.markets);
    expect(await used(a.accountId)).toBe(10);
    const bid = await download((await account(100n)).auth, '?side=bid');
    expect(bid.doc.items.map((i: { market_hash_name: string }) => i.market_hash_name)).toEqual(['Recoil Case', '★ Karambit | Fade']);
    const dota = await download((await account(100n)).auth, '?app_id=570&side=all');
    expect(dota.doc.items).toHaveLength(1);
    expectError(await t.get('/prices/export?app_id=999', (await account(100n)).auth), 404, 'not_found');
  });

  it('gives the same bytes and ETag when a rebuild finds no change, and a new ETag when one quote changes', async () => {
    const before = await currentSnapshot(t.db, '730', 'ask');
    const again = await buildSnapshot(t.db, '730', 'ask', { now: new Date('2026-07-17T00:05:00Z') });
    expect(again.published).toBe(false);
    expect(again.snapshot.etag).toBe(before!.etag);
    const first = await download((await account(100n)).auth);
    expect(first.res.headers.get('etag')).toBe(before!.etag);
    expect(first.res.headers.get('x-export-generated-at')).toBe('2026-07-17T00:00:00.000Z');
    const bytesBefore = first.bytes;
    const second = await download((await account(100n)).auth);
    expect(Buffer.compare(second.bytes, bytesBefore)).toBe(0);

    await ingestQuotes(t.db, [obs('Recoil Case', { price: '2.61', quantity: 17000, observedAt: day('17') })]);
    const changed = await buildSnapshot(t.db, '730', 'ask', { now: new Date('2026-07-17T00:10:00Z') });
    expect(changed.published).toBe(true);
    expect(changed.snapshot.etag).not.toBe(before!.etag);
    const third = await download((await account(100n)).auth);
    expect(third.res.headers.get('etag')).toBe(changed.snapshot.etag);
    expect(third.doc.items[1].markets[0].market_price_amount).toBe('2.61');
  });

  it('writes again only the items whose quote rows changed (even behind the ingestion path), and reused pieces equal fresh ones', async () => {
    const pieces = async () =>
      new Map(
        (await t.db.query<{ market_hash_name: string; hex: string | null }>(
          `SELECT market_hash_name, encode(deflated, 'hex') AS hex FROM export_fragment WHERE app_id = '730' AND side = 'all'`,
        )).map((r) => [r.market_hash_name, r.hex]),
      );
    await buildSnapshot(t.db, '730', 'all', { now: new Date('2026-07-17T00:11:00Z') });
    const before = await pieces();
    expect([...before.keys()].sort()).toEqual(['AK-47 | Redline (Field-Tested)', 'Recoil Case', 'Zeus x27', '★ Karambit | Fade']);
    // A change no ingestion announced: the digest of the rows still sees it.
    await t.db.query(
      `UPDATE source_quote SET quantity = 4242 WHERE market_code = 'SKINPORT' AND item_id = (SELECT id FROM item WHERE app_id = '730' AND market_hash_name = 'AK-47 | Redline (Field-Tested)')`,
    );
    const changed = await buildSnapshot(t.db, '730', 'all', { now: new Date('2026-07-17T00:12:00Z') });
    expect(changed.published).toBe(true);
    const after = await pieces();
    for (const [name, hex] of before) {
      if (name === 'AK-47 | Redline (Field-Tested)') expect(after.get(name)).not.toBe(hex);
      else expect(after.get(name), name).toBe(hex);
    }
    const { doc } = await download((await account(100n)).auth, '?side=all');
    const ak = doc.items.find((i: { market_hash_name: string }) => i.market_hash_name === 'AK-47 | Redline (Field-Tested)');
    expect(ak.markets.find((m: { market_code: string }) => m.market_code === 'SKINPORT').quantity).toBe(4242);
    // Without any stored piece the build writes every item afresh: the same items, so nothing is published.
    await t.db.query(`DELETE FROM export_fragment`);
    const fresh = await buildSnapshot(t.db, '730', 'all', { now: new Date('2026-07-17T00:13:00Z') });
    expect(fresh.published).toBe(false);
    expect(fresh.snapshot.etag).toBe(changed.snapshot.etag);
    expect(await pieces()).toEqual(after);
  });

  it('answers 304 without a body and without a charge when If-None-Match names the snapshot', async () => {
    const etag = (await currentSnapshot(t.db, '730', 'ask'))!.etag;
    expect(ifNoneMatchHits(`W/${etag}`, etag)).toBe(true);
    const forms = [etag, `W/${etag}`, `"other", ${etag}`, '*'];
    for (const value of forms) {
      const a = await account(100n);
      const { res, bytes } = await download({ ...a.auth, 'If-None-Match': value });
      expect(res.status, value).toBe(304);
      expect(bytes.length).toBe(0);
      expect(res.headers.get('etag')).toBe(etag);
      expect(res.headers.get('x-billable')).toBe('false');
      expect(res.headers.get('x-credit-cost')).toBeNull();
      expect(await used(a.accountId)).toBe(0);
    }
    const stale = await account(100n);
    const { res } = await download({ ...stale.auth, 'If-None-Match': '"stale"' });
    expect(res.status).toBe(200);
    expect(await used(stale.accountId)).toBe(10);
  });

  it('limits each account to 2 requests per 60 s (304s count), charges 429s and errors nothing', async () => {
    const a = await account(100n);
    const etag = (await currentSnapshot(t.db, '730', 'ask'))!.etag;
    expect((await download(a.auth)).res.status).toBe(200);
    expect((await download({ ...a.auth, 'If-None-Match': etag })).res.status).toBe(304);
    const third = await download(a.auth);
    expect(third.res.status).toBe(429);
    expect(Number(third.res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await used(a.accountId)).toBe(10);

    const poor = await account(9n);
    const r402 = await t.get('/prices/export', poor.auth);
    expect(expectError(r402, 402, 'credit_insufficient').details).toEqual({ required: 10, remaining: 9 });
    expectError(await t.get('/prices/export?side=both', poor.auth), 422, 'validation_failed');
    expectError(await t.get(`/prices/export?app_id=${'9'.repeat(17)}`, poor.auth), 422, 'validation_failed');
    expectError(await t.get('/prices/export'), 401, 'unauthorized');
    expect(await used(poor.accountId)).toBe(0);

    const sub = await account(0n, true);
    const free = await download(sub.auth);
    expect(free.res.status).toBe(200);
    expect(free.res.headers.get('x-billable')).toBe('false');
    expect(free.res.headers.get('x-credit-cost')).toBeNull();
  });

  it('keeps serving the previous snapshot when a build fails half way, and cleans up after it', async () => {
    const before = await currentSnapshot(t.db, '730', 'all');
    const served = await download((await account(100n)).auth, '?side=all');
    await ingestQuotes(t.db, [obs('Recoil Case', { price: '2.75', observedAt: day('18') })]);
    await expect(
      buildSnapshot(t.db, '730', 'all', {
        pageItems: 1,
        onPage: (page) => {
          if (page === 2) throw new Error('killed');
        },
      }),
    ).rejects.toThrow('killed');
    expect(await currentSnapshot(t.db, '730', 'all')).toEqual(before);
    const after = await download((await account(100n)).auth, '?side=all');
    expect(Buffer.compare(after.bytes, served.bytes)).toBe(0);
    const leftovers = async () => Number((await t.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM export_build WHERE NOT complete`))[0]!.n);
    expect(await leftovers()).toBe(2); // the side's two files (json, ndjson)
    const rebuilt = await buildSnapshot(t.db, '730', 'all');
    expect(rebuilt.published).toBe(true);
    expect(await leftovers()).toBe(0);
  });

  it('exposes the snapshot to GraphQL as priceExport, billed and limited as the export', async () => {
    const a = await account(100n);
    const etag = (await currentSnapshot(t.db, '730', 'ask'))!.etag;
    const q = `query($e: String) { priceExport(side: ask, ifNoneMatch: $e) { etag notModified byteSize itemCount } }`;
    const paid = await t.gql(q, {}, a.auth);
    expect(paid.body.data.priceExport).toMatchObject({ etag, notModified: false });
    expect(paid.body.extensions.billing).toEqual({ billable: true, credit: { cost: 10, remaining: 90 } });
    const free = await t.gql(q, { e: etag }, a.auth);
    expect(free.body.data.priceExport.notModified).toBe(true);
    expect(free.body.extensions.billing).toEqual({ billable: false });
    expect((await download(a.auth)).res.status).toBe(429); // REST and GraphQL share the 2 per 60 s
    expect(await used(a.accountId)).toBe(10);
  });

  it('lets one builder run at a time', async () => {
    const results = await Promise.all([runExportSnapshots(t.db, { sides: ['ask'] }), runExportSnapshots(t.db, { sides: ['ask'] })]);
    expect(results.filter((r) => r === null)).toHaveLength(1);
  });
});

describe('GET /prices/export while the first job is publishing its sides', () => {
  it('a side not built yet answers 503 dependency_unavailable (not 404) while another side is served', async () => {
    const x = await testApp();
    try {
      await ingestQuotes(x.db, [obs('Recoil Case', { price: '2.59' })]);
      // The job publishes one side after another: here only `ask` is out.
      await buildSnapshot(x.db, '730', 'ask', { now: new Date('2026-07-17T00:00:00Z') });
      const a = await createAccount(x.db, { credits: 100n });
      const auth = { 'X-API-Key': a.key };
      const all = await x.app.fetch(new Request('http://test/prices/export?side=all', { headers: auth }));
      expect(all.status).toBe(503);
      expect(((await all.json()) as { error: { code: string } }).error.code).toBe('dependency_unavailable');
      const ask = await x.app.fetch(new Request('http://test/prices/export?side=ask', { headers: auth }));
      expect(ask.status).toBe(200);
      await ask.arrayBuffer();
      // An app with no priced items still answers 404 once its side has been built for another app.
      const unknown = await x.app.fetch(new Request('http://test/prices/export?app_id=999&side=ask', { headers: { 'X-API-Key': (await createAccount(x.db, { credits: 100n })).key } }));
      expect(unknown.status).toBe(404);
      expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('not_found');
    } finally {
      await x.close();
    }
  });
});
