/**
 * The Skinport adapter (src/collectors/sources/skinport.ts) against Skinport's own documented example answer of
 * `GET /v1/items` (test/collectors/fixtures/skinport, with its PROVENANCE) served by the local upstream, brotli
 * encoded as Skinport serves it, and the upstream's failures: HTML instead of JSON, a truncated body, a 200 with
 * an error object, a renamed field, an unknown field.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SKINPORT_INTERVAL_SECONDS, SKINPORT_ITEMS_PATH, skinportSource } from '../../src/collectors/sources/skinport.js';
import { UpstreamError, type RawQuote } from '../../src/collectors/source.js';
import { projectRoot } from '../../src/lib/paths.js';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';

const FIXTURE = path.join(projectRoot, 'test/collectors/fixtures/skinport/items-docs-example.json');
const TEXT = fs.readFileSync(FIXTURE, 'utf8');
const PATH = '/v1/items';

let up: LocalUpstream;

beforeAll(async () => {
  up = await startUpstream([{ path: PATH, file: FIXTURE }]);
});
afterAll(async () => {
  await up.close();
});

/** Serves `body` (default: the fixture) brotli-encoded, as Skinport does, and collects one run. */
const run = (body: string = TEXT) => {
  up.route({ path: PATH, body: zlib.brotliCompressSync(Buffer.from(body, 'utf8')), headers: { 'Content-Encoding': 'br' } });
  return collectAll(skinportSource.collect(bareContext(up.url)));
};

async function expectFormatError(p: Promise<unknown>, reason: RegExp): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamError);
  expect((err as UpstreamError).kind).toBe('format');
  expect((err as UpstreamError).message).toMatch(reason);
}

const EXPECTED: RawQuote[] = [
  {
    marketHashName: 'AK-47 | Aquamarine Revenge (Battle-Scarred)',
    marketCode: 'SKINPORT',
    side: 'ask',
    currencyCode: 'EUR',
    price: '11.33',
    quantity: 25,
    isQuantityMinimum: false,
    isAllItemsSamePrice: false,
  },
  {
    marketHashName: '★ M9 Bayonet | Fade (Factory New)',
    marketCode: 'SKINPORT',
    side: 'ask',
    currencyCode: 'EUR',
    price: null,
    quantity: 0,
    isQuantityMinimum: false,
    isAllItemsSamePrice: null,
    delisted: true,
  },
];

describe('skinport /v1/items (documented example)', () => {
  it('maps min_price and quantity to the SKINPORT ask in EUR; a sold-out item is a delisting', async () => {
    const rows = await run();
    expect(rows).toEqual(EXPECTED);
    const req = up.requests.at(-1)!;
    expect(req.path).toBe(SKINPORT_ITEMS_PATH);
    expect(new URL(req.path, 'http://x').searchParams.get('app_id')).toBe('730');
    expect(new URL(req.path, 'http://x').searchParams.get('currency')).toBe('EUR');
    expect(String(req.headers['accept-encoding'])).toContain('br');
  });

  it('reads an uncompressed body the same way', async () => {
    up.route({ path: PATH, file: FIXTURE });
    expect(await collectAll(skinportSource.collect(bareContext(up.url)))).toEqual(EXPECTED);
  });

  it('every listing at one price: isAllItemsSamePrice true; another currency is reported as given', async () => {
    const one = TEXT.replace('"max_price": 18.22', '"max_price": 11.330').replace('"currency": "EUR",  ', '"currency": "USD",');
    const [row] = await run(one);
    expect(row).toMatchObject({ price: '11.33', isAllItemsSamePrice: true, currencyCode: 'USD' });
  });

  it('ignores unknown extra fields (version, median_price, a new object)', async () => {
    const extra = TEXT.replaceAll('"currency": "EUR",', '"version": null, "median_price": 13.37, "tradable": {"min": 1, "qty": [2]}, "currency": "EUR",');
    expect(extra).not.toBe(TEXT);
    expect(await run(extra)).toEqual(EXPECTED);
  });

  it('fails loudly when a required field is renamed', async () => {
    await expectFormatError(run(TEXT.replaceAll('"min_price"', '"lowest_price"')), /entry 0: no `min_price` field \(renamed upstream\?\)/);
    await expectFormatError(run(TEXT.replaceAll('"quantity"', '"count"')), /no `quantity` field/);
    await expectFormatError(run(TEXT.replaceAll('"market_hash_name"', '"name"')), /no `market_hash_name` field/);
    await expectFormatError(run(TEXT.replace('"quantity": 25', '"quantity": "25"')), /`quantity` is not a number/);
    await expectFormatError(run(TEXT.replace('"min_price": 11.33', '"min_price": {"amount": 11.33}')), /min_price: expected a number or null/);
  });

  it('fails the run with a format error on HTML, a truncated body and a 200 with an error object', async () => {
    up.route({ path: PATH, file: FIXTURE });
    up.play(PATH, 'html');
    await expectFormatError(collectAll(skinportSource.collect(bareContext(up.url))), /HTML instead of JSON/);
    up.play(PATH, 'truncated');
    await expectFormatError(collectAll(skinportSource.collect(bareContext(up.url))), /truncated/);
    up.play(PATH, 'error-object');
    await expectFormatError(collectAll(skinportSource.collect(bareContext(up.url))), /error object instead of the data: \{"success":false,"error":"Internal error, try again later"\}/);
    up.play(PATH, null);
    // Skinport's own error shape, and a body cut after a whole entry.
    await expectFormatError(run('{"errors":[{"id":"validation_error","message":"Invalid currency"}]}'), /error object.*Invalid currency/);
    await expectFormatError(run(TEXT.slice(0, TEXT.indexOf('},') + 2)), /truncated/);
    await expectFormatError(run('<html><body>Access denied</body></html>'), /not valid JSON/);
  });

  it('a 429 is the runner context\'s http error (the runner honours Retry-After)', async () => {
    up.play(PATH, '429', { times: 1, retryAfterSeconds: 60 });
    const err = await collectAll(skinportSource.collect(bareContext(up.url))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).kind).toBe('http');
    expect((err as UpstreamError).status).toBe(429);
  });

  it('is a complete listing of SKINPORT, direct data, run every 5 minutes within 8 requests per 5 minutes', () => {
    expect(skinportSource).toMatchObject({ id: 'skinport', providerCode: 'SKINPORT', markets: ['SKINPORT'], completeListing: true, defaultBaseUrl: 'https://api.skinport.com' });
    expect(SKINPORT_INTERVAL_SECONDS).toBe(300);
    expect(skinportSource.limits.requestsPerMinute * 5).toBeLessThanOrEqual(8);
  });
});
