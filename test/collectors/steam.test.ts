/**
 * Steam Community Market adapter against real recorded priceoverview answers (fixtures/steam, see PROVENANCE.md).
 */
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseSteamCount, parseSteamPrice, steamSource } from '../../src/collectors/sources/steam.js';
import { UpstreamError } from '../../src/collectors/source.js';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';

const dir = path.join(import.meta.dirname, 'fixtures/steam');
const read = (f: string): string => fs.readFileSync(path.join(dir, f), 'utf8');
const PRISMA = read('priceoverview_prisma_case.json');
const DANGER = read('priceoverview_danger_zone_case.json');
const MP9 = read('priceoverview_mp9_storm_mw.json');
const NOT_FOUND = read('priceoverview_not_found.json');
const OVERVIEW = '/market/priceoverview/';

/** A local Steam answering priceoverview by `market_hash_name` (unknown names get the recorded {"success":false}). */
async function steamByName(answers: Record<string, string>): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname !== OVERVIEW) return void res.writeHead(404).end('{}');
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(answers[u.searchParams.get('market_hash_name') ?? ''] ?? NOT_FOUND);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const ask = (name: string, price: string | null, delisted = false) => ({
  marketHashName: name,
  marketCode: 'STEAM',
  side: 'ask',
  currencyCode: 'USD',
  price,
  quantity: null,
  isQuantityMinimum: null,
  isAllItemsSamePrice: null,
  ...(delisted ? { delisted: true } : {}),
});

let up: LocalUpstream | undefined;
afterEach(async () => {
  await up?.close();
  up = undefined;
});

async function kindOf(run: Promise<unknown>): Promise<[string, string]> {
  const err = await run.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(UpstreamError);
  return [(err as UpstreamError).kind, (err as UpstreamError).message];
}

describe('parseSteamPrice', () => {
  it('reads display prices with symbols and thousands separators to exact decimal strings', () => {
    expect(parseSteamPrice('$1,234.56')).toEqual({ amount: '1234.56', symbol: '$' });
    expect(parseSteamPrice('1 234,56€')).toEqual({ amount: '1234.56', symbol: '€' });
    expect(parseSteamPrice('1\u00a0234,56\u00a0€')).toEqual({ amount: '1234.56', symbol: '€' });
    expect(parseSteamPrice('1.234,56€')).toEqual({ amount: '1234.56', symbol: '€' });
    expect(parseSteamPrice('1,66€')).toEqual({ amount: '1.66', symbol: '€' });
    expect(parseSteamPrice('261,35&#8364; ')).toEqual({ amount: '261.35', symbol: '€' });
    expect(parseSteamPrice('22,12 kr')).toEqual({ amount: '22.12', symbol: 'kr' });
    expect(parseSteamPrice('$0.05')).toEqual({ amount: '0.05', symbol: '$' });
    expect(parseSteamPrice('$12,345,678.90 USD')).toEqual({ amount: '12345678.90', symbol: '$ USD' });
    expect(parseSteamPrice('¥ 1,234')).toEqual({ amount: '1234', symbol: '¥' });
    expect(parseSteamPrice('2.39元')).toEqual({ amount: '2.39', symbol: '元' });
    expect(parseSteamPrice('--')).toBeNull();
    expect(parseSteamPrice('')).toBeNull();
  });

  it('refuses text that is not one well-formed price', () => {
    for (const bad of ['$', 'free', '$1.00 - $2.00', '12,34,567', '$1,23.4.5']) expect(() => parseSteamPrice(bad), bad).toThrow(RangeError);
  });

  it('reads the 24-hour volume as a count', () => {
    expect(parseSteamCount('59,613')).toBe(59613);
    expect(parseSteamCount('108')).toBe(108);
    expect(() => parseSteamCount('1.5')).toThrow(RangeError);
  });
});

