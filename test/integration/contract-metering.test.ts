/**
 * The contract and metering holes a client finds in its first hour (issue: contract and metering
 * holes), in process on PGlite (a real PostgreSQL database with TEST_DATABASE_URL):
 * - every 422 carries `details` as an object, `{ errors: [...] }`, on REST and in GraphQL;
 * - every GraphQL refusal carries `extensions.code`; Yoga's empty 406/415 become the error envelope;
 * - each metered GraphQL field is billed or waived on its own (every pair of metered fields);
 * - a conditional export that is "not modified" answers 304 whatever the balance;
 * - HEAD is answered with the GET's headers, never billed, rate limited (except the export's: issue 44);
 * - an export whose bytes fail half-way is refunded (ledger row `refund`, counters agree);
 * - the credential is checked before arguments, on REST and on GraphQL (sync mutations included).
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope, expectError } from '../helpers/shapes.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { currentSnapshot, runExportSnapshots } from '../../src/exports/exports.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
const pricesPath = `/prices?market_hash_name=${encodeURIComponent(ITEM)}`;

let t: TestApp;
let etag: string;

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [obs(ITEM, { price: '201.85' }), obs(ITEM, { side: 'bid', price: '198.19' }), obs('Recoil Case', { price: '2.59' })]);
  await runExportSnapshots(t.db);
  etag = (await currentSnapshot(t.db, '730', 'ask'))!.etag;
});
afterAll(async () => {
  await t.close();
});

async function account(credits: bigint) {
  const a = await createAccount(t.db, { credits });
  return { id: a.accountId, key: a.key };
}

/** Counters and ledger of an account: used must equal charges less refunds. */
async function ledger(accountId: string) {
  const [row] = await t.db.query<{ used: string; charged: string; refunded: string; refunds: string }>(
    `SELECT a.credits_used::text AS used,
            COALESCE((SELECT sum(amount) FROM credit_ledger WHERE account_id = a.id AND kind = 'charge'), 0)::text AS charged,
            COALESCE((SELECT sum(amount) FROM credit_ledger WHERE account_id = a.id AND kind = 'refund'), 0)::text AS refunded,
            (SELECT count(*) FROM credit_ledger WHERE account_id = a.id AND kind = 'refund')::text AS refunds
       FROM account a WHERE a.id = $1`,
    [accountId],
  );
  return { used: Number(row!.used), charged: Number(row!.charged), refunded: Number(row!.refunded), refunds: Number(row!.refunds) };
}

describe('error.details is an object on every 422', () => {
  it('REST: { errors: [{ location, field, message }] }', async () => {
    const a = await account(10n);
    const err = expectError(await t.get('/prices?side=sideways', bearer(a.key)), 422, 'validation_failed');
    expect(Array.isArray(err.details)).toBe(false);
    expect(err.details.errors).toEqual(
      expect.arrayContaining([
        { location: 'query', field: 'market_hash_name', message: 'is required' },
        expect.objectContaining({ location: 'query', field: 'side' }),
      ]),
    );
    const body = expectError(await t.post('/prices/batch', '{"market_hash_names": [', bearer(a.key)), 422, 'validation_failed');
    expect(body.details).toEqual({ errors: [{ location: 'body', field: '', message: 'is not valid JSON' }] });
  });

  it('GraphQL: extensions.details has the same shape', async () => {
    const a = await account(10n);
    const r = await t.gql(`{ batchPrices(marketHashNames: []) { appId } }`, {}, bearer(a.key));
    const e = r.body.errors[0];
    expect(e.extensions.code).toBe('validation_failed');
    expect(Array.isArray(e.extensions.details)).toBe(false);
    expect(e.extensions.details.errors[0]).toEqual({ location: 'argument', field: 'marketHashNames', message: expect.any(String) });
  });

  it('/openapi.json declares details as an object or null, and the 422 body with details.errors', async () => {
    const doc = (await t.get('/openapi.json')).body;
    const schemas = doc.components.schemas;
    expect(schemas.ErrorDetails.anyOf.map((s: { type: string }) => s.type)).toEqual(['object', 'null']);
    expect(schemas.ValidationDetails.required).toContain('errors');
    expect(doc.paths['/prices'].get.responses['422'].content['application/json'].schema.$ref).toBe('#/components/schemas/ValidationErrorEnvelope');
  });
});

