/**
 * C5GAME adapter against C5GAME's documented batch price example (fixtures/c5game, see PROVENANCE.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { C5GAME_BATCH, c5gameSource } from '../../src/collectors/sources/c5game.js';
import { UpstreamError, type SourceContext } from '../../src/collectors/source.js';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';

const EXAMPLE = fs.readFileSync(path.join(import.meta.dirname, 'fixtures/c5game/price_batch_docs_example.json'), 'utf8');
const BATCH = '/merchant/product/price/batch';
const NAME = 'M4A4 | Temukau (Minimal Wear)';
const KEY = 'test-app-key';

/** The bare context of upstream.ts with this test's key and watched name by default. */
function postContext(baseUrl: string, opts: { credential?: string | null; watchlist?: string[] } = {}): SourceContext {
  return bareContext(baseUrl, { credential: opts.credential === undefined ? KEY : opts.credential, watchlist: opts.watchlist ?? [NAME] });
}

let up: LocalUpstream | undefined;
afterEach(async () => {
  await up?.close();
  up = undefined;
});

async function kindOf(p: Promise<unknown>): Promise<[string, string]> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(UpstreamError);
  return [(err as UpstreamError).kind, (err as UpstreamError).message];
}

const row = (price: string | null, quantity: number, extra: object = {}) => ({
  marketHashName: NAME, marketCode: 'C5GAME', side: 'ask', currencyCode: 'CNY', price, quantity, isQuantityMinimum: false, isAllItemsSamePrice: null, ...extra,
});

describe('c5game adapter', () => {
  it('posts the watched names with the app-key header and maps price and count exactly (CNY)', async () => {
    const bodies: { method?: string; key?: string; body: string }[] = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push({ method: req.method, key: req.headers['app-key'] as string | undefined, body });
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(EXAMPLE);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const rows = await collectAll(c5gameSource.collect(postContext(url, { watchlist: [NAME, 'Unknown Item'] })));
      expect(rows).toEqual([row('391', 104)]);
      expect(bodies).toEqual([{ method: 'POST', key: KEY, body: JSON.stringify({ appId: '730', marketHashNames: [NAME, 'Unknown Item'] }) }]);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it(`asks ${C5GAME_BATCH} names a request`, async () => {
    up = await startUpstream([{ path: BATCH, body: EXAMPLE }]);
    const names = Array.from({ length: C5GAME_BATCH + 1 }, (_, i) => (i === 0 ? NAME : `Item ${i}`));
    const rows = await collectAll(c5gameSource.collect(postContext(up.url, { watchlist: names })));
    expect(up.requests).toHaveLength(2);
    expect(rows).toEqual([row('391', 104)]);
  });

  it('is a partial (watch list) source of C5GAME asks keyed by C5GAME_APP_KEY', () => {
    expect(c5gameSource).toMatchObject({ id: 'c5game', providerCode: 'C5GAME', markets: ['C5GAME'], completeListing: false, credentialEnv: 'C5GAME_APP_KEY' });
  });

  it('without a credential throws not_configured and never calls C5GAME', async () => {
    up = await startUpstream([{ path: BATCH, body: EXAMPLE }]);
    expect((await kindOf(collectAll(c5gameSource.collect(postContext(up.url, { credential: null })))))[0]).toBe('not_configured');
    expect(up.requests).toHaveLength(0);
  });

  it('keeps a decimal price as its source text and reports count 0 as delisted', async () => {
    up = await startUpstream([{ path: BATCH, body: EXAMPLE.replace('"price": 391', '"price": 365.50') }]);
    expect(await collectAll(c5gameSource.collect(postContext(up.url)))).toEqual([row('365.50', 104)]);
    up.route({ path: BATCH, body: EXAMPLE.replace('"count": 104', '"count": 0') });
    expect(await collectAll(c5gameSource.collect(postContext(up.url)))).toEqual([row(null, 0, { delisted: true })]);
  });

  it('ignores an unknown field', async () => {
    up = await startUpstream([{ path: BATCH, body: EXAMPLE.replace('"count": 104,', '"count": 104, "brand_new": [1.5],') }]);
    expect(await collectAll(c5gameSource.collect(postContext(up.url)))).toEqual([row('391', 104)]);
  });

  it('fails loudly with format when price or count is renamed', async () => {
    up = await startUpstream([{ path: BATCH, body: EXAMPLE.replace('"price"', '"minPrice"') }]);
    expect(await kindOf(collectAll(c5gameSource.collect(postContext(up.url))))).toEqual(['format', expect.stringMatching(/price/)]);
    up.route({ path: BATCH, body: EXAMPLE.replace('"count"', '"sellCount"') });
    expect(await kindOf(collectAll(c5gameSource.collect(postContext(up.url))))).toEqual(['format', expect.stringMatching(/count/)]);
  });

  it('fails with format on an error answer, HTML instead of JSON and a truncated body', async () => {
    up = await startUpstream([{ path: BATCH, body: EXAMPLE.replace('"success": true', '"success": false').replace('"errorMsg": null', '"errorMsg": "app-key invalid"') }]);
    expect(await kindOf(collectAll(c5gameSource.collect(postContext(up.url))))).toEqual(['format', expect.stringMatching(/app-key invalid/)]);
    up.route({ path: BATCH, body: EXAMPLE });
    for (const mode of ['html', 'truncated', 'error-object'] as const) {
      up.play(BATCH, mode);
      expect((await kindOf(collectAll(c5gameSource.collect(postContext(up.url)))))[0], mode).toBe('format');
    }
  });
});
