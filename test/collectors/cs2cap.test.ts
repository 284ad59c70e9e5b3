/**
 * CS2Cap adapter against CS2Cap's documented stream examples (fixtures/cs2cap, see PROVENANCE.md). The documented
 * stream lines are of other providers (avanmarket, buff163, c5, steam, csfloat); the one documented row of a market
 * this source reports is the DMarket bid of the `GET /v1/bids` example, which has exactly the fields of a bids stream
 * line. The tests change only a documented line's `provider` key to exercise the other markets' mapping, and say so.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CS2CAP_BIDS_PATH, CS2CAP_PRICES_PATH, MAX_LINE_CHARS, cs2capSource, ndjsonObjects } from '../../src/collectors/sources/cs2cap.js';
import { UpstreamError, type RawQuote } from '../../src/collectors/source.js';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';

const FIX = (f: string) => fs.readFileSync(path.join(import.meta.dirname, 'fixtures/cs2cap', f), 'utf8');
/** prices.mdx's three stream lines: avanmarket, buff163, c5 ('Blueberries' Buckshot | NSWC SEAL). */
const PRICES_DOC = FIX('prices_stream_docs_example.ndjson');
/** openapi.json's stream example: one steam line (AK-47 | Redline (Field-Tested), 2550, quantity 3). */
const PRICES_OPENAPI = FIX('prices_stream_openapi_example.ndjson');
/** bids.mdx's three stream lines: buff163, csfloat (AK-47 | Redline (Field-Tested)), steam. */
const BIDS_DOC = FIX('bids_stream_docs_example.ndjson');
/** bids.mdx's GET /v1/bids example: buff163, steam and dmarket bids of AK-47 | Redline (Field-Tested). */
const BIDS_LIST = JSON.parse(FIX('bids_list_docs_example.json')) as { items: Record<string, unknown>[] };
const DMARKET_BID_LINE = JSON.stringify(BIDS_LIST.items.find((r) => r.provider === 'dmarket'));

const BUCKSHOT = "'Blueberries' Buckshot | NSWC SEAL";
const REDLINE = 'AK-47 | Redline (Field-Tested)';
const KEY = 'test-cs2cap-key';
const NDJSON = 'application/x-ndjson';

/** The documented lines with their provider keys changed to the markets this source reports (nothing else changed). */
const asProvider = (text: string, from: string, to: string) => text.replace(`"provider":"${from}"`, `"provider":"${to}"`);
const PRICES_OURS = [
  ['avanmarket', 'haloskins'],
  ['buff163', 'dmarket'],
  ['c5', 'shadowpay'],
].reduce((t, [a, b]) => asProvider(t, a!, b!), PRICES_DOC) + asProvider(PRICES_OPENAPI, 'steam', 'whitemarket');
const BIDS_OURS = `${asProvider(BIDS_DOC, 'csfloat', 'whitemarket')}${DMARKET_BID_LINE}\n`;

let up: LocalUpstream | undefined;
afterEach(async () => {
  await up?.close();
  up = undefined;
});

const PRICES = CS2CAP_PRICES_PATH.split('?')[0]!;
const BIDS = CS2CAP_BIDS_PATH.split('?')[0]!;
async function serve(prices: string, bids: string, headers: Record<string, string> = { 'X-Snapshot-Currency': 'USD' }): Promise<LocalUpstream> {
  return startUpstream([
    { path: PRICES, body: prices, contentType: NDJSON, headers },
    { path: BIDS, body: bids, contentType: NDJSON, headers },
  ]);
}
const run = (credential: string | null = KEY) => collectAll(cs2capSource.collect(bareContext(up!.url, { credential })));

async function kindOf(p: Promise<unknown>): Promise<[string, string]> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(UpstreamError);
  return [(err as UpstreamError).kind, (err as UpstreamError).message];
}

const ask = (name: string, market: string, price: string, quantity: number): RawQuote => ({ marketHashName: name, marketCode: market, side: 'ask', currencyCode: 'USD', price, quantity, isQuantityMinimum: true });
const bid = (name: string, market: string, price: string, quantity: number): RawQuote => ({ marketHashName: name, marketCode: market, side: 'bid', currencyCode: 'USD', price, quantity, isQuantityMinimum: false });

