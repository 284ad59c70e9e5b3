/**
 * CSFloat adapter against CSFloat's documented listings example (fixtures/csfloat, see PROVENANCE.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { csfloatSource } from '../../src/collectors/sources/csfloat.js';
import { UpstreamError } from '../../src/collectors/source.js';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';

const EXAMPLE = fs.readFileSync(path.join(import.meta.dirname, 'fixtures/csfloat/listings_docs_example.json'), 'utf8');
const WRAPPED = `{"data": ${EXAMPLE}, "cursor": "abc"}`;
const LISTINGS = '/api/v1/listings';
const NAME = 'M4A4 | Poseidon (Factory New)';
const KEY = 'test-api-key';

let up: LocalUpstream | undefined;
afterEach(async () => {
  await up?.close();
  up = undefined;
});

const run = (watchlist: string[], credential: string | null = KEY) => collectAll(csfloatSource.collect(bareContext(up!.url, { credential, watchlist })));

async function kindOf(p: Promise<unknown>): Promise<[string, string]> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(UpstreamError);
  return [(err as UpstreamError).kind, (err as UpstreamError).message];
}

const ask = (price: string | null, extra: object = {}) => ({
  marketHashName: NAME, marketCode: 'CSFLOAT', side: 'ask', currencyCode: 'USD', price, quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null, ...extra,
});

describe('csfloat adapter', () => {
  it('asks the lowest buy-now listing per watched item with the API key and scales cents exactly', async () => {
    up = await startUpstream([{ path: LISTINGS, body: EXAMPLE }]);
    expect(await run([NAME])).toEqual([ask('2600')]);
    expect(up.requests).toHaveLength(1);
    expect(up.requests[0]!.path).toBe('/api/v1/listings?market_hash_name=M4A4%20%7C%20Poseidon%20(Factory%20New)&type=buy_now&sort_by=lowest_price&limit=1');
    expect(up.requests[0]!.headers.authorization).toBe(KEY);
  });

  it('reads the {"data": [...]} envelope too, and keeps odd cents exact', async () => {
    up = await startUpstream([{ path: LISTINGS, body: WRAPPED.replace('"price": 260000', '"price": 123456789012345') }]);
    expect(await run([NAME])).toEqual([ask('1234567890123.45')]);
  });

  it('is a partial (watch list) source of CSFLOAT asks keyed by CSFLOAT_API_KEY', () => {
    expect(csfloatSource).toMatchObject({ id: 'csfloat', providerCode: 'CSFLOAT', markets: ['CSFLOAT'], completeListing: false, credentialEnv: 'CSFLOAT_API_KEY' });
  });

  it('without a credential throws not_configured and never calls CSFloat', async () => {
    up = await startUpstream([{ path: LISTINGS, body: EXAMPLE }]);
    expect((await kindOf(run([NAME], null)))[0]).toBe('not_configured');
    expect(up.requests).toHaveLength(0);
  });

  it('reports an item with no listing as delisted', async () => {
    up = await startUpstream([{ path: LISTINGS, body: '{"data": [], "cursor": null}' }]);
    expect(await run([NAME])).toEqual([ask(null, { delisted: true })]);
  });

  it('ignores an unknown field', async () => {
    up = await startUpstream([{ path: LISTINGS, body: EXAMPLE.replace('"price": 260000,', '"price": 260000, "brand_new": {"x": [1.5]},') }]);
    expect(await run([NAME])).toEqual([ask('2600')]);
  });

  it('fails loudly with format when price or item.market_hash_name is renamed', async () => {
    up = await startUpstream([{ path: LISTINGS, body: EXAMPLE.replace('"price": 260000', '"price_cents": 260000') }]);
    expect(await kindOf(run([NAME]))).toEqual(['format', expect.stringMatching(/price/)]);
    up.route({ path: LISTINGS, body: EXAMPLE.replace('"market_hash_name"', '"hash_name"') });
    expect(await kindOf(run([NAME]))).toEqual(['format', expect.stringMatching(/market_hash_name/)]);
  });

  it('fails with format when the answer is about another item (the filter ignored) or a price is not integer cents', async () => {
    up = await startUpstream([{ path: LISTINGS, body: EXAMPLE }]);
    expect(await kindOf(run(['AK-47 | Redline (Field-Tested)']))).toEqual(['format', expect.stringMatching(/filter ignored/)]);
    up.route({ path: LISTINGS, body: EXAMPLE.replace('"price": 260000', '"price": 2600.5') });
    expect((await kindOf(run([NAME])))[0]).toBe('format');
  });

  it('fails with format on HTML instead of JSON, a truncated body and an error object', async () => {
    up = await startUpstream([{ path: LISTINGS, body: EXAMPLE }]);
    for (const mode of ['html', 'truncated', 'error-object'] as const) {
      up.play(LISTINGS, mode);
      expect((await kindOf(run([NAME])))[0], mode).toBe('format');
    }
  });
});