describe('every GraphQL refusal carries extensions.code', () => {
  const codeOf = async (query: string, variables: Record<string, unknown> = {}) => (await t.gql(query, variables)).body.errors[0].extensions.code;

  it('parse errors, unknown fields, aliases over the limit, variables that do not coerce', async () => {
    expect(await codeOf('{ websites { code ')).toBe('GRAPHQL_PARSE_FAILED');
    expect(await codeOf('{ nope }')).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(await codeOf(`{ ${Array.from({ length: 60 }, (_, i) => `a${i}: health { status }`).join(' ')} }`)).toBe('too_many_aliases');
    const coerce = await t.gql('query($n: String!) { prices(marketHashName: $n) { marketHashName } }', { n: 5 });
    expect(coerce.status).toBe(400);
    expect(coerce.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });

  it('the depth limit', async () => {
    // Nest the fee schedule's chains until the query is deeper than the limit (12).
    const r = await t.gql(`{ websites { feeSchedule { purchase: website { feeSchedule { w: website { feeSchedule { x: website { feeSchedule { y: website { code } } } } } } } } } }`);
    const codes = r.body.errors.map((e: { extensions: { code?: string } }) => e.extensions.code);
    expect(codes.every((c: unknown) => typeof c === 'string')).toBe(true);
  });

  it('406 and 415 come as the error envelope with a code, not an empty body', async () => {
    const post = (headers: Record<string, string>, body: string) => t.app.fetch(new Request('http://test/graphql', { method: 'POST', headers, body }));
    const r406 = await post({ 'Content-Type': 'application/json', Accept: 'text/csv' }, JSON.stringify({ query: '{ health { status } }' }));
    expect(r406.status).toBe(406);
    const b406 = await r406.json();
    expect(b406.error.code).toBe('not_acceptable');
    expect(b406.meta.request_id).toBe(r406.headers.get('x-request-id'));
    const r415 = await post({ 'Content-Type': 'text/csv' }, 'a,b');
    expect(r415.status).toBe(415);
    expect((await r415.json()).error.code).toBe('unsupported_media_type');
  });
});

describe('each metered GraphQL field is billed or waived on its own', () => {
  // Every metered root field, with what it costs alone: a 304-hit export costs nothing.
  const FIELDS: Record<string, { selection: () => string; cost: number }> = {
    prices: { selection: () => `prices(marketHashName: ${JSON.stringify(ITEM)}) { marketHashName }`, cost: 1 },
    batchPrices: { selection: () => `batchPrices(marketHashNames: ${JSON.stringify(Array(150).fill(ITEM))}) { appId }`, cost: 2 },
    priceExport: { selection: () => `priceExport { etag }`, cost: 10 },
    priceExportNotModified: { selection: () => `priceExport(ifNoneMatch: ${JSON.stringify(etag)}) { notModified }`, cost: 0 },
    priceExportStar: { selection: () => `priceExport(ifNoneMatch: "*") { __typename }`, cost: 0 },
  };
  const names = Object.keys(FIELDS);
  const pairs = names.flatMap((a, i) => names.slice(i + 1).map((b) => [a, b] as const));

  it.each(pairs)('%s + %s pays the sum of what each costs alone', async (x, y) => {
    const a = await account(100n);
    const r = await t.gql(`{ x: ${FIELDS[x]!.selection()} y: ${FIELDS[y]!.selection()} }`, {}, bearer(a.key));
    expect(r.status).toBe(200);
    expect(r.body.errors).toBeUndefined();
    const cost = FIELDS[x]!.cost + FIELDS[y]!.cost;
    expect(r.body.extensions.billing).toEqual(cost > 0 ? { billable: true, credit: { cost, remaining: 100 - cost } } : { billable: false });
    expect(await ledger(a.id)).toMatchObject({ used: cost, charged: cost });
  });

  it('the reported bypass is closed: a quote beside an export 304 is charged 1', async () => {
    const a = await account(5n);
    const r = await t.gql(`{ a: prices(marketHashName: ${JSON.stringify(ITEM)}) { marketHashName } e: priceExport(ifNoneMatch: "*") { __typename } }`, {}, bearer(a.key));
    expect(r.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 4 } });
  });
});

