/**
 * What the item pages make of input no item name or search can hold (issue 41, point 8): NUL, which PostgreSQL
 * text cannot store, answered 503 "Item data unavailable" with Retry-After (the database refused the statement);
 * it is a 404 page (an item path: no item has such a name) or a 422 page (a search) now, with no database read.
 * Very long names, searches and parameters are refused without echoing them whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
let t: TestApp;

beforeAll(async () => {
  t = await testApp();
  await ingestQuotes(t.db, [obs(ITEM, { price: '201.85' })]);
});
afterAll(async () => {
  await t?.close();
});

async function page(path: string): Promise<{ status: number; headers: Headers; html: string }> {
  const res = await t.app.fetch(new Request(`http://test${path}`));
  return { status: res.status, headers: res.headers, html: await res.text() };
}

describe('NUL on the item pages', () => {
  it('/items/%00 and names holding NUL are 404 pages (no such item), not 503', async () => {
    for (const path of ['/items/%00', `/items/${encodeURIComponent(ITEM)}%00`, '/items/a%00b', '/items/%00/']) {
      const res = await page(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('retry-after'), path).toBeNull();
      expect(res.html).toContain('No such item');
      expect(res.html).not.toContain('\u0000');
    }
  });

  it('/items?q=%00 and searches holding NUL are 422 pages naming q, not 503', async () => {
    for (const q of ['%00', 'Red%00line', '%00%00', 'AK-47%00']) {
      const res = await page(`/items?q=${q}`);
      expect(res.status, q).toBe(422);
      expect(res.headers.get('retry-after'), q).toBeNull();
      expect(res.html).toContain('data-parameter="q"');
      expect(res.html).toContain('NUL');
      expect(res.html).not.toContain('\u0000');
    }
  });

  it('NUL in the item page parameters is a 422 page naming the parameter', async () => {
    for (const [query, parameter] of [['currency=US%00D', 'currency'], ['interval=day%00', 'interval'], ['from=2026-07-01%00', 'from'], ['to=%00', 'to']] as const) {
      const res = await page(`/items/${encodeURIComponent(ITEM)}?${query}`);
      expect(res.status, query).toBe(422);
      expect(res.html).toContain(`data-parameter="${parameter}"`);
      expect(res.html).not.toContain('\u0000');
    }
    const valuation = await page('/valuation?from=%00');
    expect(valuation.status).toBe(422);
    expect(valuation.html).not.toContain('\u0000');
  });
});

describe('very long strings on the item pages', () => {
  it('a name far over 255 characters is a 404 page that does not echo it whole; a long search is 422', async () => {
    const long = 'x'.repeat(12_000);
    const item = await page(`/items/${long}`);
    expect(item.status).toBe(404);
    expect(item.html.length).toBeLessThan(12_000);
    const astral = await page(`/items/${encodeURIComponent('😀'.repeat(3_000))}`);
    expect(astral.status).toBe(404);
    const search = await page(`/items?q=${long}`);
    expect(search.status).toBe(422);
    expect(search.html).toContain('data-parameter="q"');
    expect(search.html.length).toBeLessThan(12_000);
    for (const name of ['currency', 'interval', 'from', 'to']) {
      const res = await page(`/items/${encodeURIComponent(ITEM)}?${name}=${long}`);
      expect(res.status, name).toBe(422);
      expect(res.html.length, name).toBeLessThan(12_000);
    }
    const valuation = await page(`/valuation?from=${long}`);
    expect(valuation.status).toBe(422);
    expect(valuation.html.length).toBeLessThan(12_000);
  });

  it('a name of exactly 255 characters is looked up (404 when unknown), the longest search is run', async () => {
    expect((await page(`/items/${'y'.repeat(255)}`)).status).toBe(404);
    expect((await page(`/items?q=${'y'.repeat(200)}`)).status).toBe(200);
  });
});
