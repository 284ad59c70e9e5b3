/**
 * The item catalogue search as a client sees it (issue 44, point 1; docs/search.md): GET /catalogue/items and GraphQL
 * `items(search, first, after)` find items by their words in any order, ignoring case and punctuation, knowing the
 * usual abbreviations; each hit has its kind and its CSCP quote; pages follow a stable cursor; bad input is a 422 with
 * details; every page is charged (a charge follows the data), HEAD and refusals are not. A 404 of GET /prices
 * suggests the nearest names. Run on PGlite and, with TEST_DATABASE_URL, on PostgreSQL.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/accounts.js';
import { ensureItems } from '../../src/quotes/ingestion.js';
import { projectRoot } from '../../src/lib/paths.js';
import { byCodePoint } from '../../src/lib/order.js';
import { MAX_QUERY_WORDS, searchKey, searchWords } from '../../src/search/query.js';
import { WINDOW } from '../../src/quotes/item-search.js';
import { ItemHitOut, ItemSearchOut } from '../../src/shapes/item-search.js';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope, expectError, expectKeys, QUOTE_KEYS } from '../helpers/shapes.js';

const REDLINE = 'AK-47 | Redline (Field-Tested)';
const ST_REDLINE = 'StatTrak™ AK-47 | Redline (Field-Tested)';
const KARAMBIT = '★ Karambit | Doppler (Factory New)';
const ST_KARAMBIT = '★ StatTrak™ Karambit | Doppler (Factory New)';
const LORE = 'Souvenir AWP | Dragon Lore (Factory New)';
const GLOVES = '★ Sport Gloves | Vice (Well-Worn)';
const HYPER = 'M4A1-S | Hyper Beast (Battle-Scarred)';
const HOLO = 'Sticker | Team Liquid (Holo) | Katowice 2019';
const CASE = 'Recoil Case';
/** An item without quotes (the catalogue knows it; GET /prices answers 404 for it). */
const QUIET = 'MP9 | Quiet Search (Minimal Wear)';

/** Every 12th real name of data/items (about 3,000: more than one window of the search's first statement). */
const ALL_NAMES = fs.readFileSync(path.join(projectRoot, 'data', 'items', 'market_hash_names.txt'), 'utf8').split('\n').filter(Boolean);
const SAMPLE = ALL_NAMES.filter((_, i) => i % 12 === 0);

let t: TestApp;
/** Every name the catalogue of this test holds. */
let catalogue: string[];

const search = (query: string, headers = t.auth()) => t.get(`/catalogue/items${query}`, headers);
const q = (params: Record<string, string>) => `?${new URLSearchParams(params)}`;
const names = (data: { items: { market_hash_name: string }[] }) => data.items.map((h) => h.market_hash_name);
/** What the search must answer for `query`, in order: every name whose key holds every word, shortest key first. */
const expected = (query: string) => {
  const words = searchWords(query);
  const keyLength = (n: string) => [...searchKey(n)].length;
  return catalogue.filter((n) => words.every((w) => searchKey(n).includes(w))).sort((a, b) => keyLength(a) - keyLength(b) || byCodePoint(a, b));
};
const used = async (key: string) => expectEnvelope(await t.get('/me', { Authorization: `Bearer ${key}` })).credit.used as number;

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [REDLINE, ST_REDLINE, KARAMBIT, ST_KARAMBIT, LORE, GLOVES, HYPER, HOLO, CASE].map((n) => obs(n)));
  await ensureItems(t.db, [...SAMPLE, QUIET].map((marketHashName) => ({ appId: '730', marketHashName })));
  await t.db.prisma.$executeRawUnsafe(
    `INSERT INTO valuation (item_id, valuation_date, mid_amount, ask_amount, bid_amount, uncertainty, is_two_sided, ask_quote_count, bid_quote_count, computed_at)
     SELECT id, d::date, m, m + 2.25, m - 2, 0.05, true, 4, 1, d::timestamptz + interval '5 minutes'
     FROM item, (VALUES ('2026-07-16', 190.5), ('2026-07-17', 198.25)) AS v(d, m) WHERE market_hash_name = $1`,
    REDLINE,
  );
  catalogue = (await t.db.query<{ market_hash_name: string }>(`SELECT market_hash_name FROM item WHERE app_id = '730'`)).map((r) => r.market_hash_name);
}, 300_000);
afterAll(async () => {
  await t?.close();
});

