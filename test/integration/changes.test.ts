/**
 * The change sequence and GET /prices/changes as a client sees them (issue: live, points 1 and 2): every applied
 * change of price, quantity or listing (and every valuation publish) is followed in order; re-observing an
 * unchanged quote is not a change; pages, filters, cursors and their errors; an export records the sequence it
 * was built at, and downloading it and then following the feed from there reproduces /prices exactly, including
 * a change that lands while the export is being built. GraphQL `priceChanges` answers the same as REST.
 */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/accounts.js';
import { pruneChanges } from '../../src/quotes/changes.js';
import { buildSnapshots } from '../../src/exports/exports.js';
import { completeMarketScanTx, ingestBatch } from '../../src/quotes/ingestion.js';
import { toMoney } from '../../src/lib/money.js';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope, expectError } from '../helpers/shapes.js';
import { responseMismatch } from '../helpers/openapi.js';

let t: TestApp;
const day = (h: number) => new Date(Date.UTC(2026, 6, 16, h));
const A = 'AK-47 | Changes (Field-Tested)';
const B = 'M4A1-S | Changes (Minimal Wear)';
const C = 'AWP | Changes (Factory New)';

const changes = async (query: string, headers = t.auth()) => t.get(`/prices/changes${query}`, headers);
const page = async (query: string) => expectEnvelope(await changes(query));
const ingest = (list: Parameters<typeof ingestQuotes>[1]) => ingestBatch(t.db, list);

/** A local copy of the served quotes, keyed `name/market/side`, kept by applying pages in order. */
type Copy = Map<string, unknown>;
const key = (name: string, market: string, side: string) => `${name}/${market}/${side}`;
function apply(copy: Copy, list: { market_hash_name: string; market_code: string; side: string; quote: unknown }[]) {
  for (const c of list) {
    if (c.quote === null) copy.delete(key(c.market_hash_name, c.market_code, c.side));
    else copy.set(key(c.market_hash_name, c.market_code, c.side), c.quote);
  }
}
/** Follows the feed from `cursor` to its end with small pages; returns the last cursor and every change seen. */
async function follow(copy: Copy, cursor: string, limit = 2) {
  const seen: string[] = [];
  for (;;) {
    const p = await page(`?since=${cursor}&limit=${limit}`);
    apply(copy, p.changes);
    seen.push(...p.changes.map((c: { seq: string }) => c.seq));
    cursor = p.next_cursor;
    if (!p.has_more) return { cursor, seen };
  }
}
/** What /prices serves now for the items, in the copy's keys. */
async function served(names: string[]): Promise<Copy> {
  const out: Copy = new Map();
  for (const name of names) {
    const res = await t.get(`/prices?market_hash_name=${encodeURIComponent(name)}`, t.auth());
    if (res.status === 404) continue;
    for (const q of expectEnvelope(res).markets) out.set(key(name, q.market_code, q.side), q);
  }
  return out;
}

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [obs(A, { price: '100', observedAt: day(1) }), obs(A, { side: 'bid', price: '95', observedAt: day(1) }), obs(B, { price: '50', observedAt: day(1) })]);
});
afterAll(async () => {
  await t?.close();
});

