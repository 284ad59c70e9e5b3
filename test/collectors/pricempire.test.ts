/**
 * Pricempire adapter (BitSkins' asks) against Pricempire's documented single-item example (fixtures/pricempire, see
 * PROVENANCE.md). The example's prices are of 2022-12-01: tests that expect a row run with the clock of that day, or
 * date the example's `createdAt` to the run, as noted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pricempireItemPath, pricempireSource, PRICEMPIRE_MAX_AGE_MS } from '../../src/collectors/sources/pricempire.js';
import { UpstreamError } from '../../src/collectors/source.js';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';

const EXAMPLE = fs.readFileSync(path.join(import.meta.dirname, 'fixtures/pricempire/item_docs_example.json'), 'utf8');
const NAME = 'StatTrak™ USP-S | Cyrex (Field-Tested)';
const KEY = 'test-pricempire-key';
/** The example's BitSkins price was seen at 2022-12-01T17:54:03.700Z; a run an hour later. */
const THEN = new Date('2022-12-01T18:54:00Z');
const ITEM_PATH = `/v2/items/${encodeURIComponent(NAME)}`;

let up: LocalUpstream | undefined;
afterEach(async () => {
  await up?.close();
  up = undefined;
});

const run = (watchlist: string[], opts: { credential?: string | null; now?: Date } = {}) =>
  collectAll(pricempireSource.collect(bareContext(up!.url, { credential: opts.credential === undefined ? KEY : opts.credential, watchlist, now: opts.now ?? THEN })));

async function kindOf(p: Promise<unknown>): Promise<[string, string]> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(UpstreamError);
  return [(err as UpstreamError).kind, (err as UpstreamError).message];
}

/** BitSkins' `createdAt` in the documented example: each row's own observation time. */
const SEEN_AT = new Date('2022-12-01T17:54:03.700Z');

const ask = (price: string, quantity: number) => ({
  marketHashName: NAME, marketCode: 'BITSKINS', side: 'ask', currencyCode: 'USD', price, quantity, isQuantityMinimum: false, isAllItemsSamePrice: null,
  observedAt: SEEN_AT,
});