describe('the search key', () => {
  it("the migration's SQL function qg_search_key (which keyed the stored items) and the TypeScript rule agree on every name of data/items", async () => {
    const rows = await t.db.query<{ k: string }>(`SELECT qg_search_key(n) AS k FROM unnest($1::text[]) WITH ORDINALITY AS u(n, i) ORDER BY i`, [ALL_NAMES]);
    const differ = ALL_NAMES.filter((n, i) => rows[i]!.k !== searchKey(n));
    expect(rows).toHaveLength(ALL_NAMES.length);
    expect(differ).toEqual([]);
  }, 120_000);

  it('and on generated text (any characters, the typographic marks, the star)', async () => {
    const text = fc.string({ unit: fc.oneof(fc.constantFrom('★', '™', '’', '\u00a0', '–', 'Ö', '龍', '♥', '|', '-', "'", 'A', 'z', '7', ' '), fc.constantFrom(...'!"#$%&()*+,./:;<=>?@[\\]^_`{}~'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), maxLength: 40 })
      .filter((s) => !s.includes('\u0000'));
    const samples = fc.sample(text, { numRuns: 500, seed: 44 });
    const rows = await t.db.query<{ k: string }>(`SELECT qg_search_key(n) AS k FROM unnest($1::text[]) WITH ORDINALITY AS u(n, i) ORDER BY i`, [samples]);
    expect(samples.filter((s, i) => rows[i]!.k !== searchKey(s))).toEqual([]);
  });

  it('new items get their key from the ingestion service', async () => {
    const rows = await t.db.query<{ market_hash_name: string; search_key: string }>(`SELECT market_hash_name, search_key FROM item WHERE market_hash_name = ANY($1::text[])`, [[ST_KARAMBIT, QUIET]]);
    expect(Object.fromEntries(rows.map((r) => [r.market_hash_name, r.search_key]))).toEqual({
      [ST_KARAMBIT]: 'starstattrakkarambitdopplerfactorynew',
      [QUIET]: 'mp9quietsearchminimalwear',
    });
  });
});

describe('GET /catalogue/items: words in any order, case and punctuation ignored, abbreviations known', () => {
  it('`ak-47 redline ft` and `redline ak47 field tested` both find AK-47 | Redline (Field-Tested) first', async () => {
    for (const query of ['ak-47 redline ft', 'redline ak47 field tested', 'REDLINE  (AK-47)  Field-Tested', 'ak 47 red line fieldtested', 'AK-47 | Redline (Field-Tested)']) {
      const data = expectEnvelope(await search(q({ q: query })));
      expect(names(data)[0], query).toBe(REDLINE);
      expect(names(data), query).toEqual(expected(query).slice(0, 20));
      expect(names(data), query).toContain(ST_REDLINE);
    }
    const data = expectEnvelope(await search(q({ q: 'ak-47 redline ft' })));
    expect(data).toMatchObject({ app_id: '730', q: 'ak-47 redline ft', words: ['fieldtested', 'redline', 'ak47'], has_more: false, next_cursor: null });
  });

  it('ST, FN, MW, FT, WW, BS, SV and ★ / star', async () => {
    const first = async (query: string) => names(expectEnvelope(await search(q({ q: query }))));
    expect((await first('st ak47 redline ft'))[0]).toBe(ST_REDLINE);
    expect(await first('st ak47 redline ft')).not.toContain(REDLINE);
    expect(await first('★ karambit doppler fn')).toEqual([KARAMBIT, ST_KARAMBIT]);
    expect(await first('fn doppler STAR karambit')).toEqual([KARAMBIT, ST_KARAMBIT]);
    expect(await first('karambit st fn')).toEqual(expected('karambit stattrak factory new'));
    expect((await first('karambit st fn')).every((n) => n.startsWith('★ StatTrak™ Karambit'))).toBe(true);
    expect(await first('karambit st fn')).toContain(ST_KARAMBIT);
    expect(await first('sv awp dragon lore fn')).toEqual([LORE]);
    expect(await first('souvenir dragonlore')).toEqual([LORE]);
    expect(await first('vice ww gloves')).toEqual([GLOVES]);
    expect(await first('m4a1s hyper beast bs')).toEqual([HYPER]);
    expect(await first('M4A1-S BATTLE-SCARRED hyper')).toEqual([HYPER]);
    expect(await first('mw')).toEqual(expected('minimal wear').slice(0, 20));
    expect(await first('MW')).toEqual(expected('mw').slice(0, 20));
    expect(await first('liquid holo katowice 2019')).toContain(HOLO);
    expect(await first('no such thing anywhere')).toEqual([]);
  });

  it('each hit has its type and its current CSCP quote (the latest valuation, as GET /prices serves it)', async () => {
    const data = expectEnvelope(await search(q({ q: 'redline ak47 ft' })));
    for (const hit of data.items) expectKeys(hit, Object.keys(ItemHitOut.shape));
    expectKeys(data, Object.keys(ItemSearchOut.shape));
    const [redline, st] = data.items;
    expect(redline).toMatchObject({ market_hash_name: REDLINE, type: 'weapon' });
    expectKeys(redline.cscp, QUOTE_KEYS);
    expect(redline.cscp).toMatchObject({ market_code: 'CSCP', provider_code: 'CSCP', side: 'mid', market_currency_code: 'CNY', market_price_amount: '198.25', quantity: null });
    expect(redline.cscp.valuation).toMatchObject({ valuation_date: '2026-07-17', ask_amount: '200.5', bid_amount: '196.25', ask_quote_count: 4, is_two_sided: true });
    expect(st).toMatchObject({ market_hash_name: ST_REDLINE, type: 'weapon', cscp: null });
    const prices = expectEnvelope(await t.get(`/prices?${new URLSearchParams({ market_hash_name: REDLINE, markets: 'CSCP' })}`, t.auth()));
    expect(prices.markets).toEqual([redline.cscp]);

    const types = async (query: string) => expectEnvelope(await search(q({ q: query }))).items.map((h: { type: string }) => h.type);
    expect(await types('karambit doppler')).toEqual(['knife', 'knife']);
    expect(await types('sport gloves vice')).toEqual(['gloves']);
    expect(await types('team liquid holo katowice 2019')).toContain('sticker');
    expect(await types('recoil case')).toEqual(['container']);
  });

  it('GraphQL items(search, first, after) answers the same hits, with the quote typed', async () => {
    const res = await t.gql(`query($s: String!) { items(search: $s, first: 5) { appId search words hits { marketHashName type cscp { marketCode side marketPriceAmount valuation { valuationDate } } cscpJson } nextCursor hasMore } }`, { s: 'ak47 redline ft' }, t.auth());
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const rest = expectEnvelope(await search(q({ q: 'ak47 redline ft', limit: '5' })));
    const page = res.body.data.items;
    expect(page).toMatchObject({ appId: '730', search: 'ak47 redline ft', words: rest.words, nextCursor: rest.next_cursor, hasMore: rest.has_more });
    expect(page.hits.map((h: { marketHashName: string }) => h.marketHashName)).toEqual(names(rest));
    expect(page.hits[0]).toMatchObject({ type: 'weapon', cscp: { marketCode: 'CSCP', side: 'mid', marketPriceAmount: '198.25', valuation: { valuationDate: '2026-07-17' } } });
    expect(page.hits[0].cscpJson).toEqual(rest.items[0].cscp);
    expect(page.hits[1]).toMatchObject({ type: 'weapon', cscp: null, cscpJson: null });
  });
});

describe('paging', () => {
  /** Every page of `query` by `limit`, REST. */
  async function allPages(query: string, limit: number): Promise<{ names: string[]; cursors: string[] }> {
    const out: string[] = [];
    const cursors: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 500; i++) {
      const data = expectEnvelope(await search(q({ q: query, limit: String(limit), ...(cursor ? { cursor } : {}) })));
      expect(data.items.length).toBeLessThanOrEqual(limit);
      out.push(...names(data));
      if (!data.has_more) {
        expect(data.next_cursor).toBeNull();
        return { names: out, cursors };
      }
      expect(data.items).toHaveLength(limit);
      cursor = data.next_cursor as string;
      cursors.push(cursor);
    }
    throw new Error('no last page');
  }

  it('a broad query (more matches than one window of keys) pages through every match once, in order', async () => {
    const all = expected('sticker');
    expect(all.length).toBeGreaterThan(WINDOW / 2);
    const { names: got } = await allPages('sticker', 50);
    expect(new Set(got).size).toBe(got.length);
    expect(got).toEqual(all);
  }, 120_000);

  it('sparse and narrow queries page the same way (the trigram index path), words in any order sharing a cursor', async () => {
    for (const query of ['factory new souvenir', 'stattrak ak47', 'case', 'gloves ★']) {
      const all = expected(query);
      expect(all.length, query).toBeGreaterThan(3);
      const { names: got } = await allPages(query, 3);
      expect(got, query).toEqual(all);
    }
    // The same words in another order (and spelled otherwise) are the same search: its cursor continues it.
    const first = expectEnvelope(await search(q({ q: 'stattrak ak47', limit: '2' })));
    const next = expectEnvelope(await search(q({ q: 'AK-47  ST', limit: '2', cursor: first.next_cursor })));
    expect([...names(first), ...names(next)]).toEqual(expected('stattrak ak47').slice(0, 4));
  }, 120_000);

  it('a cursor is stable: asked twice it gives the same page; items added meanwhile cause no repeat and no skip', async () => {
    const one = expectEnvelope(await search(q({ q: 'ak47', limit: '3' })));
    expect(one.has_more).toBe(true);
    const a = expectEnvelope(await search(q({ q: 'ak47', limit: '3', cursor: one.next_cursor })));
    const b = expectEnvelope(await search(q({ q: 'ak47', limit: '3', cursor: one.next_cursor })));
    expect(b).toEqual(a);
    expect(one.next_cursor).toBe(expectEnvelope(await search(q({ q: 'ak47', limit: '3' }))).next_cursor);
    // New items, one before the cursor's position (the shortest name of all) and one after it.
    const before = expected('ak47');
    const added = ['AK-47 Pin', 'Zzz | AK-47 Search Test (Well-Worn)'];
    await ensureItems(t.db, added.map((marketHashName) => ({ appId: '730', marketHashName })));
    catalogue.push(...added);
    const rest: string[] = [];
    let cursor: string | null = one.next_cursor;
    while (cursor) {
      const p = expectEnvelope(await search(q({ q: 'ak47', limit: '7', cursor })));
      rest.push(...names(p));
      cursor = p.next_cursor;
    }
    const got = [...names(one), ...rest];
    expect(new Set(got).size).toBe(got.length);
    expect(got).toEqual(expected('ak47').filter((n) => n !== 'AK-47 Pin'));
    expect(got).toContain('Zzz | AK-47 Search Test (Well-Worn)');
    expect(before.every((n) => got.includes(n))).toBe(true);
  });

  it('GraphQL follows the same cursors (REST next_cursor is a GraphQL after, and back)', async () => {
    const rest = expectEnvelope(await search(q({ q: 'ak47', limit: '4' })));
    const res = await t.gql(`query($s: String!, $a: String) { items(search: $s, first: 4, after: $a) { hits { marketHashName } nextCursor } }`, { s: 'ak47', a: rest.next_cursor }, t.auth());
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.items.hits.map((h: { marketHashName: string }) => h.marketHashName)).toEqual(expected('ak47').slice(4, 8));
    const back = expectEnvelope(await search(q({ q: 'ak47', limit: '4', cursor: res.body.data.items.nextCursor })));
    expect(names(back)).toEqual(expected('ak47').slice(8, 12));
  });
});

