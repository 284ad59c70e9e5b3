/**
 * Live subscriptions as clients use them (issue: live, point 3): GraphQL `quoteChanged` over SSE (Node's fetch) and
 * WebSocket (graphql-ws), with the API key; changes arrive in sequence order with the quote as served, a `since`
 * start replays what was missed without a gap or a repeat, the per-account cap answers 429 and frees its slot
 * when a subscription ends, a slow consumer is closed with `slow_consumer`, and a subscription is charged per
 * started minute (402 without credits, nothing started).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/accounts.js';
import { ingestBatch } from '../../src/quotes/ingestion.js';
import { currentSequence } from '../../src/quotes/changes.js';
import { obs, testApp, type TestApp } from '../helpers/app.js';
import { listen, openStream, wsClient, type EventStream } from '../helpers/live.js';
import { ChangeOut } from '../../src/shapes/changes.js';

let t: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
const A = 'AK-47 | Live (Field-Tested)';
const B = 'M4A1-S | Live (Minimal Wear)';
const at = (m: number) => new Date(Date.UTC(2026, 6, 16, 1, m));

const QUOTE_CHANGED = `subscription Q($names: [String!], $markets: [String!], $since: String) {
  quoteChanged(marketHashNames: $names, markets: $markets, since: $since) { seq marketHashName marketCode side quoteJson }
}`;

/** Opens quoteChanged over SSE with `key`. */
const subscribe = (variables: Record<string, unknown>, key = t.key) =>
  openStream(`${server.url}/graphql`, { headers: { Authorization: `Bearer ${key}` }, body: { query: QUOTE_CHANGED, variables } });
/** The `next` payloads of a stream. */
const nexts = (s: EventStream) => s.events.filter((e) => e.event === 'next').map((e) => JSON.parse(e.data) as { data: { quoteChanged: any } | null; errors?: any[] });

beforeAll(async () => {
  t = await testApp({ live: { maxConcurrent: 3, maxQueue: 5, pollMs: 200 }, logger: (await import('pino')).default({ level: 'error' }) });
  server = await listen(t.app);
  await ingestBatch(t.db, [obs(A, { price: '100', observedAt: at(0) }), obs(B, { price: '50', observedAt: at(0) })]);
});
afterAll(async () => {
  await server?.close();
  await t?.close();
});