describe('GET /prices/changes', () => {
  it('without a cursor: an empty page whose next_cursor is the current sequence', async () => {
    const p = await page('');
    expect(p).toEqual({ app_id: '730', since: p.next_cursor, next_cursor: p.next_cursor, has_more: false, changes: [] });
    expect(BigInt(p.next_cursor)).toBeGreaterThanOrEqual(3n); // three new quotes so far
  });

  it('follows price, quantity and delisting changes in order, each with its quote as /prices serves it; an unchanged re-observation is no change', async () => {
    const start = (await page('')).next_cursor;
    await ingest([obs(A, { price: '101', observedAt: day(2) })]); // price
    await ingest([obs(B, { price: '50', quantity: 9, observedAt: day(2) })]); // quantity
    await ingest([obs(A, { side: 'bid', price: '95', observedAt: day(2) })]); // same price and quantity: not a change
    await ingest([obs(B, { price: null, delisted: true, observedAt: day(3) })]); // delisting
    const p = await page(`?since=${start}`);
    expect(p.changes.map((c: any) => [c.market_hash_name, c.market_code, c.side])).toEqual([
      [A, 'BUFF163', 'ask'],
      [B, 'BUFF163', 'ask'],
    ]);
    // Sequence numbers increase; B appears once, at its last change (quantity, then delisting, in one page).
    const seqs = p.changes.map((c: any) => BigInt(c.seq));
    expect(seqs[0] < seqs[1]).toBe(true);
    expect(p.next_cursor).toBe(p.changes[1].seq);
    const now = await served([A, B]);
    for (const c of p.changes) expect(c.quote).toEqual(now.get(key(c.market_hash_name, c.market_code, c.side)));
    expect(p.changes[1].quote).toMatchObject({ quantity: 0, market_price_amount: '50' });
    expect(p.changes[1].quote.delisted_at).not.toBeNull();
    // Nothing after the end.
    expect((await page(`?since=${p.next_cursor}`)).changes).toEqual([]);
  });

  it('pages of at most `limit` with has_more; following every page in order misses and repeats nothing', async () => {
    const start = (await page('')).next_cursor;
    for (let h = 4; h < 9; h++) await ingest([obs(C, { price: String(10 + h), observedAt: day(h) }), obs(A, { price: String(100 + h), observedAt: day(h) })]);
    const copy: Copy = await served([A, B]);
    copy.delete(key(A, 'BUFF163', 'ask'));
    const { seen } = await follow(copy, start, 3);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.map(BigInt)).toEqual([...seen.map(BigInt)].sort((a, b) => (a < b ? -1 : 1)));
    expect(copy).toEqual(await served([A, B, C]));
  });

  it('filters by market and side; the CSCP valuation publish is a change of side mid', async () => {
    const start = (await page('')).next_cursor;
    await ingest([obs(A, { marketCode: 'YOUPIN', providerCode: 'YOUPIN', price: '99', observedAt: day(9) }), obs(A, { side: 'bid', price: '96', observedAt: day(9) })]);
    await t.db.query(
      `INSERT INTO valuation (item_id, valuation_date, mid_amount, ask_amount, bid_amount, uncertainty, is_two_sided, ask_quote_count, bid_quote_count, computed_at)
       SELECT id, '2026-07-17', 98, 100, 96, 0.05, true, 2, 1, now() FROM item WHERE market_hash_name = $1`,
      [A],
    );
    const { recordChanges } = await import('../../src/quotes/changes.js');
    const [{ id }] = (await t.db.query<{ id: number }>(`SELECT id FROM item WHERE market_hash_name = $1`, [A])) as [{ id: number }];
    await recordChanges(t.db, [{ itemId: id, marketCode: 'CSCP', side: 'mid' }]);
    const only = (query: string) => page(`?since=${start}${query}`).then((p) => p.changes.map((c: any) => `${c.market_code}/${c.side}`));
    expect(await only('')).toEqual(['YOUPIN/ask', 'BUFF163/bid', 'CSCP/mid']);
    expect(await only('&markets=YOUPIN,CSCP')).toEqual(['YOUPIN/ask', 'CSCP/mid']);
    expect(await only('&side=bid')).toEqual(['BUFF163/bid']);
    expect(await only('&side=mid')).toEqual(['CSCP/mid']);
    const mid = (await page(`?since=${start}&side=mid`)).changes[0];
    expect(mid.quote).toMatchObject({ market_code: 'CSCP', side: 'mid', market_price_amount: '98' });
    // A filtered page that matched nothing still moves the cursor to the end.
    const none = await page(`?since=${start}&markets=SKINPORT`);
    expect(none.changes).toEqual([]);
    expect(none.next_cursor).toBe((await page('')).next_cursor);
  });

  it('a full scan that delists unseen quotes records those changes', async () => {
    const start = (await page('')).next_cursor;
    await completeMarketScanTx(t.db, { marketCode: 'YOUPIN', providerCode: 'YOUPIN', startedAt: day(10), completedAt: day(11), delistUnseen: true });
    const p = await page(`?since=${start}`);
    expect(p.changes.map((c: any) => [c.market_hash_name, c.market_code, c.side, c.quote.quantity])).toEqual([[A, 'YOUPIN', 'ask', 0]]);
  });

  it('GraphQL priceChanges answers the same page', async () => {
    const since = String(BigInt((await page('')).next_cursor) - 3n);
    const rest = await page(`?since=${since}&limit=2`);
    const g = await t.gql(
      `query($since: String) { priceChanges(since: $since, limit: 2) { appId since nextCursor hasMore changes { seq marketHashName marketCode side quoteJson quote { marketCode side } } } }`,
      { since },
      t.auth(),
    );
    expect(g.body.errors).toBeUndefined();
    const d = g.body.data.priceChanges;
    expect({ app_id: d.appId, since: d.since, next_cursor: d.nextCursor, has_more: d.hasMore }).toEqual({ app_id: rest.app_id, since: rest.since, next_cursor: rest.next_cursor, has_more: rest.has_more });
    expect(d.changes.map((c: any) => ({ seq: c.seq, market_hash_name: c.marketHashName, market_code: c.marketCode, side: c.side, quote: c.quoteJson }))).toEqual(rest.changes);
  });

  it('bad cursors and limits: 422 with details; a cursor older than the kept window: 410 cursor_expired', async () => {
    for (const q of ['?since=abc', '?since=-1', '?since=99999999999999999999', '?limit=0', '?limit=1001', '?limit=x', '?side=both']) {
      const e = expectError(await changes(q), 422, 'validation_failed');
      expect(e.details.errors.length).toBeGreaterThan(0);
    }
    const ahead = String(BigInt((await page('')).next_cursor) + 1n);
    expect(expectError(await changes(`?since=${ahead}`), 422, 'validation_failed').details.errors[0]).toMatchObject({ location: 'query', field: 'since' });
    const old = (await page('')).next_cursor;
    await ingest([obs(C, { price: '77', observedAt: day(12) })]);
    // Everything recorded so far is older than 24 h two days from now.
    expect(await pruneChanges(t.db, new Date(Date.now() + 2 * 86_400_000))).toBeGreaterThan(0);
    const gone = expectError(await changes(`?since=${old}`), 410, 'cursor_expired');
    expect(BigInt(gone.details.oldest_cursor)).toBeGreaterThan(BigInt(old));
    expect(responseMismatch('GET', '/prices/changes', 410, (await changes(`?since=${old}`)).body)).toBeNull();
    // From the horizon on, the feed answers again (empty: the changes were pruned).
    expect((await page(`?since=${gone.details.oldest_cursor}`)).changes).toEqual([]);
  });

  it('needs an API key and spends a credit per page; an account without credits gets 402', async () => {
    expectError(await changes('', {}), 401, 'unauthorized');
    const poor = await createAccount(t.db, { credits: 0n });
    expectError(await changes('', { 'X-API-Key': poor.key }), 402, 'credit_insufficient');
    const rich = await createAccount(t.db, { credits: 5n });
    const res = await changes('', { 'X-API-Key': rich.key });
    expect(res.status).toBe(200);
    const [{ used }] = (await t.db.query<{ used: string }>(`SELECT credits_used::text AS used FROM account WHERE id = $1`, [rich.accountId])) as [{ used: string }];
    expect(used).toBe('1');
  });
});