describe('bad input: 422 with details, never charged', () => {
  const cases: [string, string, string][] = [
    ['', 'q', 'is required'],
    ['?q=', 'q', 'must be 1-255 characters long'],
    ['?q=%7C%7C%7C%20-%20()', 'q', 'must contain a letter or a digit'],
    [`?q=${'a'.repeat(256)}`, 'q', 'must be 1-255 characters long'],
    ['?q=ak%0047', 'q', 'must not contain NUL characters'],
    [`?q=${Array.from({ length: MAX_QUERY_WORDS + 1 }, (_, i) => `w${i}x`).join('+')}`, 'q', 'must have at most 32 words'],
    ['?q=ak&q=awp', 'q', 'must be given at most once'],
    ['?q=ak&limit=0', 'limit', 'must be a whole number from 1 to 50'],
    ['?q=ak&limit=51', 'limit', 'must be a whole number from 1 to 50'],
    ['?q=ak&limit=abc', 'limit', 'must be a whole number from 1 to 50'],
    ['?q=ak&limit=-1', 'limit', 'must be a whole number from 1 to 50'],
    ['?q=ak&limit=1.5', 'limit', 'must be a whole number from 1 to 50'],
    ['?q=ak&cursor=', 'cursor', 'is not a cursor of this service'],
    ['?q=ak&cursor=not%20a%20cursor', 'cursor', 'is not a cursor of this service'],
    [`?q=ak&cursor=${Buffer.from('[1,"x",1,"y"]').toString('base64url')}`, 'cursor', 'belongs to another search'],
    [`?q=ak&cursor=${Buffer.from('{"a":1}').toString('base64url')}`, 'cursor', 'is not a cursor of this service'],
    ['?q=ak&app_id=', 'app_id', 'must be 1-16 characters long'],
  ];
  it.each(cases)('GET /catalogue/items%s -> 422 on %s', async (query, field, message) => {
    const before = await used(t.key);
    const err = expectError(await search(query), 422, 'validation_failed');
    expect(err.details.errors).toContainEqual({ location: 'query', field, message: expect.stringContaining(message) });
    expect(await used(t.key)).toBe(before);
  });

  it("a cursor of another search (other words, another app id) is refused: it would name another search's position", async () => {
    const page = expectEnvelope(await search(q({ q: 'redline', limit: '1' })));
    for (const other of [q({ q: 'redline awp', cursor: page.next_cursor }), q({ q: 'redline', app_id: '570', cursor: page.next_cursor })]) {
      const err = expectError(await search(other), 422, 'validation_failed');
      expect(err.details.errors).toEqual([{ location: 'query', field: 'cursor', message: expect.stringContaining('belongs to another search') }]);
    }
  });

  it('GraphQL: the same rules on search, first and after, before any charge', async () => {
    const before = await used(t.key);
    for (const [args, field] of [['search: ""', 'search'], ['search: "|||"', 'search'], ['search: "ak", first: 0', 'first'], ['search: "ak", first: 51', 'first'], ['search: "ak", after: "nope"', 'after']] as const) {
      const res = await t.gql(`{ items(${args}) { hits { marketHashName } } }`, {}, t.auth());
      expect(res.status, args).toBe(422);
      expect(res.body.data ?? null, args).toBeNull();
      expect(res.body.errors[0].extensions.code, args).toBe('validation_failed');
      expect(res.body.errors[0].extensions.details.errors.map((e: { field: string }) => e.field), args).toEqual([field]);
    }
    expect(await used(t.key)).toBe(before);
  });

  it('the credential is checked first: no key and a bad q is a 401', async () => {
    expectError(await search('?q=', {}), 401, 'unauthorized');
  });
});