describe('a 304 never needs credits', () => {
  it('REST: an account with 0 credits gets 304 for the current ETag, and 402 for another', async () => {
    const a = await account(0n);
    const hit = await t.app.fetch(new Request('http://test/prices/export', { headers: { ...bearer(a.key), 'If-None-Match': etag } }));
    expect(hit.status).toBe(304);
    expect(hit.headers.get('x-billable')).toBe('false');
    expect(hit.headers.get('ratelimit')).toMatch(/^"exportPrices";r=1;/);
    const miss = await t.get('/prices/export', { ...bearer(a.key), 'If-None-Match': '"other"' });
    expect(expectError(miss, 402, 'credit_insufficient').details).toEqual({ required: 10, remaining: 0 });
    expect(await ledger(a.id)).toMatchObject({ used: 0, charged: 0 });
  });

  it('GraphQL: priceExport(ifNoneMatch) with 0 credits answers notModified, unbilled', async () => {
    const a = await account(0n);
    const r = await t.gql(`{ priceExport(ifNoneMatch: ${JSON.stringify(etag)}) { notModified } }`, {}, bearer(a.key));
    expect(r.body.data.priceExport.notModified).toBe(true);
    expect(r.body.extensions.billing).toEqual({ billable: false });
  });
});

describe('HEAD is not a paid GET', () => {
  const head = (path: string, headers: Record<string, string>) => t.app.fetch(new Request(`http://test${path}`, { method: 'HEAD', headers }));

  it('HEAD /prices: the GET headers, no body, never billed, counted towards the limit', async () => {
    const a = await account(0n);
    const res = await head(pricesPath, bearer(a.key));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('x-request-id')).toMatch(/[0-9a-f-]{36}/);
    expect(res.headers.get('ratelimit')).toMatch(/^"getPrices";r=119;/);
    expect((await res.arrayBuffer()).byteLength).toBe(0);
    const second = await head(pricesPath, bearer(a.key));
    expect(second.headers.get('ratelimit')).toMatch(/^"getPrices";r=118;/);
    expect(await ledger(a.id)).toMatchObject({ used: 0, charged: 0 });
  });

  it('HEAD /prices/export: ETag, length and encoding of the file, no body, never billed', async () => {
    const a = await account(0n);
    const res = await head('/prices/export', bearer(a.key));
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(etag);
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(Number(res.headers.get('content-length'))).toBeGreaterThan(0);
    expect(res.headers.get('x-billable')).toBe('false');
    expect(res.headers.get('x-credit-cost')).toBeNull();
    expect((await res.arrayBuffer()).byteLength).toBe(0);
    expect(await ledger(a.id)).toMatchObject({ used: 0, charged: 0 });
  });

  it('HEAD still needs a key and honours the rate limit, except on the export (its headers only, like a 304: issue 44)', async () => {
    expect((await head(pricesPath, {})).status).toBe(401);
    expect((await head('/prices/export', {})).status).toBe(401);
    const a = await account(0n);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await head('/prices/export', bearer(a.key))).status);
    expect(statuses).toEqual([200, 200, 200]);
    // HEAD /prices costs its GET's work: it counts (120 per 60 s), as the RateLimit header shows.
    const p = await head(pricesPath, bearer(a.key));
    expect(p.headers.get('ratelimit')).toMatch(/^"getPrices";r=119;/);
  });
});