describe('cs2cap adapter', () => {
  it('is a keyed aggregator source (provider CS2CAP) of four markets, never a complete listing', () => {
    expect(cs2capSource).toMatchObject({
      id: 'cs2cap', providerCode: 'CS2CAP', markets: ['DMARKET', 'HALOSKINS', 'SHADOWPAY', 'WHITEMARKET'], completeListing: false, credentialEnv: 'CS2CAP_API_KEY', defaultBaseUrl: 'https://api.cs2c.app',
    });
    expect(cs2capSource.perItem).toBeFalsy();
  });

  it('streams both snapshots with the key as a Bearer token, asking only its providers; documented lines of other providers give no row', async () => {
    up = await serve(PRICES_DOC + PRICES_OPENAPI, BIDS_DOC);
    expect(await run()).toEqual([]);
    expect(up.requests.map((r) => [r.path, r.headers.authorization])).toEqual([
      ['/v1/prices?providers=dmarket&providers=haloskins&providers=shadowpay&providers=whitemarket', `Bearer ${KEY}`],
      ['/v1/bids?providers=dmarket&providers=whitemarket', `Bearer ${KEY}`],
    ]);
  });

  it('maps asks (minor units / 100, exact) and bids of its markets; the documented DMarket bid', async () => {
    up = await serve(PRICES_OURS, BIDS_OURS);
    expect(await run()).toEqual([
      ask(BUCKSHOT, 'HALOSKINS', '34.6', 6),
      ask(BUCKSHOT, 'DMARKET', '31.87', 84),
      ask(BUCKSHOT, 'SHADOWPAY', '31.56', 57),
      ask(REDLINE, 'WHITEMARKET', '25.5', 3),
      bid(REDLINE, 'WHITEMARKET', '29.46', 2),
      bid(REDLINE, 'DMARKET', '30.81', 310),
    ]);
  });

  it('reads a stream without the currency header as USD (documented) and fails one in another currency', async () => {
    up = await serve(PRICES_OURS, BIDS_OURS, {});
    expect((await run()).every((q) => q.currencyCode === 'USD')).toBe(true);
    await up.close();
    up = await serve(PRICES_OURS, BIDS_OURS, { 'X-Snapshot-Currency': 'EUR' });
    expect(await kindOf(run())).toEqual(['format', expect.stringMatching(/X-Snapshot-Currency EUR/)]);
  });

  it('skips Doppler phase rows, reports a null lowest_ask or quantity 0 delisted, gives no bid row for a null highest_bid', async () => {
    const lines = PRICES_OURS.split('\n');
    const prices = [
      lines[0]!.replace('"phase":null', '"phase":"Sapphire"'),
      lines[1]!.replace('"lowest_ask":3187', '"lowest_ask":null'),
      lines[2]!.replace('"quantity":57', '"quantity":0'),
    ].join('\n');
    up = await serve(prices, DMARKET_BID_LINE.replace('"highest_bid":3081', '"highest_bid":null'));
    const delisted = { price: null, quantity: 0, isQuantityMinimum: false, delisted: true };
    expect(await run()).toEqual([{ ...ask(BUCKSHOT, 'DMARKET', '0', 0), ...delisted }, { ...ask(BUCKSHOT, 'SHADOWPAY', '0', 0), ...delisted }]);
  });

  it('keeps large minor-unit amounts exact and ignores unknown fields, blank lines and CRLF', async () => {
    const line = PRICES_OURS.split('\n')[1]!.replace('"lowest_ask":3187', '"lowest_ask":123456789012345678').replace('"link"', '"lowest_ask_decimal":"x","brand_new":{"a":[1.5]},"link"');
    up = await serve(`\r\n${line}\r\n\r\n`, BIDS_OURS);
    expect((await run())[0]).toEqual(ask(BUCKSHOT, 'DMARKET', '1234567890123456.78', 84));
  });

  it('without a credential throws not_configured and never calls CS2Cap', async () => {
    up = await serve(PRICES_OURS, BIDS_OURS);
    expect((await kindOf(run(null)))[0]).toBe('not_configured');
    expect(up.requests).toHaveLength(0);
  });

  it('fails loudly with format when a field is renamed, a price is not integer minor units or a count not a count', async () => {
    for (const [prices, bids, pattern] of [
      [PRICES_OURS.replace('"lowest_ask"', '"lowest_price"'), BIDS_OURS, /lowest_ask missing/],
      [PRICES_OURS.replace('"market_hash_name"', '"name"'), BIDS_OURS, /market_hash_name missing/],
      [PRICES_OURS, BIDS_OURS.replace('"num_bids"', '"bids"'), /num_bids missing/],
      [PRICES_OURS.replace('"lowest_ask":3187', '"lowest_ask":31.87'), BIDS_OURS, /not an integer in minor units/],
      [PRICES_OURS.replace('"lowest_ask":3187', '"lowest_ask":"3187"'), BIDS_OURS, /not an integer in minor units/],
      [PRICES_OURS.replace('"quantity":84', '"quantity":-1'), BIDS_OURS, /not a count/],
    ] as const) {
      up = await serve(prices, bids);
      expect(await kindOf(run())).toEqual(['format', expect.stringMatching(pattern)]);
      await up.close();
      up = undefined;
    }
  });

  it('fails with format on HTML, a truncated body, an error object, an empty prices snapshot and a line that is not JSON', async () => {
    up = await serve(PRICES_OURS, BIDS_OURS);
    for (const mode of ['html', 'truncated', 'error-object'] as const) {
      up.play(PRICES, mode);
      expect((await kindOf(run()))[0], mode).toBe('format');
    }
    up.play(PRICES, null);
    up.play(BIDS, 'truncated');
    expect((await kindOf(run()))[0], 'truncated bids').toBe('format');
    up.play(BIDS, null);
    up.route({ path: PRICES, body: '', contentType: NDJSON });
    expect(await kindOf(run())).toEqual(['format', expect.stringMatching(/empty snapshot/)]);
    up.route({ path: PRICES, body: `${PRICES_OURS}[1,2]\n`, contentType: NDJSON });
    expect(await kindOf(run())).toEqual(['format', expect.stringMatching(/line 5 is not a JSON object/)]);
    up.route({ path: PRICES, body: PRICES_OURS.slice(0, -40), contentType: NDJSON });
    expect(await kindOf(run())).toEqual(['format', expect.stringMatching(/line 4 is not JSON/)]);
  });
});