describe('billing: 1 credit a page, on both faces; HEAD and conditional requests', () => {
  it('a page is charged (an empty page too: it answers the search), and reported in meta / extensions', async () => {
    const a = await createAccount(t.db, { credits: 3n });
    const h = { Authorization: `Bearer ${a.key}` };
    const res = await search(q({ q: 'redline' }), h);
    expect(res.body.meta).toMatchObject({ billable: true, credit: { cost: 1, remaining: 2 } });
    const empty = await search(q({ q: 'no such thing anywhere' }), h);
    expect(expectEnvelope(empty).items).toEqual([]);
    expect(empty.body.meta).toMatchObject({ billable: true, credit: { cost: 1, remaining: 1 } });
    const g = await t.gql(`{ items(search: "karambit") { hits { marketHashName } } }`, {}, h);
    expect(g.status).toBe(200);
    expect(g.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 0 } });
    expect(await used(a.key)).toBe(3);
  });

  it('an account without credits gets 402 credit_insufficient and no hits, on both faces', async () => {
    const a = await createAccount(t.db, { credits: 0n });
    const h = { Authorization: `Bearer ${a.key}` };
    const err = expectError(await search(q({ q: 'redline' }), h), 402, 'credit_insufficient');
    expect(err.details).toMatchObject({ required: 1, remaining: 0 });
    const g = await t.gql(`{ items(search: "redline") { hits { marketHashName } } }`, {}, h);
    expect(g.status).toBe(402);
    expect(g.body.data ?? null).toBeNull();
    expect(g.body.errors[0].extensions.code).toBe('credit_insufficient');
    expect(await used(a.key)).toBe(0);
  });

  it('HEAD: the status and headers of the GET, no body, never charged; its refusals too', async () => {
    const a = await createAccount(t.db, { credits: 5n });
    const head = (query: string) => t.app.fetch(new Request(`http://test/catalogue/items${query}`, { method: 'HEAD', headers: { Authorization: `Bearer ${a.key}` } }));
    const ok = await head(q({ q: 'redline' }));
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await ok.arrayBuffer()).toHaveProperty('byteLength', 0);
    expect((await head('?q=')).status).toBe(422);
    expect(await used(a.key)).toBe(0);
  });

  it('conditional requests: search answers carry no validator, so If-None-Match / If-Modified-Since are answered in full and charged, like GET /prices', async () => {
    const a = await createAccount(t.db, { credits: 5n });
    const h = { Authorization: `Bearer ${a.key}` };
    const first = await search(q({ q: 'redline' }), h);
    expect(first.headers.get('etag')).toBeNull();
    const again = await search(q({ q: 'redline' }), { ...h, 'If-None-Match': '*', 'If-Modified-Since': new Date().toUTCString() });
    expect(expectEnvelope(again)).toEqual(expectEnvelope(first));
    expect(again.body.meta).toMatchObject({ billable: true, credit: { cost: 1 } });
    expect(await used(a.key)).toBe(2);
  });
});

