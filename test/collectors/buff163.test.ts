/**
 * Buff163 adapter against real recorded goods pages (fixtures/buff163, see PROVENANCE.md) served locally.
 */
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { buff163Source } from '../../src/collectors/sources/buff163.js';
import { UpstreamError } from '../../src/collectors/source.js';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';

const dir = path.join(import.meta.dirname, 'fixtures/buff163');
const page1 = fs.readFileSync(path.join(dir, 'goods_page1.json'), 'utf8');
const page2 = fs.readFileSync(path.join(dir, 'goods_page2.json'), 'utf8');
const COOKIE = 'session=1-abc; csrf_token=xyz';
const GOODS = '/api/market/goods';

/** A local Buff163 that answers by `page_num` (startUpstream routes by path only). */
async function pagedBuff(pages: Record<string, string>): Promise<{ url: string; seen: { url: string; cookie?: string }[]; close(): Promise<void> }> {
  const seen: { url: string; cookie?: string }[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', cookie: req.headers.cookie });
    const u = new URL(req.url ?? '/', 'http://x');
    const body = u.pathname === GOODS ? pages[u.searchParams.get('page_num') ?? ''] : undefined;
    if (body === undefined) return void res.writeHead(404).end('{}');
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let up: LocalUpstream | undefined;
afterEach(async () => {
  await up?.close();
  up = undefined;
});

async function failsWithFormat(run: Promise<unknown>, message: RegExp): Promise<void> {
  const err = await run.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(UpstreamError);
  expect((err as UpstreamError).kind).toBe('format');
  expect((err as UpstreamError).message).toMatch(message);
}

describe('buff163 adapter', () => {
  it('walks every page with the cookie and maps ask and bid as exact CNY strings with counts', async () => {
    const b = await pagedBuff({ '1': page1, '2': page2 });
    try {
      const rows = await collectAll(buff163Source.collect(bareContext(b.url, { credential: COOKIE })));
      expect(b.seen.map((s) => s.url)).toEqual([
        '/api/market/goods?game=csgo&page_num=1&page_size=80',
        '/api/market/goods?game=csgo&page_num=2&page_size=80',
      ]);
      expect(b.seen.every((s) => s.cookie === COOKIE)).toBe(true);
      const common = { marketCode: 'BUFF163', currencyCode: 'CNY', isQuantityMinimum: false, isAllItemsSamePrice: false };
      expect(rows).toEqual([
        { ...common, marketHashName: '★ M9 Bayonet | Night (Field-Tested)', side: 'ask', price: '2349', quantity: 98 },
        { ...common, marketHashName: '★ M9 Bayonet | Night (Field-Tested)', side: 'bid', price: '2240', quantity: 15 },
        { ...common, marketHashName: 'Sealed Genesis Terminal', side: 'ask', price: '1.29', quantity: 14632 },
        { ...common, marketHashName: 'Sealed Genesis Terminal', side: 'bid', price: '1.3', quantity: 5848 },
        // Page 1's sighting (143 listings) wins over page 2's (160): an item seen twice in one walk is reported once.
        { ...common, marketHashName: 'eSports 2013 Winter Case', side: 'ask', price: '129.9', quantity: 143 },
        { ...common, marketHashName: 'eSports 2013 Winter Case', side: 'bid', price: '115', quantity: 57 },
        { ...common, marketHashName: 'Recoil Case', side: 'ask', price: '2.59', quantity: 17237 },
        { ...common, marketHashName: 'Recoil Case', side: 'bid', price: '2.6', quantity: 12352 },
      ]);
    } finally {
      await b.close();
    }
  });

  it('is a complete listing of BUFF163 with provider BUFF163 and its credential in BUFF163_COOKIE', () => {
    expect(buff163Source).toMatchObject({ id: 'buff163', providerCode: 'BUFF163', markets: ['BUFF163'], completeListing: true, credentialEnv: 'BUFF163_COOKIE' });
  });

  it('sends a bare session value as the session cookie', async () => {
    up = await startUpstream([{ path: GOODS, body: page1.replace('"total_page": 2', '"total_page": 1') }]);
    await collectAll(buff163Source.collect(bareContext(up.url, { credential: '1-abc' })));
    expect(up.requests[0]!.headers.cookie).toBe('session=1-abc');
  });

  it('without a credential throws not_configured and never calls Buff163', async () => {
    up = await startUpstream([{ path: GOODS, body: page1 }]);
    const err = await collectAll(buff163Source.collect(bareContext(up.url))).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).kind).toBe('not_configured');
    expect(up.requests).toHaveLength(0);
  });

  it('ignores an unknown field', async () => {
    const doc = JSON.parse(page1) as { data: { items: Record<string, unknown>[] }; extra_envelope?: unknown };
    doc.data.items[0]!.brand_new_field = { nested: [1, 2] };
    doc.extra_envelope = 'x';
    up = await startUpstream([{ path: GOODS, body: JSON.stringify(doc) }]);
    const rows = await collectAll(buff163Source.collect(bareContext(up.url, { credential: COOKIE })));
    expect(rows.filter((r) => r.marketHashName === '★ M9 Bayonet | Night (Field-Tested)').map((r) => r.price)).toEqual(['2349', '2240']);
  });

  it('fails loudly with format when a required field is renamed', async () => {
    up = await startUpstream([{ path: GOODS, body: page1.replace('"sell_min_price"', '"sell_min_price_cny"') }]);
    await failsWithFormat(collectAll(buff163Source.collect(bareContext(up.url, { credential: COOKIE }))), /sell_min_price/);
  });

  it('fails with format on the login wall: a 200 {"code":"Login Required"} or an HTML page', async () => {
    up = await startUpstream([{ path: GOODS, body: '{"code": "Login Required", "error": "请先登录", "extra": null}' }]);
    await failsWithFormat(collectAll(buff163Source.collect(bareContext(up.url, { credential: 'session=expired' }))), /Login Required/);
    up.play(GOODS, 'html');
    await failsWithFormat(collectAll(buff163Source.collect(bareContext(up.url, { credential: COOKIE }))), /HTML/);
  });

  it('fails with format on a truncated body and on an error object', async () => {
    up = await startUpstream([{ path: GOODS, body: page1 }]);
    up.play(GOODS, 'truncated');
    await failsWithFormat(collectAll(buff163Source.collect(bareContext(up.url, { credential: COOKIE }))), /cut short|truncated/);
    up.play(GOODS, 'error-object');
    await failsWithFormat(collectAll(buff163Source.collect(bareContext(up.url, { credential: COOKIE }))), /code/);
  });

  it('a failing later page fails the whole walk (a partial walk is never a complete listing)', async () => {
    const b = await pagedBuff({ '1': page1 });
    try {
      const err = await collectAll(buff163Source.collect(bareContext(b.url, { credential: COOKIE }))).then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(UpstreamError);
      expect((err as UpstreamError).kind).toBe('http');
      expect(b.seen).toHaveLength(2);
    } finally {
      await b.close();
    }
  });
});