describe('quoteChanged over SSE', () => {
  it('delivers each change of the followed items in sequence order, with the quote as GET /prices serves it', async () => {
    const s = await subscribe({ names: [A] });
    expect(s.status).toBe(200);
    expect(s.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await new Promise((r) => setTimeout(r, 100));
    await ingestBatch(t.db, [obs(A, { price: '101', observedAt: at(1) }), obs(B, { price: '51', observedAt: at(1) })]);
    await s.waitFor(1);
    await ingestBatch(t.db, [obs(A, { price: '102.5', observedAt: at(2) })]);
    await s.waitFor(2);
    const got = nexts(s).map((n) => n.data!.quoteChanged);
    expect(got.map((c) => [c.marketHashName, c.marketCode, c.side, c.quoteJson.market_price_amount])).toEqual([
      [A, 'BUFF163', 'ask', '101'],
      [A, 'BUFF163', 'ask', '102.5'],
    ]);
    expect(BigInt(got[1].seq)).toBeGreaterThan(BigInt(got[0].seq));
    const served = (await t.get(`/prices?market_hash_name=${encodeURIComponent(A)}`, t.auth())).body.data.markets.find((q: any) => q.market_code === 'BUFF163');
    expect(got[1].quoteJson).toEqual(served);
    s.abort();
  });

  it('with since, replays the changes after the cursor first, then live ones: none missed, none twice', async () => {
    const cursor = (await currentSequence(t.db)).toString();
    await ingestBatch(t.db, [obs(A, { price: '103', observedAt: at(3) })]);
    await ingestBatch(t.db, [obs(B, { price: '52', observedAt: at(3) })]);
    const s = await subscribe({ since: cursor });
    await s.waitFor(2);
    await ingestBatch(t.db, [obs(A, { price: '104', observedAt: at(4) })]);
    await s.waitFor(3);
    const got = nexts(s).map((n) => n.data!.quoteChanged);
    expect(got.map((c) => [c.marketHashName, c.quoteJson.market_price_amount])).toEqual([
      [A, '103'],
      [B, '52'],
      [A, '104'],
    ]);
    const seqs = got.map((c) => BigInt(c.seq));
    expect([...seqs].sort((x, y) => (x < y ? -1 : 1))).toEqual(seqs);
    expect(seqs[0]).toBeGreaterThan(BigInt(cursor));
    s.abort();
  });

  it('refuses a cursor beyond the sequence (validation) and a missing key (401) before anything streams', async () => {
    const future = await subscribe({ since: '999999999' });
    await future.ended;
    expect(nexts(future)[0]!.errors![0].extensions.code).toBe('validation_failed');
    const anonymous = await openStream(`${server.url}/graphql`, { body: { query: QUOTE_CHANGED, variables: {} } });
    await anonymous.ended;
    expect(nexts(anonymous)[0]!.errors![0].extensions.code).toBe('unauthorized');
  });

  it('answers a subscription asked for as JSON with 406, naming the event stream it needs', async () => {
    const acct = await createAccount(t.db, { credits: 10n });
    const res = await t.gql('subscription { valuationPublished { valuationDate } }', {}, { Authorization: `Bearer ${acct.key}`, Accept: 'application/json' });
    expect(res.status).toBe(406);
    expect(res.body.errors[0].extensions.code).toBe('not_acceptable');
    expect(res.body.errors[0].message).toContain('text/event-stream');
    // Nothing was left running or charged.
    await new Promise((r) => setTimeout(r, 200));
    expect((await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM live_slot WHERE account_id = $1`, [acct.accountId]))[0]!.n).toBe(0);
    expect((await t.db.query<{ used: string }>(`SELECT credits_used::text AS used FROM account WHERE id = $1`, [acct.accountId]))[0]!.used).toBe('0');
  });

  it('closes a subscriber that falls more than LIVE_MAX_PENDING changes behind with slow_consumer', async () => {
    const s = await subscribe({});
    await new Promise((r) => setTimeout(r, 100));
    const many = Array.from({ length: 8 }, (_, i) => obs(`Slow item ${i}`, { price: '1', observedAt: at(5) }));
    await ingestBatch(t.db, many);
    await s.ended;
    const last = nexts(s).at(-1)!;
    expect(last.errors![0].extensions.code).toBe('slow_consumer');
    expect(s.events.at(-1)!.event).toBe('complete');
  });

  it("shares an event's result between subscriptions only when their selections ask the same (another currency: its own answer)", async () => {
    // The root field's arguments (names) differ everywhere; the selection variable ($currency) decides what is shared.
    const doc = `subscription C($names: [String!], $currency: String!) {
      quoteChanged(marketHashNames: $names) { marketHashName quoteJson quote { converted(currency: $currency) { currencyCode amount } } }
    }`;
    const other = await createAccount(t.db, { credits: 1000n });
    const open = (variables: Record<string, unknown>, key: string) =>
      openStream(`${server.url}/graphql`, { headers: { Authorization: `Bearer ${key}` }, body: { query: doc, variables } });
    const D = 'USP-S | Live (Field-Tested)'; // its own item: the other tests' changes of A and B stay theirs
    await ingestBatch(t.db, [obs(D, { price: '20', observedAt: at(0) })]);
    const usd = await open({ names: [D], currency: 'USD' }, t.key);
    const eur = await open({ names: [D, B], currency: 'EUR' }, other.key);
    const usd2 = await open({ names: [B, D], currency: 'USD' }, other.key);
    await new Promise((r) => setTimeout(r, 100));
    await ingestBatch(t.db, [obs(D, { price: '21.5', observedAt: at(1) })]);
    await Promise.all([usd.waitFor(1), eur.waitFor(1), usd2.waitFor(1)]);
    const first = (s: EventStream) => nexts(s)[0]!.data!.quoteChanged;
    expect(first(usd).quote.converted.currencyCode).toBe('USD');
    expect(first(eur).quote.converted.currencyCode).toBe('EUR');
    expect(first(eur).quote.converted.amount).not.toBe(first(usd).quote.converted.amount);
    expect(first(usd2)).toEqual(first(usd));
    expect(first(eur).quoteJson).toEqual(first(usd).quoteJson);
    for (const s of [usd, eur, usd2]) s.abort();
  });

  it('answers each of ten different selections of one event with its own result, shared by later subscriptions that ask the same (past eight, an event keeps its executions in a map)', async () => {
    const E = 'Desert Eagle | Live (Factory New)'; // its own item
    await ingestBatch(t.db, [obs(E, { price: '7', observedAt: at(0) })]);
    // Accounts of its own (three subscriptions each): the other tests' account keeps its slots.
    const keys = (await Promise.all([0, 1, 2, 3].map(() => createAccount(t.db, { credits: 1000n })))).map((a) => a.key);
    const selection = (i: number) => `subscription S${i}($names: [String!]) { quoteChanged(marketHashNames: $names) { k${i}: marketHashName quoteJson } }`;
    // Opened one after another: the hub hands an event over in this order, so the last two (the same selections as
    // the first two) look up their executions after the event has moved them to its map.
    const docs = [...Array.from({ length: 10 }, (_, i) => i), 0, 1];
    const streams: EventStream[] = [];
    for (const [n, i] of docs.entries()) {
      streams.push(await openStream(`${server.url}/graphql`, { headers: { Authorization: `Bearer ${keys[Math.floor(n / 3)]}` }, body: { query: selection(i), variables: { names: [E] } } }));
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 100));
    await ingestBatch(t.db, [obs(E, { price: '7.25', observedAt: at(1) })]);
    await Promise.all(streams.map((s) => s.waitFor(1)));
    await new Promise((r) => setTimeout(r, 300)); // nothing more arrives
    for (const [n, s] of streams.entries()) {
      const i = docs[n]!;
      const got = nexts(s);
      expect(got).toHaveLength(1);
      expect(Object.keys(got[0]!.data!.quoteChanged)).toEqual([`k${i}`, 'quoteJson']);
      expect(got[0]!.data!.quoteChanged[`k${i}`]).toBe(E);
      expect(got[0]!.data!.quoteChanged.quoteJson.market_price_amount).toBe('7.25');
    }
    for (const s of streams) s.abort();
  });

  it('delivers without errors when the filter variables are required (the shared execution, which leaves them out, fails: each runs its own)', async () => {
    const doc = `subscription R($names: [String!]!, $markets: [String!]!) {
      quoteChanged(marketHashNames: $names, markets: $markets) { marketHashName marketCode quoteJson }
    }`;
    const other = await createAccount(t.db, { credits: 1000n });
    const E = 'Glock-18 | Live (Factory New)';
    await ingestBatch(t.db, [obs(E, { price: '7', observedAt: at(0) })]);
    const open = (key: string) => openStream(`${server.url}/graphql`, { headers: { Authorization: `Bearer ${key}` }, body: { query: doc, variables: { names: [E], markets: ['BUFF163'] } } });
    const [one, two] = [await open(t.key), await open(other.key)];
    await new Promise((r) => setTimeout(r, 100));
    await ingestBatch(t.db, [obs(E, { price: '7.25', observedAt: at(1) })]);
    await Promise.all([one.waitFor(1), two.waitFor(1)]);
    for (const s of [one, two]) {
      const [n] = nexts(s);
      expect(n!.errors).toBeUndefined();
      expect(n!.data!.quoteChanged).toMatchObject({ marketHashName: E, marketCode: 'BUFF163' });
      expect(n!.data!.quoteChanged.quoteJson.market_price_amount).toBe('7.25');
      s.abort();
    }
  });
});

describe('the per-account cap and billing', () => {
  it('answers too_many_subscriptions beyond the cap (all transports together) and frees a slot when one ends', async () => {
    const acct = await createAccount(t.db, { credits: 100n });
    const open = [await subscribe({ names: [A] }, acct.key), await subscribe({ names: [A] }, acct.key)];
    const ws = wsClient(server.ws, acct.key);
    const wsEvents: unknown[] = [];
    const wsDone = new Promise<void>((resolve) => ws.subscribe({ query: QUOTE_CHANGED, variables: { names: [A] } }, { next: (v) => void wsEvents.push(v), error: () => resolve(), complete: () => resolve() }));
    await expect.poll(async () => (await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM live_slot WHERE account_id = $1`, [acct.accountId]))[0]!.n).toBe(3);
    const refused = await subscribe({ names: [A] }, acct.key);
    await refused.ended;
    expect(nexts(refused)[0]!.errors![0].extensions.code).toBe('too_many_subscriptions');
    open[0]!.abort();
    await expect.poll(async () => (await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM live_slot WHERE account_id = $1`, [acct.accountId]))[0]!.n).toBe(2);
    const again = await subscribe({ names: [A] }, acct.key);
    await ingestBatch(t.db, [obs(A, { price: '105', observedAt: at(6) })]);
    await again.waitFor(1);
    expect(nexts(again)[0]!.data!.quoteChanged.quoteJson.market_price_amount).toBe('105');
    await expect.poll(() => wsEvents.length).toBe(1);
    expect((wsEvents[0] as any).data.quoteChanged.quoteJson.market_price_amount).toBe('105');
    again.abort();
    open[1]!.abort();
    await ws.dispose();
    await wsDone;
  });

  it('charges one credit per started minute (the first up front) and refuses an account without credits (402)', async () => {
    const rich = await createAccount(t.db, { credits: 10n });
    const s = await subscribe({ names: [A] }, rich.key);
    await expect.poll(async () => (await t.get('/me', { Authorization: `Bearer ${rich.key}` })).body?.data?.credit?.used ?? null).toBe(1);
    s.abort();
    const poor = await createAccount(t.db, { credits: 0n });
    const refused = await subscribe({ names: [A] }, poor.key);
    await refused.ended;
    expect(nexts(refused)[0]!.errors![0].extensions.code).toBe('credit_insufficient');
    expect((await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM live_slot WHERE account_id = $1`, [poor.accountId]))[0]!.n).toBe(0);
  });
});