describe('GET /prices 404: the nearest names in details.suggestions', () => {
  const prices = (name: string, headers = t.auth()) => t.get(`/prices?${new URLSearchParams({ market_hash_name: name })}`, headers);

  it('wrong case, punctuation or word order: the item itself first', async () => {
    const err = expectError(await prices('ak-47 | redline (field-tested)'), 404, 'not_found');
    expect(err.details.suggestions[0]).toBe(REDLINE);
    expect(err.details.suggestions).toContain(ST_REDLINE);
    expect(err.details.suggestions.length).toBeLessThanOrEqual(5);
    expect(expectError(await prices('Redline AK-47 (Field-Tested)'), 404, 'not_found').details.suggestions[0]).toBe(REDLINE);
    expect(expectError(await prices('AK-47 | Redline (FT)'), 404, 'not_found').details.suggestions[0]).toBe(REDLINE);
  });

  it('a misspelt word: the most similar names (pg_trgm)', async () => {
    expect(expectError(await prices('AK-47 | Redlien (Field-Tested)'), 404, 'not_found').details.suggestions[0]).toBe(REDLINE);
    expect(expectError(await prices('★ Karambit | Dopler (Factory New)'), 404, 'not_found').details.suggestions.slice(0, 2)).toEqual([KARAMBIT, ST_KARAMBIT]);
  });

  it('nothing near: an empty list; an item without quotes is never its own suggestion', async () => {
    expect(expectError(await prices('qqqq xxxx zzzz'), 404, 'not_found').details).toEqual({ suggestions: [] });
    const quiet = expectError(await prices(QUIET), 404, 'not_found');
    expect(quiet.details.suggestions).not.toContain(QUIET);
  });

  it('GraphQL prices carries them in extensions.details; a 404 is never charged', async () => {
    const before = await used(t.key);
    const res = await t.gql(`{ prices(marketHashName: "ak47 redline ft") { marketHashName } }`, {}, t.auth());
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'not_found', details: { suggestions: expect.arrayContaining([REDLINE]) } });
    expect(res.body.errors[0].extensions.details.suggestions[0]).toBe(REDLINE);
    expectError(await prices('AK-47 | Redlien (Field-Tested)'), 404, 'not_found');
    expect(await used(t.key)).toBe(before);
  });
});
