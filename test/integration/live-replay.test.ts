/**
 * Live streams far behind (issue 41, points 3, 4 and 14): a stream started with a `since` behind the live
 * position replays its backlog in bounded pages as its client reads, so however far behind it starts (down to
 * the pruned horizon) it gets every change in order: more than its queue bound (LIVE_MAX_PENDING), more than one
 * page (1,000), more than one bounded read of the sequence (5,000), on the REST stream, GraphQL over SSE and
 * graphql-ws. A cursor below the horizon is refused with 410 `cursor_expired` (and the way to re-sync) before
 * anything is charged or any rate-limit point spent; a subscription refused with `too_many_subscriptions`
 * spends no rate-limit point either.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createAccount } from '../../src/accounts/accounts.js';
import { currentSequence, pruneChanges } from '../../src/quotes/changes.js';
import { ingestBatch } from '../../src/quotes/ingestion.js';
import { obs, testApp, type TestApp } from '../helpers/app.js';
import { listen, openStream, wsClient, type EventStream } from '../helpers/live.js';

const QUEUE = 20;
let t: TestApp; // LIVE_MAX_PENDING 20, 3 subscriptions per account
let server: Awaited<ReturnType<typeof listen>>;
let big: TestApp; // the defaults (LIVE_MAX_PENDING 10,000)
let bigServer: Awaited<ReturnType<typeof listen>>;

/**
 * Seeds `n` changes (one per new item `<prefix><n>`, BUFF163 ask), written straight into the sequence (SQL, for
 * speed); returns the cursor before them, their seqs in order and the names.
 */
async function seed(app: TestApp, prefix: string, n: number): Promise<{ since: string; seqs: string[]; names: string[] }> {
  const since = (await currentSequence(app.db)).toString();
  await app.db.query(`INSERT INTO item (app_id, market_hash_name) SELECT '730', $1 || lpad(g::text, 6, '0') FROM generate_series(1, $2::int) g`, [prefix, n]);
  const rows = await app.db.query<{ seq: string; name: string }>(
    `INSERT INTO quote_change (item_id, market_code, side)
     SELECT i.id, 'BUFF163', 'ask' FROM item i WHERE i.market_hash_name LIKE $1 || '%' ORDER BY i.market_hash_name
     RETURNING seq::text AS seq, (SELECT market_hash_name FROM item WHERE id = item_id) AS name`,
    [prefix],
  );
  rows.sort((x, y) => (BigInt(x.seq) < BigInt(y.seq) ? -1 : 1));
  return { since, seqs: rows.map((r) => r.seq), names: rows.map((r) => r.name) };
}
const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const changeEvents = (s: EventStream) => s.events.filter((e) => e.event === 'change');
const nexts = (s: EventStream) => s.events.filter((e) => e.event === 'next').map((e) => JSON.parse(e.data) as { data: { quoteChanged: { seq: string } } | null; errors?: unknown[] });
/** Remaining points of the RateLimit header (`...;r=<n>;...`). */
const remaining = (h: Headers) => Number(/;r=(\d+)/.exec(h.get('ratelimit') ?? '')?.[1]);
const used = async (app: TestApp, accountId: string) => (await app.db.query<{ used: string }>(`SELECT credits_used::text AS used FROM account WHERE id = $1`, [accountId]))[0]!.used;

beforeAll(async () => {
  const logger = pino({ level: 'error' });
  t = await testApp({ live: { maxConcurrent: 3, maxQueue: QUEUE, pollMs: 200 }, logger });
  server = await listen(t.app);
  big = await testApp({ live: { pollMs: 200 }, logger });
  bigServer = await listen(big.app);
});
afterAll(async () => {
  await bigServer?.close();
  await big?.close();
  await server?.close();
  await t?.close();
});

