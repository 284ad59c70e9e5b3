/**
 * Stored quote answers (issue 45; quotes/quotes.ts STORED_ANSWERS_SQL): a quote cache miss reads an item's answer
 * text stored by an earlier miss of any replica instead of making it again, and never serves one that a later write
 * made stale: a change of a quote (change sequence), a confirmation or a scan moving observed_at or fresh_at (the
 * epoch), a pruned change sequence (the horizon). What GET /prices answers is checked against `loadQuoteTexts`,
 * which always makes the text from the quotes. On PGlite (the service's default: QuoteCacheOptions.storedAnswers); on
 * PostgreSQL with TEST_DATABASE_URL.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEnvelope } from '../helpers/shapes.js';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { completeMarketScanTx, ingestBatch } from '../../src/quotes/ingestion.js';
import { loadQuoteTexts, loadStoredQuoteTexts } from '../../src/quotes/quotes.js';
import { QuoteCache } from '../../src/quotes/quote-cache.js';

let t: TestApp;
const A = 'Stored answer item A';
const B = 'Stored answer item B';
const at = (h: number) => new Date(Date.UTC(2026, 6, 16, h));

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [
    obs(A, { price: '10.5', observedAt: at(1) }),
    obs(A, { price: '9.5', side: 'bid', observedAt: at(1) }),
    obs(B, { price: '20.5', observedAt: at(1) }),
  ]);
});
afterAll(async () => {
  await t.close();
});

/** The stored row of `name`: its epoch, seq and head text. */
async function storedRow(name: string): Promise<{ epoch: string; seq: string; head: string | null } | undefined> {
  const [row] = await t.db.query<{ epoch: string; seq: string; head: string | null }>(
    `SELECT a.epoch::text AS epoch, a.seq::text AS seq, a.head FROM quote_answer a JOIN item i ON i.id = a.item_id WHERE i.app_id = '730' AND i.market_hash_name = $1`,
    [name],
  );
  return row;
}

/** GET /prices' `markets` of `name` through a new replica's quote cache (nothing held in memory), as JSON text. */
async function freshReplicaText(name: string): Promise<string | undefined> {
  const cache = new QuoteCache(t.db, { storedAnswers: true });
  await cache.settled();
  try {
    return (await cache.loadTexts('730', [name])).get(name)?.toString();
  } finally {
    cache.close();
  }
}

/** What the quotes make now, without any stored answer. */
async function madeText(name: string): Promise<string | undefined> {
  return (await loadQuoteTexts(t.db, '730', [name])).get(name);
}