describe('steam adapter', () => {
  it('asks priceoverview once per watched item in USD and maps lowest_price to an exact ask', async () => {
    const s = await steamByName({ 'Prisma Case': PRISMA, 'Danger Zone Case': DANGER, 'MP9 | Storm (Minimal Wear)': MP9 });
    try {
      const rows = await collectAll(steamSource.collect(bareContext(s.url, { watchlist: ['Prisma Case', 'MP9 | Storm (Minimal Wear)', 'Danger Zone Case'] })));
      expect(rows).toEqual([ask('Prisma Case', '0.41'), ask('MP9 | Storm (Minimal Wear)', '0.05'), ask('Danger Zone Case', '0.20')]);
      expect(s.seen).toEqual([
        '/market/priceoverview/?appid=730&currency=1&market_hash_name=Prisma%20Case',
        '/market/priceoverview/?appid=730&currency=1&market_hash_name=MP9%20%7C%20Storm%20(Minimal%20Wear)',
        '/market/priceoverview/?appid=730&currency=1&market_hash_name=Danger%20Zone%20Case',
      ]);
    } finally {
      await s.close();
    }
  });

  it('is a public, partial (watch list) source of STEAM asks within about 20 requests a minute', () => {
    expect(steamSource).toMatchObject({ id: 'steam', providerCode: 'STEAM', markets: ['STEAM'], completeListing: false });
    expect(steamSource.credentialEnv).toBeUndefined();
    expect(steamSource.limits.requestsPerMinute).toBeLessThanOrEqual(20);
    expect(steamSource.limits.concurrency).toBe(1);
  });

  it('skips a name Steam does not know ({"success":false}) and goes on', async () => {
    const s = await steamByName({ 'Prisma Case': PRISMA });
    try {
      const rows = await collectAll(steamSource.collect(bareContext(s.url, { watchlist: ['Spectrum 10 Case', 'Prisma Case'] })));
      expect(rows).toEqual([ask('Prisma Case', '0.41')]);
      expect(s.seen).toHaveLength(2);
    } finally {
      await s.close();
    }
  });

  it('reports an item answered without lowest_price as delisted on the ask side', async () => {
    const noListing = PRISMA.replace(/"lowest_price": "[^"]*", /, '');
    const s = await steamByName({ 'Danger Zone Case': noListing, 'Prisma Case': PRISMA });
    try {
      const rows = await collectAll(steamSource.collect(bareContext(s.url, { watchlist: ['Danger Zone Case', 'Prisma Case'] })));
      expect(rows).toEqual([ask('Danger Zone Case', null, true), ask('Prisma Case', '0.41')]);
    } finally {
      await s.close();
    }
  });

  it('ignores an unknown field (the recorded market_hash_name key, and a new one)', async () => {
    const s = await steamByName({ 'MP9 | Storm (Minimal Wear)': MP9.replace('"success": true,', '"success": true, "brand_new": {"x": [1]},') });
    try {
      const rows = await collectAll(steamSource.collect(bareContext(s.url, { watchlist: ['MP9 | Storm (Minimal Wear)'] })));
      expect(rows).toEqual([ask('MP9 | Storm (Minimal Wear)', '0.05')]);
    } finally {
      await s.close();
    }
  });

  it('fails loudly with format when lowest_price is renamed on every answer', async () => {
    up = await startUpstream([{ path: OVERVIEW, body: PRISMA.replace('"lowest_price"', '"lowest_sell_price"') }]);
    const [kind, message] = await kindOf(collectAll(steamSource.collect(bareContext(up.url, { watchlist: ['Prisma Case', 'Danger Zone Case'] }))));
    expect(kind).toBe('format');
    expect(message).toMatch(/lowest_price/);
  });

  it('fails with format when success is renamed, or a price is not in USD', async () => {
    up = await startUpstream([{ path: OVERVIEW, body: PRISMA.replace('"success"', '"ok"') }]);
    expect(await kindOf(collectAll(steamSource.collect(bareContext(up.url, { watchlist: ['Prisma Case'] }))))).toEqual(['format', expect.stringMatching(/success/)]);
    up.route({ path: OVERVIEW, body: '{"success":true,"lowest_price":"1,66€","volume":"5,638","median_price":"1,63€"}' });
    expect(await kindOf(collectAll(steamSource.collect(bareContext(up.url, { watchlist: ['Horizon Case'] }))))).toEqual(['format', expect.stringMatching(/not in USD/)]);
  });

  it('fails with format on HTML instead of JSON and on a truncated body', async () => {
    up = await startUpstream([{ path: OVERVIEW, body: PRISMA }]);
    up.play(OVERVIEW, 'html');
    expect((await kindOf(collectAll(steamSource.collect(bareContext(up.url, { watchlist: ['Prisma Case'] })))))[0]).toBe('format');
    up.play(OVERVIEW, 'truncated');
    expect((await kindOf(collectAll(steamSource.collect(bareContext(up.url, { watchlist: ['Prisma Case'] })))))[0]).toBe('format');
  });

  it('calls nothing for an empty watch list', async () => {
    up = await startUpstream([{ path: OVERVIEW, body: PRISMA }]);
    expect(await collectAll(steamSource.collect(bareContext(up.url, { watchlist: [] })))).toEqual([]);
    expect(up.requests).toHaveLength(0);
  });
});