describe('ndjsonObjects', () => {
  /** A response whose body arrives in `size`-byte chunks. */
  const chunked = (bytes: Uint8Array, size: number, type = NDJSON) =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < bytes.length; i += size) c.enqueue(bytes.subarray(i, i + size));
          c.close();
        },
      }),
      { headers: { 'Content-Type': type } },
    );

  it('reads the same rows whatever the chunk boundaries (inside numbers and multi-byte characters), numbers as source text', async () => {
    const text = `\uFEFF${PRICES_DOC}{"provider":"dmarket","market_hash_name":"★ Karambit | Doppler (Factory New)","phase":"Ruby","lowest_ask":531143,"quantity":158}`;
    const bytes = new TextEncoder().encode(text);
    const whole = await collectAll(ndjsonObjects(chunked(bytes, bytes.length), 'test'));
    expect(whole).toHaveLength(4);
    expect(whole[3]!.market_hash_name).toBe('★ Karambit | Doppler (Factory New)');
    expect(String((whole[0]!.lowest_ask as { value: string }).value)).toBe('3460');
    for (const size of [1, 2, 3, 7]) {
      const rows = await collectAll(ndjsonObjects(chunked(bytes, size), 'test'));
      expect(JSON.stringify(rows), `chunks of ${size}`).toBe(JSON.stringify(whole));
    }
  });

  it('fails with format on invalid UTF-8, HTML and a line longer than the limit', async () => {
    const bad = new Uint8Array([...new TextEncoder().encode('{"provider":"'), 0xff, ...new TextEncoder().encode('"}\n')]);
    expect((await kindOf(collectAll(ndjsonObjects(chunked(bad, 4), 'test'))))[1]).toMatch(/UTF-8/);
    const html = new TextEncoder().encode('<!DOCTYPE html><html></html>');
    expect((await kindOf(collectAll(ndjsonObjects(chunked(html, 8, 'text/plain'), 'test'))))[1]).toMatch(/HTML/);
    expect((await kindOf(collectAll(ndjsonObjects(chunked(html, 8, 'text/html'), 'test'))))[1]).toMatch(/HTML/);
    const long = new TextEncoder().encode(`[${'1,'.repeat(MAX_LINE_CHARS / 2)}1]`);
    expect((await kindOf(collectAll(ndjsonObjects(chunked(long, 65536), 'test'))))[1]).toMatch(/longer than/);
  });
});