describe('stored quote answers', () => {
  it('a miss stores the answer; the next miss of another replica reads it back, byte for byte what the quotes make', async () => {
    expect(await storedRow(A)).toBeUndefined();
    const first = await freshReplicaText(A);
    expect(first).toBe(await madeText(A));
    const row = await storedRow(A);
    expect(row?.head).toContain('"market_price_amount":"10.5"');
    // Proof that the second replica reads the stored row (not the quotes): mark it, and the mark is served.
    await t.db.query(`UPDATE quote_answer SET head = replace(head, '"quantity":5', '"quantity":55') WHERE item_id = (SELECT id FROM item WHERE market_hash_name = $1)`, [A]);
    expect(await freshReplicaText(A)).toContain('"quantity":55');
    // Undo the mark for the tests below (they check what the quotes make).
    await t.db.query(`UPDATE quote_answer SET head = replace(head, '"quantity":55', '"quantity":5') WHERE item_id = (SELECT id FROM item WHERE market_hash_name = $1)`, [A]);
  });

  it("a change of the item's quote makes its stored answer stale; another item's change does not", async () => {
    await freshReplicaText(A);
    await freshReplicaText(B);
    const storedB = await storedRow(B);
    await ingestBatch(t.db, [obs(A, { price: '11.5', observedAt: at(2) })]);
    const text = await freshReplicaText(A);
    expect(text).toContain('"market_price_amount":"11.5"');
    expect(text).toBe(await madeText(A));
    expect((await storedRow(A))?.head).toContain('"market_price_amount":"11.5"');
    // B was not changed: its answer is still the stored one, with the same seq.
    await freshReplicaText(B);
    expect((await storedRow(B))?.seq).toBe(storedB?.seq);
  });

  it('a confirmation (observed_at moves, no change row) makes every stored answer stale through the epoch', async () => {
    await freshReplicaText(A);
    await freshReplicaText(B);
    const before = await storedRow(B);
    await ingestBatch(t.db, [obs(B, { price: '20.5', observedAt: at(3) })]);
    expect(Number((await storedRow(B))?.epoch)).toBe(Number(before?.epoch)); // not rewritten until asked
    const text = await freshReplicaText(B);
    expect(text).toContain(`"observed_at":"${at(3).toISOString()}"`);
    expect(text).toBe(await madeText(B));
    expect(Number((await storedRow(B))?.epoch)).toBeGreaterThan(Number(before?.epoch));
    // A's stored answer went stale too (same epoch) and is made again with its quotes as they are.
    expect(await freshReplicaText(A)).toBe(await madeText(A));
  });

  it('a scan completion moving fresh_at is served at once, through GET /prices too', async () => {
    await freshReplicaText(A);
    await completeMarketScanTx(t.db, { marketCode: 'BUFF163', providerCode: 'BUFF163', startedAt: at(4), completedAt: at(4), delistUnseen: false });
    expect(await freshReplicaText(A)).toContain(`"fresh_at":"${at(4).toISOString()}"`);
    // The service's own cache (stored answers by default: QuoteCacheOptions.storedAnswers).
    const data = expectEnvelope(await t.get(`/prices?market_hash_name=${encodeURIComponent(A)}`, t.auth()));
    const ask = data.markets.find((m: { market_code: string; side: string }) => m.market_code === 'BUFF163' && m.side === 'ask');
    expect(ask.fresh_at).toBe(at(4).toISOString());
    expect(JSON.stringify(data.markets)).toBe(await madeText(A));
  });

  it('an answer stored before the pruned horizon of the change sequence is made again', async () => {
    await freshReplicaText(A);
    const row = await storedRow(A);
    const [h] = await t.db.query<{ pruned: string }>(`SELECT COALESCE(max(pruned_through), 0)::text AS pruned FROM quote_change_horizon`);
    await t.db.query(
      `INSERT INTO quote_change_horizon (id, pruned_through) VALUES (1, $1::bigint) ON CONFLICT (id) DO UPDATE SET pruned_through = EXCLUDED.pruned_through`,
      [String(BigInt(row!.seq) + 1n)],
    );
    // Marked: if the stale row were served, the mark would show.
    await t.db.query(`UPDATE quote_answer SET head = replace(head, '"quantity":5', '"quantity":55') WHERE item_id = (SELECT id FROM item WHERE market_hash_name = $1)`, [A]);
    expect(await freshReplicaText(A)).toBe(await madeText(A));
    expect(BigInt((await storedRow(A))!.seq)).toBeGreaterThanOrEqual(BigInt(row!.seq) + 1n);
    await t.db.query(`UPDATE quote_change_horizon SET pruned_through = $1::bigint WHERE id = 1`, [h!.pruned]);
  });

  it('the CSCP quote is read at every call: a new valuation shows without making the stored answer stale', async () => {
    await freshReplicaText(A);
    const row = await storedRow(A);
    await t.db.query(
      `INSERT INTO valuation (item_id, valuation_date, mid_amount, ask_amount, bid_amount, uncertainty, is_two_sided, ask_quote_count, bid_quote_count, computed_at)
       SELECT id, '2026-07-17', 10, 10.5, 9.5, 0.1, true, 1, 1, '2026-07-17T00:05:00Z' FROM item WHERE market_hash_name = $1`,
      [A],
    );
    const text = await freshReplicaText(A);
    expect(text).toContain('"market_code":"CSCP"');
    expect(text).toBe(await madeText(A));
    expect((await storedRow(A))?.seq).toBe(row?.seq);
  });

  it('names without quotes and unknown names are absent, as from loadQuoteTexts', async () => {
    const names = [A, 'No such item at all'];
    const stored = await loadStoredQuoteTexts(t.db, '730', names);
    expect([...stored.keys()]).toEqual([A]);
    expect(stored).toEqual(await loadQuoteTexts(t.db, '730', names));
  });
});