describe('the export records its change sequence', () => {
  it('download the export, then follow the feed from its change_seq: equal to /prices, a change made during the build exactly once', async () => {
    const names = [A, B, C];
    let midBuild = false;
    let landing: Promise<unknown> = Promise.resolve();
    const before = (await served([A])).get(key(A, 'BUFF163', 'ask')) as { market_price_amount: string };
    const [built] = await buildSnapshots(t.db, '730', ['all'], {
      pageItems: 1,
      onPage: (n) => {
        // After the first page (A) is written: change A (already written) and C (not yet read). PostgreSQL: the build
        // reads one snapshot, so the file has neither change. PGlite: each page is read by statements of its own
        // (the build must not hold the one connection), so C may be in the file at its new price, and the feed from
        // change_seq delivers it again: the copy is the same either way.
        if (n === 1 && !midBuild) {
          midBuild = true;
          landing = ingest([obs(A, { price: '555', observedAt: day(13) }), obs(C, { price: '66', observedAt: day(13) })]);
        }
      },
    });
    await landing;
    expect(midBuild).toBe(true);
    const res = await t.app.fetch(new Request('http://test/prices/export?side=all', { headers: t.auth() }));
    expect(res.status).toBe(200);
    const doc = JSON.parse(zlib.gunzipSync(Buffer.from(await res.arrayBuffer())).toString('utf8'));
    expect(doc.change_seq).toBe(built!.snapshot.changeSeq);
    expect(res.headers.get('x-change-sequence')).toBe(doc.change_seq);
    expect(Object.keys(doc)).toEqual(['app_id', 'side', 'generated_at', 'change_seq', 'items']);
    // The copy: the export's quotes, then the feed from its change_seq.
    const copy: Copy = new Map();
    for (const item of doc.items) for (const q of item.markets) copy.set(key(item.market_hash_name, q.market_code, q.side), q);
    // After the export: more changes.
    await ingest([obs(B, { price: '52', observedAt: day(14) }), obs(C, { side: 'bid', price: '60', observedAt: day(14) })]);
    // The file is the state at its change_seq: A as before the change, not the change made during the build.
    expect(copy.get(key(A, 'BUFF163', 'ask'))).toEqual(before);
    const { seen } = await follow(copy, doc.change_seq);
    expect(copy).toEqual(await served(names));
    expect(new Set(seen).size).toBe(seen.length); // no change twice
    expect((copy.get(key(A, 'BUFF163', 'ask')) as { market_price_amount: string }).market_price_amount).toBe(toMoney('555').toFixed());
  });
});