describe('a backlog larger than the queue bound (LIVE_MAX_PENDING 20, 50 changes behind)', () => {
  it('REST stream: all 50 in order as the client reads, then live changes, never slow_consumer', async () => {
    const { since, seqs } = await seed(t, 'Replay rest ', 50);
    const s = await openStream(`${server.url}/prices/changes/stream?since=${since}`, { headers: auth(t.key) });
    expect(s.status).toBe(200);
    await s.waitFor(50, 30_000);
    await ingestBatch(t.db, [obs('Replay rest live', { price: '3' })]);
    await s.waitFor(51, 30_000);
    expect(s.events.map((e) => e.event)).toEqual(Array(51).fill('change'));
    expect(changeEvents(s).slice(0, 50).map((e) => e.id)).toEqual(seqs);
    expect(JSON.parse(s.events[50]!.data)).toMatchObject({ market_hash_name: 'Replay rest live', quote: { market_price_amount: '3' } });
    s.abort();
  });

  it('GraphQL over SSE and graphql-ws: all 50 in order, no error', async () => {
    const { since, seqs } = await seed(t, 'Replay gql ', 50);
    const query = 'subscription($since: String) { quoteChanged(since: $since) { seq marketHashName } }';
    const sse = await openStream(`${server.url}/graphql`, { headers: auth(t.key), body: { query, variables: { since } } });
    const ws = wsClient(server.ws, t.key);
    const wsSeqs: string[] = [];
    const wsErrors: unknown[] = [];
    const unsubscribe = ws.subscribe({ query, variables: { since } }, { next: (v) => (v.errors ? wsErrors.push(v.errors) : wsSeqs.push((v.data as { quoteChanged: { seq: string } }).quoteChanged.seq)), error: (e) => wsErrors.push(e), complete: () => undefined });
    await sse.waitFor(50, 30_000);
    await expect.poll(() => wsSeqs.length, { timeout: 30_000 }).toBe(50);
    expect(nexts(sse).map((n) => n.errors)).toEqual(Array(50).fill(undefined));
    expect(nexts(sse).map((n) => n.data!.quoteChanged.seq)).toEqual(seqs);
    expect(wsSeqs).toEqual(seqs);
    expect(wsErrors).toEqual([]);
    sse.abort();
    unsubscribe();
    await ws.dispose();
  });
});

describe('more than a page, a bounded read and the default queue bound (12,000 changes behind)', () => {
  it('REST stream: every change in order; a names filter gets exactly its items', async () => {
    const { since, seqs, names } = await seed(big, 'Replay big ', 12_000);
    const all = await openStream(`${bigServer.url}/prices/changes/stream?since=${since}`, { headers: auth(big.key) });
    const picked = [names[2]!, names[6_999]!, names[11_999]!];
    const some = await openStream(`${bigServer.url}/prices/changes/stream?since=${since}&${picked.map((n) => `market_hash_name=${encodeURIComponent(n)}`).join('&')}`, {
      headers: auth(big.key),
    });
    await all.waitFor(12_000, 120_000);
    await some.waitFor(3, 120_000);
    expect(all.events.every((e) => e.event === 'change')).toBe(true);
    expect(all.events.map((e) => e.id)).toEqual(seqs);
    expect(some.events.map((e) => [e.id, JSON.parse(e.data).market_hash_name])).toEqual([2, 6_999, 11_999].map((i) => [seqs[i], names[i]]));
    all.abort();
    some.abort();
  });
});

describe('refusals spend no rate-limit point', () => {
  it('too_many_subscriptions (3 open) answers 429 without lowering the remaining points', async () => {
    const acct = await createAccount(t.db, { credits: 100n });
    const open: EventStream[] = [];
    for (let i = 0; i < 3; i++) open.push(await openStream(`${server.url}/prices/changes/stream`, { headers: auth(acct.key) }));
    expect(open.map((s) => remaining(s.headers))).toEqual([9, 8, 7]);
    for (let i = 0; i < 3; i++) {
      const refused = await fetch(`${server.url}/prices/changes/stream`, { headers: auth(acct.key) });
      expect(refused.status).toBe(429);
      expect((await refused.json()).error.code).toBe('too_many_subscriptions');
    }
    const head = await fetch(`${server.url}/prices/changes/stream`, { method: 'HEAD', headers: auth(acct.key) });
    expect(remaining(head.headers)).toBe(6);
    for (const s of open) s.abort();
  });

  it('a cursor below the pruned horizon: 410 cursor_expired naming the way to re-sync, before any charge or rate-limit point (REST and GraphQL)', async () => {
    const acct = await createAccount(t.db, { credits: 100n });
    const old = (await currentSequence(t.db)).toString();
    await ingestBatch(t.db, [obs('Replay pruned', { price: '4' })]);
    expect(await pruneChanges(t.db, new Date(Date.now() + 2 * 86_400_000))).toBeGreaterThan(0);
    const res = await fetch(`${server.url}/prices/changes/stream?since=${old}`, { headers: auth(acct.key) });
    expect(res.status).toBe(410);
    const body = await res.json();
    expect(body.error.code).toBe('cursor_expired');
    expect(BigInt(body.error.details.oldest_cursor)).toBeGreaterThan(BigInt(old));
    expect(body.error.message).toContain('change_seq');
    const gql = await openStream(`${server.url}/graphql`, { headers: auth(acct.key), body: { query: 'subscription($s: String) { quoteChanged(since: $s) { seq } }', variables: { s: old } } });
    await gql.ended;
    expect((nexts(gql)[0]!.errors as { extensions: { code: string } }[])[0]!.extensions.code).toBe('cursor_expired');
    expect(await used(t, acct.accountId)).toBe('0');
    const head = await fetch(`${server.url}/prices/changes/stream`, { method: 'HEAD', headers: auth(acct.key) });
    expect(remaining(head.headers)).toBe(9);
  });
});