describe('a file is paid for when it is delivered', () => {
  /** Publishes a synthetic snapshot of `chunks` random chunks of 64 KiB as the current ask export. */
  async function bigSnapshot(chunks: number): Promise<{ buildId: string; size: number }> {
    const size = chunks * 65536;
    const [{ id }] = (await t.db.query<{ id: string }>(
      `INSERT INTO export_build (app_id, side, etag, items_sha256, generated_at, build_ms, byte_size, item_count, quote_count, complete)
       VALUES ('730', 'ask', $1, $2, now(), 1, $3, 1, 1, true) RETURNING id::text AS id`,
      [`"synthetic-${crypto.randomUUID()}"`, 'f'.repeat(64), size],
    )) as [{ id: string }];
    // 64 KiB chunks made by the database itself.
    await t.db.query(`INSERT INTO export_chunk (build_id, seq, bytes) SELECT $1, g, decode(repeat(md5(g::text), 4096), 'hex') FROM generate_series(0, $2 - 1) g`, [id, chunks]);
    await t.db.query(`UPDATE export_current SET build_id = $1 WHERE app_id = '730' AND side = 'ask' AND format = 'json'`, [id]);
    // Published as the builder publishes: the replicas' snapshot caches hear it.
    await t.db.notify('qg_exports', '730');
    return { buildId: id, size };
  }

  it('a read error half-way refunds the 10 credits (ledger row refund); a whole download stays paid', async () => {
    const previous = (await currentSnapshot(t.db, '730', 'ask'))!.buildId;
    const { size } = await bigSnapshot(16);
    try {
      const a = await account(30n);
      const res = await t.app.fetch(new Request('http://test/prices/export', { headers: bearer(a.key) }));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-credit-remaining')).toBe('20');
      const reader = res.body!.getReader();
      expect((await reader.read()).done).toBe(false);
      // The stored chunks become unreadable mid-download (a read error of the database).
      await t.db.query(`ALTER TABLE export_chunk RENAME TO export_chunk_away`);
      let failed = false;
      try {
        for (;;) if ((await reader.read()).done) break;
      } catch {
        failed = true;
      } finally {
        await t.db.query(`ALTER TABLE export_chunk_away RENAME TO export_chunk`);
      }
      expect(failed).toBe(true);
      await expect.poll(async () => (await ledger(a.id)).refunds).toBe(1);
      expect(await ledger(a.id)).toEqual({ used: 0, charged: 10, refunded: 10, refunds: 1 });

      // The whole file: paid, no refund.
      const b = await account(30n);
      const whole = await t.app.fetch(new Request('http://test/prices/export', { headers: bearer(b.key) }));
      expect((await whole.arrayBuffer()).byteLength).toBe(size);
      expect(await ledger(b.id)).toEqual({ used: 10, charged: 10, refunded: 0, refunds: 0 });

      // A client that cancels the body half-way: refunded.
      const c = await account(30n);
      const cut = await t.app.fetch(new Request('http://test/prices/export', { headers: bearer(c.key) }));
      const r2 = cut.body!.getReader();
      await r2.read();
      await r2.cancel();
      await expect.poll(async () => (await ledger(c.id)).refunds).toBe(1);
      expect(await ledger(c.id)).toEqual({ used: 0, charged: 10, refunded: 10, refunds: 1 });
    } finally {
      await t.db.query(`UPDATE export_current SET build_id = $1 WHERE app_id = '730' AND side = 'ask' AND format = 'json'`, [previous]);
      await t.db.notify('qg_exports', '730');
    }
  });
});