describe('long answers held as bytes (the quote cache stores texts of 8 KiB or more as UTF-8 bytes)', () => {
  const WIDE = 'Stored answer item quoted on every market';
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    const markets = await t.db.query<{ code: string; currency_code: string }>(`SELECT code, currency_code FROM website WHERE NOT is_deprecated ORDER BY code`);
    await ingestBatch(
      t.db,
      markets.flatMap((m, i) => [
        obs(WIDE, { marketCode: m.code, providerCode: m.code, currencyCode: m.currency_code, price: `${100 + i}.25`, observedAt: at(5) }),
        obs(WIDE, { marketCode: m.code, providerCode: m.code, currencyCode: m.currency_code, side: 'bid', price: `${90 + i}.75`, observedAt: at(5) }),
      ]),
    );
    server = http.createServer(t.app.listener);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('GET /prices, HEAD and POST /prices/batch over node:http write the bytes whole, with their Content-Length, every time', async () => {
    const made = (await madeText(WIDE))!;
    expect(made.length).toBeGreaterThan(8 * 1024);
    const url = `${base}/prices?market_hash_name=${encodeURIComponent(WIDE)}`;
    for (let i = 0; i < 3; i++) {
      // The first two answers are misses (the second is held: a long text from its second miss), the third a hit.
      const res = await fetch(url, { headers: t.auth() });
      const text = await res.text();
      expect(res.status).toBe(200);
      expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
      expect(JSON.stringify(JSON.parse(text).data.markets)).toBe(made);
      expect(text).toContain(`"markets":${made}`);
    }
    // The fetch-API face (a browser's request goes through it: an Origin header) answers the same bytes.
    const viaAdapter = await fetch(url, { headers: { ...t.auth(), Origin: 'https://example.com' } });
    const adapterText = await viaAdapter.text();
    expect(viaAdapter.status).toBe(200);
    expect(adapterText).toContain(`"markets":${made}`);
    const head = await fetch(url, { method: 'HEAD', headers: t.auth() });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    // A short batch (made whole) and a heavy one (150 names: streamed, the stored bytes written as they are).
    for (const n of [3, 150]) {
      const names = Array.from({ length: n }, (_, i) => (i % 3 === 1 ? `No such item ${i}` : WIDE));
      const batch = await fetch(`${base}/prices/batch`, {
        method: 'POST',
        headers: { ...t.auth(), 'Content-Type': 'application/json' },
        body: JSON.stringify({ app_id: '730', market_hash_names: names }),
      });
      const body = await batch.text();
      expect(batch.status).toBe(200);
      const items = JSON.parse(body).data.items as { market_hash_name: string; markets: unknown[] }[];
      expect(items.map((x) => x.market_hash_name)).toEqual(names);
      items.forEach((x, i) => expect(JSON.stringify(x.markets)).toBe(i % 3 === 1 ? '[]' : made));
    }
  });

  it('a long text is held from its second miss: asked once it is answered, not held; the third ask is a hit', async () => {
    const made = (await madeText(WIDE))!;
    const cache = new QuoteCache(t.db, { storedAnswers: true });
    await cache.settled();
    try {
      const ask = async () => (await cache.loadTexts('730', [WIDE])).get(WIDE)!;
      expect((await ask()).toString()).toBe(made);
      expect(cache.stats).toEqual({ hits: 0, misses: 1 });
      expect(cache.peekText('730', WIDE)).toBeUndefined();
      expect((await ask()).toString()).toBe(made);
      expect(cache.stats).toEqual({ hits: 0, misses: 2 });
      const held = await ask();
      expect(Buffer.isBuffer(held)).toBe(true);
      expect(held.toString()).toBe(made);
      expect(cache.stats).toEqual({ hits: 1, misses: 2 });
    } finally {
      cache.close();
    }
  });

  it('GraphQL marketsJson of the same item is the same value', async () => {
    const res = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { ...t.auth(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: `{ prices(appId: "730", marketHashName: ${JSON.stringify(WIDE)}) { marketsJson } }` }),
    });
    const json = (await res.json()) as { data: { prices: { marketsJson: unknown } } };
    expect(JSON.stringify(json.data.prices.marketsJson)).toBe(await madeText(WIDE));
  });
});