describe('GET /prices/changes/stream (the REST face of quoteChanged)', () => {
  const stream = (query: string, headers: Record<string, string> = t.auth()) => openStream(`${server.url}/prices/changes/stream${query}`, { headers });

  it('streams change events (id = seq, data = ChangeOut) and resumes after Last-Event-ID without a gap or a repeat', async () => {
    const s = await stream(`?market_hash_name=${encodeURIComponent(A)}&market_hash_name=${encodeURIComponent(B)}`);
    expect(s.status).toBe(200);
    expect(s.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(s.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    await new Promise((r) => setTimeout(r, 100));
    await ingestBatch(t.db, [obs(A, { price: '110', observedAt: at(10) })]);
    const [first] = await s.waitFor(1);
    expect(first!.event).toBe('change');
    const change = ChangeOut.parse(JSON.parse(first!.data));
    expect(first!.id).toBe(change.seq);
    expect([change.market_hash_name, change.market_code, change.side, change.quote?.market_price_amount]).toEqual([A, 'BUFF163', 'ask', '110']);
    // The same change as the feed's page gives it (one shape, ChangeOut).
    const page = await t.get(`/prices/changes?since=${BigInt(change.seq) - 1n}&limit=1`, t.auth());
    expect(page.body.data.changes[0]).toEqual(JSON.parse(first!.data));
    s.abort();
    // Changes while the client was away, then it reconnects as an EventSource would.
    await ingestBatch(t.db, [obs(B, { price: '60', observedAt: at(11) })]);
    await ingestBatch(t.db, [obs(A, { price: '111', observedAt: at(11) })]);
    const back = await stream(`?market_hash_name=${encodeURIComponent(A)}&market_hash_name=${encodeURIComponent(B)}`, { ...t.auth(), 'Last-Event-ID': first!.id! });
    const events = await back.waitFor(2);
    expect(events.map((e) => JSON.parse(e.data).quote.market_price_amount)).toEqual(['60', '111']);
    expect(BigInt(events[0]!.id!)).toBeGreaterThan(BigInt(first!.id!));
    back.abort();
  });

  it('refuses before streaming, in the error envelope with its status: 401, 422 with details, 402 without credits', async () => {
    const anonymous = await fetch(`${server.url}/prices/changes/stream`);
    expect(anonymous.status).toBe(401);
    expect((await anonymous.json()).error.code).toBe('unauthorized');
    const bad = await fetch(`${server.url}/prices/changes/stream?since=x&side=sideways`, { headers: t.auth() });
    expect(bad.status).toBe(422);
    expect((await bad.json()).error.details.errors.map((e: { field: string }) => e.field).sort()).toEqual(['side', 'since']);
    const poor = await createAccount(t.db, { credits: 0n });
    const refused = await fetch(`${server.url}/prices/changes/stream`, { headers: { Authorization: `Bearer ${poor.key}` } });
    expect(refused.status).toBe(402);
    expect((await refused.json()).error.code).toBe('credit_insufficient');
  });

  it('answers HEAD with the stream headers, without starting or charging anything', async () => {
    const acct = await createAccount(t.db, { credits: 5n });
    const res = await fetch(`${server.url}/prices/changes/stream`, { method: 'HEAD', headers: { Authorization: `Bearer ${acct.key}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('ratelimit-policy')).toContain('subscribePriceChanges');
    expect((await t.db.query<{ used: string }>(`SELECT credits_used::text AS used FROM account WHERE id = $1`, [acct.accountId]))[0]!.used).toBe('0');
  });
});
