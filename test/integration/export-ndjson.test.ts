/**
 * GET /prices/export?format=ndjson (issue 44, point 4) as a client sees it: one quote per line, the same quotes as
 * the JSON export of the same build with the same fields (and the item's name); its own ETag and 304; HEAD answers
 * the headers without spending the export's 2-a-minute rate limit and without a charge; a bad format is a 422 with
 * details; gzip whatever Accept-Encoding asks, as the JSON export.
 */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { expectError, QUOTE_KEYS } from '../helpers/shapes.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { currentSnapshot, runExportSnapshots } from '../../src/exports/exports.js';
import { runValuation } from '../../src/valuation/daily.js';

let t: TestApp;
const day = (d: string) => new Date(`2026-07-${d}T00:00:00Z`);
/** Names whose JSON text holds escapes, quotes, braces, brackets, commas and characters beyond the BMP. */
const ODD = ['Sticker | "Quoted" {Brace} [Bracket], Comma', 'Back\\slash | Tab\there', 'Charm | \u{1F600} Smile', '★ Karambit | Fade'];

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [
    obs('Recoil Case', { price: '2.59', quantity: 17237 }),
    obs('Recoil Case', { side: 'bid', price: '2.6', quantity: 12352 }),
    obs('Recoil Case', { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', price: '0.31' }),
    obs('AK-47 | Redline (Field-Tested)', { price: '201.85' }),
    obs('AK-47 | Redline (Field-Tested)', { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', price: '27.14' }),
    obs('Zeus x27', { price: '1.5', observedAt: day('15') }),
    obs('Zeus x27', { price: null, delisted: true, observedAt: day('16') }),
    ...ODD.flatMap((name, i) => [obs(name, { price: `${i + 1}.05` }), obs(name, { side: 'bid', price: `${i + 1}` })]),
    obs('Arcana', { appId: '570', price: '100' }),
  ]);
  // Closes of a few days for the valuation, so sides mid and all hold CSCP quotes (a quote with a nested object).
  const cny = (name: string, market: string, side: 'ask' | 'bid', price: string, d: string) =>
    obs(name, { marketCode: market, providerCode: 'CSGOTRADER', side, price, observedAt: day(d), quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null });
  const closes = [];
  for (const d of ['14', '15', '16']) {
    closes.push(cny('M4A4 | Test (Field-Tested)', 'BUFF163', 'ask', `2${d}`, d), cny('M4A4 | Test (Field-Tested)', 'BUFF163', 'bid', `19${d.slice(1)}`, d));
    closes.push(cny('M4A4 | Test (Field-Tested)', 'YOUPIN', 'ask', `2${d}.5`, d));
  }
  for (let i = 0; i < 30; i++) closes.push(cny(`Filler ${i} (Field-Tested)`, 'BUFF163', 'ask', '100', '16'), cny(`Filler ${i} (Field-Tested)`, 'BUFF163', 'bid', '92', '16'));
  await ingestQuotes(t.db, closes);
  expect((await runValuation(t.db, day('17'))).items).toBeGreaterThan(0);
  await runExportSnapshots(t.db, { now: new Date('2026-07-17T00:00:00Z') });
});
afterAll(async () => {
  await t.close();
});

async function account(credits: bigint) {
  const a = await createAccount(t.db, { credits });
  return { ...a, auth: { Authorization: `Bearer ${a.key}` } };
}
const used = async (id: string) => Number((await t.db.query<{ used: string }>(`SELECT credits_used::text AS used FROM account WHERE id = $1`, [id]))[0]!.used);

async function request(query: string, headers: Record<string, string>, method = 'GET') {
  const res = await t.app.fetch(new Request(`http://test/prices/export${query}`, { method, headers }));
  const bytes = Buffer.from(await res.arrayBuffer());
  return { res, bytes };
}

/** The lines of an ndjson download (gunzipped), each parsed; the text must end with a line feed unless empty. */
function lines(bytes: Buffer): Record<string, unknown>[] {
  const text = zlib.gunzipSync(bytes).toString('utf8');
  if (text === '') return [];
  expect(text.endsWith('\n')).toBe(true);
  return text.slice(0, -1).split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
}

type JsonExport = { change_seq: string; items: { market_hash_name: string; markets: Record<string, unknown>[] }[] };

describe('GET /prices/export?format=ndjson', () => {
  it('has one line per quote of the JSON export of the same build: the same quotes, fields and order, each with its item name', async () => {
    for (const side of ['ask', 'bid', 'mid', 'all']) {
      const json = await request(`?side=${side}`, (await account(100n)).auth);
      const nd = await request(`?side=${side}&format=ndjson`, (await account(100n)).auth);
      expect(json.res.status, side).toBe(200);
      expect(nd.res.status, side).toBe(200);
      const doc = JSON.parse(zlib.gunzipSync(json.bytes).toString('utf8')) as JsonExport;
      const expected = doc.items.flatMap((i) => i.markets.map((q) => ({ market_hash_name: i.market_hash_name, ...q })));
      const got = lines(nd.bytes);
      expect(got.length, side).toBeGreaterThan(0);
      for (const line of got) expect(Object.keys(line).sort()).toEqual([...QUOTE_KEYS, 'market_hash_name'].sort());
      expect(got, side).toEqual(expected);
      // The same snapshot: its generation time and change sequence in the headers; the file's own ETag and type.
      expect(nd.res.headers.get('content-type')).toBe('application/x-ndjson');
      expect(nd.res.headers.get('content-encoding')).toBe('gzip');
      expect(Number(nd.res.headers.get('content-length'))).toBe(nd.bytes.length);
      expect(nd.res.headers.get('x-export-generated-at')).toBe('2026-07-17T00:00:00.000Z');
      expect(nd.res.headers.get('x-change-sequence')).toBe(doc.change_seq);
      expect(nd.res.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
      expect(nd.res.headers.get('etag')).not.toBe(json.res.headers.get('etag'));
      expect(nd.res.headers.get('x-billable')).toBe('true');
      expect(nd.res.headers.get('x-credit-cost')).toBe('10');
    }
    // Names that need escapes are split at the right places: each line names its item exactly.
    const all = lines((await request('?side=all&format=ndjson', (await account(100n)).auth)).bytes);
    expect(all.filter((l) => l.market_code === 'CSCP' && l.valuation !== null).length).toBeGreaterThan(0);
    for (const name of ODD) expect(all.filter((l) => l.market_hash_name === name).map((l) => l.side).sort(), name).toEqual(expect.arrayContaining(['ask', 'bid']));
    // Money stays a decimal string, as in the JSON export.
    expect(all.find((l) => l.market_hash_name === 'Recoil Case' && l.market_code === 'SKINPORT')!.market_price_amount).toBe('0.31');
    // Another app id has its own files.
    const dota = lines((await request('?app_id=570&side=all&format=ndjson', (await account(100n)).auth)).bytes);
    expect(dota.map((l) => l.market_code)).toContain('BUFF163');
    expect([...new Set(dota.map((l) => l.market_hash_name))]).toEqual(['Arcana']);
  });

  it('answers 304 for its own ETag only (each format has its own), never billed; a rebuild with a change gives both files a new ETag', async () => {
    const ndTag = (await currentSnapshot(t.db, '730', 'ask', 'ndjson'))!.etag;
    const jsonTag = (await currentSnapshot(t.db, '730', 'ask', 'json'))!.etag;
    expect(ndTag).not.toBe(jsonTag);
    const a = await account(100n);
    const hit = await request('?format=ndjson', { ...a.auth, 'If-None-Match': ndTag });
    expect(hit.res.status).toBe(304);
    expect(hit.bytes.length).toBe(0);
    expect(hit.res.headers.get('etag')).toBe(ndTag);
    expect(hit.res.headers.get('x-billable')).toBe('false');
    expect(await used(a.accountId)).toBe(0);
    // The JSON file's ETag does not name the ndjson file, nor the other way round.
    const b = await account(100n);
    const other = await request('?format=ndjson', { ...b.auth, 'If-None-Match': jsonTag });
    expect(other.res.status).toBe(200);
    expect(other.res.headers.get('etag')).toBe(ndTag);
    const c = await account(100n);
    expect((await request('?format=json', { ...c.auth, 'If-None-Match': ndTag })).res.status).toBe(200);

    await ingestQuotes(t.db, [obs('Recoil Case', { price: '2.61', quantity: 17000, observedAt: day('17') })]);
    const rebuilt = await runExportSnapshots(t.db, { appIds: ['730'], sides: ['ask'], now: new Date('2026-07-17T00:10:00Z') });
    expect(rebuilt!.map((r) => [r.snapshot.format, r.published])).toEqual([
      ['json', true],
      ['ndjson', true],
    ]);
    const d = await account(100n);
    const fresh = await request('?format=ndjson', { ...d.auth, 'If-None-Match': ndTag });
    expect(fresh.res.status).toBe(200);
    expect(fresh.res.headers.get('etag')).not.toBe(ndTag);
    expect(lines(fresh.bytes).find((l) => l.market_hash_name === 'Recoil Case' && l.market_code === 'BUFF163')!.market_price_amount).toBe('2.61');
    // No change: the rebuild is dropped and both files keep their ETags.
    const again = await runExportSnapshots(t.db, { appIds: ['730'], sides: ['ask'], now: new Date('2026-07-17T00:15:00Z') });
    expect(again!.map((r) => r.published)).toEqual([false, false]);
    expect(again![1]!.snapshot.etag).toBe(fresh.res.headers.get('etag'));
  });

  it('HEAD answers the headers without spending the rate limit (3 HEADs, then 2 GETs, all 200) and is never billed', async () => {
    for (const format of ['json', 'ndjson']) {
      const a = await account(100n);
      const heads = [];
      for (let i = 0; i < 3; i++) heads.push(await request(`?format=${format}`, a.auth, 'HEAD'));
      expect(heads.map((h) => h.res.status), format).toEqual([200, 200, 200]);
      for (const h of heads) {
        expect(h.bytes.length).toBe(0);
        expect(h.res.headers.get('x-billable')).toBe('false');
        expect(h.res.headers.get('x-credit-cost')).toBeNull();
      }
      expect(await used(a.accountId), format).toBe(0);
      const gets = [await request(`?format=${format}`, a.auth), await request(`?format=${format}`, a.auth)];
      expect(gets.map((g) => g.res.status), format).toEqual([200, 200]);
      // The HEAD announced the file the GET then sent.
      expect(heads[0]!.res.headers.get('etag')).toBe(gets[0]!.res.headers.get('etag'));
      expect(heads[0]!.res.headers.get('content-length')).toBe(String(gets[0]!.bytes.length));
      expect(heads[0]!.res.headers.get('content-type')).toBe(gets[0]!.res.headers.get('content-type'));
      expect(await used(a.accountId), format).toBe(20);
      // The limit itself still holds for GETs, and a HEAD after it is still answered.
      expect((await request(`?format=${format}`, a.auth)).res.status, format).toBe(429);
      expect((await request(`?format=${format}`, a.auth, 'HEAD')).res.status).toBe(200);
      expect(await used(a.accountId), format).toBe(20);
    }
    // A HEAD needs no balance (it is never billed) but still a key.
    const broke = await account(0n);
    expect((await request('?format=ndjson', broke.auth, 'HEAD')).res.status).toBe(200);
    expect((await request('?format=ndjson', {}, 'HEAD')).res.status).toBe(401);
  });

  it('a bad format is a 422 with details (before any charge or rate-limit point)', async () => {
    const a = await account(100n);
    for (const query of ['?format=csv', '?format=NDJSON', '?format=', '?format=json&format=ndjson']) {
      const res = await t.get(`/prices/export${query}`, a.auth);
      const error = expectError(res, 422, 'validation_failed');
      expect(error.details.errors, query).toEqual([expect.objectContaining({ location: 'query', field: 'format' })]);
    }
    expect(await used(a.accountId)).toBe(0);
    expect((await request('?format=ndjson', a.auth)).res.status).toBe(200); // the 422s spent no rate-limit point
    expect((await request('?format=ndjson', a.auth)).res.status).toBe(200);
  });

  it('is sent gzip-compressed whatever Accept-Encoding asks, as the JSON export', async () => {
    for (const encoding of [undefined, 'gzip', 'gzip, deflate, br', 'identity']) {
      for (const format of ['json', 'ndjson']) {
        const a = await account(100n);
        const headers = { ...a.auth, ...(encoding === undefined ? {} : { 'Accept-Encoding': encoding }) };
        const { res, bytes } = await request(`?format=${format}`, headers);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-encoding'), `${format} ${encoding}`).toBe('gzip');
        expect(bytes.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
        expect(zlib.gunzipSync(bytes).length).toBeGreaterThan(0);
      }
    }
  });

  it('GraphQL priceExport(format: ndjson) describes the ndjson file: its ETag and size', async () => {
    const a = await account(100n);
    const nd = (await currentSnapshot(t.db, '730', 'ask', 'ndjson'))!;
    const r = await t.gql(`{ priceExport(side: ask, format: ndjson) { format etag byteSize notModified } }`, {}, a.auth);
    expect(r.body.data.priceExport).toEqual({ format: 'ndjson', etag: nd.etag, byteSize: nd.byteSize, notModified: false });
  });
});

describe('GET /prices/export?format=ndjson before its first build', () => {
  it('answers 503 dependency_unavailable while only the JSON files are built (as right after an upgrade)', async () => {
    const x = await testApp();
    try {
      await ingestQuotes(x.db, [obs('Recoil Case', { price: '2.59' })]);
      await runExportSnapshots(x.db, { formats: ['json'] });
      const key = (await createAccount(x.db, { credits: 100n })).key;
      const nd = await x.get('/prices/export?format=ndjson', { 'X-API-Key': key });
      expectError(nd, 503, 'dependency_unavailable');
      expect((await x.app.fetch(new Request('http://test/prices/export', { headers: { 'X-API-Key': key } }))).status).toBe(200);
    } finally {
      await x.close();
    }
  });
});