describe('a batch of 100 names or more is streamed and paid on delivery', () => {
  // 300 items with an ask and a bid each: a 1,000-name answer of about 800 KB, loaded and written 50 names at a time.
  const NAMES = Array.from({ length: 300 }, (_, i) => `Streamed Item ${i}`);
  const request = Array.from({ length: 1000 }, (_, i) => (i % 7 === 6 ? `unknown ${i}` : NAMES[i % NAMES.length]!));
  const batch = (key: string, names: string[]) =>
    t.app.fetch(new Request('http://test/prices/batch', { method: 'POST', headers: { ...bearer(key), 'Content-Type': 'application/json' }, body: JSON.stringify({ market_hash_names: names }) }));
  beforeAll(async () => {
    await ingestQuotes(
      t.db,
      NAMES.flatMap((n, i) => [obs(n, { price: `${10 + i}.5` }), obs(n, { side: 'bid', price: `${9 + i}.25` })]),
    );
  });

  it('the whole answer: every name in request order, the same quotes as unstreamed batches, 10 credits paid', async () => {
    const a = await account(100n);
    const res = await batch(a.key, request);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBeNull();
    const body = await res.json();
    expect(body.meta).toMatchObject({ billable: true, credit: { cost: 10, remaining: 90 } });
    expect(body.data.items.map((x: { market_hash_name: string }) => x.market_hash_name)).toEqual(request);
    // The same names in batches of 99 (answered whole, not streamed): the same items.
    const whole: unknown[] = [];
    for (let i = 0; i < request.length; i += 99) {
      const r = await batch(a.key, request.slice(i, i + 99));
      whole.push(...(await r.json()).data.items);
    }
    expect(body.data.items).toEqual(whole);
    expect(body.data.items[0].markets.map((q: { side: string; market_price_amount: string }) => [q.side, q.market_price_amount])).toEqual([
      ['ask', '10.5'],
      ['bid', '9.25'],
    ]);
    expect(body.data.items[6].markets).toEqual([]);
    expect((await ledger(a.id)).refunds).toBe(0);
  });

  it('a database failure half-way cuts the answer short and refunds its 10 credits; a client that cancels is refunded', async () => {
    const a = await account(100n);
    await t.db.notify('qg_quotes', '730'); // the replica's quote cache dropped: every block is read from the database
    const res = await batch(a.key, request);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    await t.db.query(`ALTER TABLE source_quote RENAME TO source_quote_away`);
    let failed = false;
    let text = '';
    try {
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        text += Buffer.from(r.value).toString('utf8');
      }
    } catch {
      failed = true;
    } finally {
      await t.db.query(`ALTER TABLE source_quote_away RENAME TO source_quote`);
    }
    expect(failed).toBe(true);
    expect(() => JSON.parse(text)).toThrow(); // never mistaken for a whole answer
    await expect.poll(async () => (await ledger(a.id)).refunds).toBe(1);
    expect(await ledger(a.id)).toEqual({ used: 0, charged: 10, refunded: 10, refunds: 1 });

    const c = await account(100n);
    const cut = await batch(c.key, request);
    const r2 = cut.body!.getReader();
    await r2.read();
    await r2.cancel();
    await expect.poll(async () => (await ledger(c.id)).refunds).toBe(1);
    expect(await ledger(c.id)).toEqual({ used: 0, charged: 10, refunded: 10, refunds: 1 });
  });
});

describe('/metrics is not public', () => {
  it('without METRICS_TOKEN the API face has no /metrics at all (404 route_not_found)', async () => {
    expectError(await t.get('/metrics'), 404, 'route_not_found');
  });
});

describe('the credential is checked before the arguments', () => {
  it('REST: a bad parameter without a key is 401, with a key 422', async () => {
    expectError(await t.get('/prices?side=sideways'), 401, 'unauthorized');
    expectError(await t.post('/prices/batch', '{', {}), 401, 'unauthorized');
    const a = await account(1n);
    expectError(await t.get('/prices?side=sideways', bearer(a.key)), 422, 'validation_failed');
  });

  it('GraphQL: an anonymous sync mutation with a bad id is 401, an API key 403, never the validation rules', async () => {
    const q = `mutation { syncSetCreditTotal(userId: "", total: "5") { userId } }`;
    const anon = await t.gql(q);
    expect(anon.body.errors[0].extensions.code).toBe('unauthorized');
    const a = await account(1n);
    const user = await t.gql(q, {}, bearer(a.key));
    expect(user.body.errors[0].extensions.code).toBe('forbidden');
    const metered = await t.gql(`{ batchPrices(marketHashNames: []) { appId } }`);
    expect(metered.body.errors[0].extensions.code).toBe('unauthorized');
  });

  it('a REST answer after all this is still the spec envelope', async () => {
    const a = await account(2n);
    expectEnvelope(await t.get(pricesPath, bearer(a.key)));
  });
});