describe('pricempire adapter', () => {
  it("reads BitSkins' ask (cents, exactly) and listing count of each watched item, with the key in api_key and USD asked", async () => {
    up = await startUpstream([{ path: ITEM_PATH, body: EXAMPLE }]);
    expect(await run([NAME])).toEqual([ask('2.69', 78)]);
    expect(up.requests.map((r) => r.path)).toEqual([pricempireItemPath(NAME, KEY)]);
    expect(up.requests[0]!.path).toBe('/v2/items/StatTrak%E2%84%A2%20USP-S%20%7C%20Cyrex%20(Field-Tested)?api_key=test-pricempire-key&currency=USD');
  });

  it('reads the schema\'s flat shape (no "item" wrapper) too, and keeps large cents exact', async () => {
    const doc = JSON.parse(EXAMPLE) as { status: boolean; item: Record<string, unknown> };
    const flat = JSON.stringify({ status: doc.status, ...doc.item }).replace('"price":269', '"price":123456789012345');
    up = await startUpstream([{ path: ITEM_PATH, body: flat }]);
    expect(await run([NAME])).toEqual([ask('1234567890123.45', 78)]);
  });

  it('gives no row for a price older than two days (a market that stopped trading is never served as fresh), nor for an item without a bitskins entry', async () => {
    up = await startUpstream([{ path: ITEM_PATH, body: EXAMPLE }]);
    const seen = Date.parse('2022-12-01T17:54:03.700Z');
    expect(await run([NAME], { now: new Date(seen + PRICEMPIRE_MAX_AGE_MS) })).toEqual([ask('2.69', 78)]);
    expect(await run([NAME], { now: new Date(seen + PRICEMPIRE_MAX_AGE_MS + 1000) })).toEqual([]);
    // Today, with the example as documented (2022): nothing.
    expect(await run([NAME], { now: new Date() })).toEqual([]);
    const doc = JSON.parse(EXAMPLE) as { item: { prices: Record<string, unknown> } };
    delete doc.item.prices.bitskins;
    up.route({ path: ITEM_PATH, body: JSON.stringify(doc) });
    expect(await run([NAME])).toEqual([]);
  });

  it('skips an item Pricempire does not know (404) and goes on with the next', async () => {
    const other = 'AK-47 | Redline (Field-Tested)';
    up = await startUpstream([{ path: ITEM_PATH, body: EXAMPLE }]); // any other path: 404
    expect(await run([other, NAME])).toEqual([ask('2.69', 78)]);
    expect(up.requests).toHaveLength(2);
  });

  it('is a partial (watch list) source of BITSKINS asks, provider PRICEMPIRE, keyed by PRICEMPIRE_API_KEY', () => {
    expect(pricempireSource).toMatchObject({ id: 'pricempire', providerCode: 'PRICEMPIRE', markets: ['BITSKINS'], completeListing: false, perItem: true, credentialEnv: 'PRICEMPIRE_API_KEY' });
  });

  it('without a credential throws not_configured and never calls Pricempire', async () => {
    up = await startUpstream([{ path: ITEM_PATH, body: EXAMPLE }]);
    expect((await kindOf(run([NAME], { credential: null })))[0]).toBe('not_configured');
    expect(up.requests).toHaveLength(0);
  });

  it('ignores an unknown field', async () => {
    up = await startUpstream([{ path: ITEM_PATH, body: EXAMPLE.replace('"steamVolume": 100,', '"steamVolume": 100, "brand_new": {"x": [1.5]},') }]);
    expect(await run([NAME])).toEqual([ask('2.69', 78)]);
  });

  it('fails loudly with format when prices, price, count or createdAt is renamed, or a price is not integer cents', async () => {
    up = await startUpstream([{ path: ITEM_PATH, body: EXAMPLE }]);
    const cases: [string, string, RegExp][] = [
      ['"prices": {', '"price_list": {', /prices/],
      ['"price": 269,', '"amount": 269,', /price/],
      ['"count": 78,', '"listings": 78,', /count/],
      ['"createdAt": "2022-12-01T17:54:03.700Z"', '"updatedAt": "2022-12-01T17:54:03.700Z"', /createdAt/],
      ['"price": 269,', '"price": 2.69,', /integer cents/],
    ];
    for (const [from, to, message] of cases) {
      up.route({ path: ITEM_PATH, body: EXAMPLE.replace(from, to) });
      expect(await kindOf(run([NAME])), to).toEqual(['format', expect.stringMatching(message)]);
    }
  });

  it('fails with format on status false, an answer about another item, HTML instead of JSON, a truncated body and an error object', async () => {
    up = await startUpstream([{ path: ITEM_PATH, body: EXAMPLE.replace('"status": true', '"status": false') }]);
    expect(await kindOf(run([NAME]))).toEqual(['format', expect.stringMatching(/status false/)]);
    up.route({ path: ITEM_PATH, body: EXAMPLE.replace(`"name": "${NAME}"`, '"name": "AK-47 | Redline (Field-Tested)"') });
    expect(await kindOf(run([NAME]))).toEqual(['format', expect.stringMatching(/answered/)]);
    up.route({ path: ITEM_PATH, body: EXAMPLE });
    for (const mode of ['html', 'truncated', 'error-object'] as const) {
      up.play(ITEM_PATH, mode);
      expect((await kindOf(run([NAME])))[0], mode).toBe('format');
    }
  });

  it('fails the run as http on a 5xx (not a 404: only "Item not found" skips an item; retries are the runner\'s client\'s)', async () => {
    up = await startUpstream([{ path: ITEM_PATH, body: EXAMPLE }]);
    up.play(ITEM_PATH, '500');
    expect(await kindOf(run([NAME]))).toEqual(['http', expect.stringMatching(/500/)]);
  });
});
