/**
 * Steam Community Market adapter against real recorded itemordershistogram and priceoverview answers (fixtures/steam,
 * see PROVENANCE.md), served by a local Steam.
 */
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import os from 'node:os';
import {
  STEAM_ITEM_NAMEIDS_FILE,
  createSteamSource,
  parseSteamCount,
  parseSteamPrice,
  readSteamItemNameIds,
  steamHistogramPath,
  steamSource,
} from '../../src/collectors/sources/steam.js';
import { UpstreamError } from '../../src/collectors/source.js';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';

const dir = path.join(import.meta.dirname, 'fixtures/steam');
const read = (f: string): string => fs.readFileSync(path.join(dir, f), 'utf8');
const PRISMA = read('priceoverview_prisma_case.json');
const DANGER = read('priceoverview_danger_zone_case.json');
const MP9 = read('priceoverview_mp9_storm_mw.json');
const NOT_FOUND = read('priceoverview_not_found.json');
const HORIZON_USD = read('itemordershistogram_horizon_case_usd.json');
const EUR_176000861 = read('itemordershistogram_176000861_eur.json');
/** The recorded EUR answer as asked in USD: only its currency texts changed (prices in cents and counts untouched). */
const USD_176000861 = EUR_176000861.replace('"price_prefix": ""', '"price_prefix": "$"').replace('"price_suffix": "€"', '"price_suffix": ""').replaceAll('0,03€', '$0.03');
const OVERVIEW = '/market/priceoverview/';
const HISTOGRAM = '/market/itemordershistogram';
const HORIZON = 'Horizon Case';
const HORIZON_ID = 175999886;
/** The recorded current-format answer's item (not a CS2 item): named here for the tests' own map. */
const ITEM_176000861 = 'Recorded item 176000861';

/** A Steam source with the tests' own name -> item_nameid map. */
const withIds = (ids: Record<string, number>) => createSteamSource(() => new Map(Object.entries(ids)));
/** A Steam source that knows no item_nameid: priceoverview for every item. */
const overviewOnly = withIds({});

/**
 * A local Steam answering priceoverview by `market_hash_name` (unknown names get the recorded {"success":false}) and
 * itemordershistogram by `item_nameid` (`books`; an id without a book gets 404).
 */
async function steamByName(answers: Record<string, string>, books: Record<number, string> = {}): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === HISTOGRAM) {
      const book = books[Number(u.searchParams.get('item_nameid'))];
      if (book === undefined) return void res.writeHead(404).end('{}');
      return void res.writeHead(200, { 'Content-Type': 'application/json' }).end(book);
    }
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

describe('steam adapter: priceoverview (items without a known item_nameid)', () => {
  it('asks priceoverview once per watched item in USD and maps lowest_price to an exact ask', async () => {
    const s = await steamByName({ 'Prisma Case': PRISMA, 'Danger Zone Case': DANGER, 'MP9 | Storm (Minimal Wear)': MP9 });
    try {
      const rows = await collectAll(overviewOnly.collect(bareContext(s.url, { watchlist: ['Prisma Case', 'MP9 | Storm (Minimal Wear)', 'Danger Zone Case'] })));
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
      const rows = await collectAll(overviewOnly.collect(bareContext(s.url, { watchlist: ['Spectrum 10 Case', 'Prisma Case'] })));
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
      const rows = await collectAll(overviewOnly.collect(bareContext(s.url, { watchlist: ['Danger Zone Case', 'Prisma Case'] })));
      expect(rows).toEqual([ask('Danger Zone Case', null, true), ask('Prisma Case', '0.41')]);
    } finally {
      await s.close();
    }
  });

  it('ignores an unknown field (the recorded market_hash_name key, and a new one)', async () => {
    const s = await steamByName({ 'MP9 | Storm (Minimal Wear)': MP9.replace('"success": true,', '"success": true, "brand_new": {"x": [1]},') });
    try {
      const rows = await collectAll(overviewOnly.collect(bareContext(s.url, { watchlist: ['MP9 | Storm (Minimal Wear)'] })));
      expect(rows).toEqual([ask('MP9 | Storm (Minimal Wear)', '0.05')]);
    } finally {
      await s.close();
    }
  });

  it('fails loudly with format when lowest_price is renamed on every answer', async () => {
    up = await startUpstream([{ path: OVERVIEW, body: PRISMA.replace('"lowest_price"', '"lowest_sell_price"') }]);
    const [kind, message] = await kindOf(collectAll(overviewOnly.collect(bareContext(up.url, { watchlist: ['Prisma Case', 'Danger Zone Case'] }))));
    expect(kind).toBe('format');
    expect(message).toMatch(/lowest_price/);
  });

  it('fails with format when success is renamed, or a price is not in USD', async () => {
    up = await startUpstream([{ path: OVERVIEW, body: PRISMA.replace('"success"', '"ok"') }]);
    expect(await kindOf(collectAll(overviewOnly.collect(bareContext(up.url, { watchlist: ['Prisma Case'] }))))).toEqual(['format', expect.stringMatching(/success/)]);
    up.route({ path: OVERVIEW, body: '{"success":true,"lowest_price":"1,66€","volume":"5,638","median_price":"1,63€"}' });
    expect(await kindOf(collectAll(overviewOnly.collect(bareContext(up.url, { watchlist: ['Horizon Case'] }))))).toEqual(['format', expect.stringMatching(/not in USD/)]);
  });

  it('fails with format on HTML instead of JSON and on a truncated body', async () => {
    up = await startUpstream([{ path: OVERVIEW, body: PRISMA }]);
    up.play(OVERVIEW, 'html');
    expect((await kindOf(collectAll(overviewOnly.collect(bareContext(up.url, { watchlist: ['Prisma Case'] })))))[0]).toBe('format');
    up.play(OVERVIEW, 'truncated');
    expect((await kindOf(collectAll(overviewOnly.collect(bareContext(up.url, { watchlist: ['Prisma Case'] })))))[0]).toBe('format');
  });

  it('calls nothing for an empty watch list', async () => {
    up = await startUpstream([{ path: OVERVIEW, body: PRISMA }]);
    expect(await collectAll(overviewOnly.collect(bareContext(up.url, { watchlist: [] })))).toEqual([]);
    expect(up.requests).toHaveLength(0);
  });
});

const row = (name: string, side: 'ask' | 'bid', price: string | null, quantity: number | null, extra: Record<string, unknown> = {}) => ({
  marketHashName: name,
  marketCode: 'STEAM',
  side,
  currencyCode: 'USD',
  price,
  quantity,
  isQuantityMinimum: quantity === null ? null : false,
  isAllItemsSamePrice: null,
  ...extra,
});

describe('steam item_nameid map (data/steam/item-nameids.json)', () => {
  it('maps CS2 market hash names to the ids the recorded answers were asked with', () => {
    const ids = readSteamItemNameIds(STEAM_ITEM_NAMEIDS_FILE);
    expect(ids.size).toBe(23723);
    // The recorded USD histogram's item (fixtures/steam/PROVENANCE.md) and the AK of csgo-trader-extension issue #106.
    expect(ids.get(HORIZON)).toBe(HORIZON_ID);
    expect(ids.get('AK-47 | Elite Build (Field-Tested)')).toBe(40092015);
    expect(ids.get('Spectrum 10 Case')).toBeUndefined();
  });

  it('refuses a file that is not an object of names to positive integers, naming the file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-steam-ids-'));
    try {
      for (const [i, body] of ['[1, 2]', '{"Prisma Case": "176042493"}', '{"Prisma Case": -1}', '{"": 5}', 'not json'].entries()) {
        const f = path.join(dir, `ids-${i}.json`);
        fs.writeFileSync(f, body);
        expect(() => readSteamItemNameIds(f), body).toThrow(f);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('steam adapter: order book (itemordershistogram)', () => {
  it('asks the histogram for a mapped item and priceoverview for the others, one request each, in USD', async () => {
    const s = await steamByName({ 'Prisma Case': PRISMA }, { [HORIZON_ID]: HORIZON_USD });
    try {
      // The registry's source with the bundled map: Horizon Case has an id, "Spectrum 10 Case" (recorded as unknown) not.
      const rows = await collectAll(steamSource.collect(bareContext(s.url, { watchlist: [HORIZON, 'Spectrum 10 Case'] })));
      // The older recorded format has no count fields: quantity null (its graph is capped, not a count).
      expect(rows).toEqual([row(HORIZON, 'ask', '2.41', null), row(HORIZON, 'bid', '2.32', null)]);
      expect(s.seen).toEqual([
        '/market/itemordershistogram?country=US&language=english&currency=1&item_nameid=175999886&two_factor=0',
        '/market/priceoverview/?appid=730&currency=1&market_hash_name=Spectrum%2010%20Case',
      ]);
    } finally {
      await s.close();
    }
  });

  it('maps the current format: counts as exact quantities, no listing as a delisted ask, no buy order as no bid row', async () => {
    const noBid = USD_176000861.replace('"highest_buy_order": "3"', '"highest_buy_order": null').replace('"buy_order_count": "2"', '"buy_order_count": 0');
    const books = {
      1: USD_176000861,
      2: noBid,
      // Separators in a count string, and both sides present.
      3: USD_176000861.replace('"buy_order_count": "2"', '"buy_order_count": "1,234"').replace('"sell_order_count": 0', '"sell_order_count": "22,033"').replace('"lowest_sell_order": null', '"lowest_sell_order": "241"'),
    };
    const s = await steamByName({}, books);
    try {
      const rows = await collectAll(withIds({ a: 1, b: 2, c: 3 }).collect(bareContext(s.url, { watchlist: ['a', 'b', 'c'] })));
      expect(rows).toEqual([
        row('a', 'ask', null, 0, { delisted: true }),
        row('a', 'bid', '0.03', 2),
        row('b', 'ask', null, 0, { delisted: true }),
        row('c', 'ask', '2.41', 22033),
        row('c', 'bid', '0.03', 1234),
      ]);
    } finally {
      await s.close();
    }
  });

  it('fails with format when the answer is in another currency (the recorded EUR answer as sent)', async () => {
    up = await startUpstream([{ path: HISTOGRAM, body: EUR_176000861 }]);
    const [kind, message] = await kindOf(collectAll(withIds({ [ITEM_176000861]: 176000861 }).collect(bareContext(up.url, { watchlist: [ITEM_176000861] }))));
    expect(kind).toBe('format');
    expect(message).toMatch(/not in USD.*"€"/);
  });

  it('fails with format when lowest_sell_order, highest_buy_order or success is renamed, or a price is not whole cents', async () => {
    const run = (body: string) => {
      up!.route({ path: HISTOGRAM, body });
      return kindOf(collectAll(withIds({ [HORIZON]: HORIZON_ID }).collect(bareContext(up!.url, { watchlist: [HORIZON] }))));
    };
    up = await startUpstream([{ path: HISTOGRAM, body: HORIZON_USD }]);
    expect(await run(HORIZON_USD.replace('"lowest_sell_order"', '"lowest_sell_price"'))).toEqual(['format', expect.stringMatching(/lowest_sell_order missing/)]);
    expect(await run(HORIZON_USD.replace('"highest_buy_order"', '"highest_buy_price"'))).toEqual(['format', expect.stringMatching(/highest_buy_order missing/)]);
    expect(await run(HORIZON_USD.replace('"success"', '"ok"'))).toEqual(['format', expect.stringMatching(/success missing/)]);
    expect(await run(HORIZON_USD.replace('"highest_buy_order": "232"', '"highest_buy_order": "2.32"'))).toEqual(['format', expect.stringMatching(/whole minor units/)]);
    expect(await run(USD_176000861.replace('"buy_order_count": "2"', '"buy_order_count": "two"'))).toEqual(['format', expect.stringMatching(/buy_order_count/)]);
  });

  it('skips an item answered with success other than 1, and fails with format when every answer is one', async () => {
    const s = await steamByName({}, { 1: HORIZON_USD.replace('"success": 1', '"success": 16'), 2: HORIZON_USD });
    try {
      const rows = await collectAll(withIds({ a: 1, [HORIZON]: 2 }).collect(bareContext(s.url, { watchlist: ['a', HORIZON] })));
      expect(rows).toEqual([row(HORIZON, 'ask', '2.41', null), row(HORIZON, 'bid', '2.32', null)]);
    } finally {
      await s.close();
    }
    up = await startUpstream([{ path: HISTOGRAM, body: HORIZON_USD }]);
    up.play(HISTOGRAM, 'error-object');
    const [kind, message] = await kindOf(collectAll(withIds({ a: 1, [HORIZON]: 2 }).collect(bareContext(up.url, { watchlist: ['a', HORIZON] }))));
    expect(kind).toBe('format');
    expect(message).toMatch(/none of 2 answers had success 1.*success false/);
  });

  it('fails with format on HTML instead of JSON and on a truncated body', async () => {
    up = await startUpstream([{ path: HISTOGRAM, body: HORIZON_USD }]);
    const source = withIds({ [HORIZON]: HORIZON_ID });
    up.play(HISTOGRAM, 'html');
    expect(await kindOf(collectAll(source.collect(bareContext(up.url, { watchlist: [HORIZON] }))))).toEqual(['format', expect.stringMatching(/HTML page/)]);
    up.play(HISTOGRAM, 'truncated');
    expect((await kindOf(collectAll(source.collect(bareContext(up.url, { watchlist: [HORIZON] })))))[0]).toBe('format');
  });

  it('a 429 is the runner context\'s http error (the runner honours Retry-After)', async () => {
    up = await startUpstream([{ path: HISTOGRAM, body: HORIZON_USD }]);
    up.play(HISTOGRAM, '429', { times: 1, retryAfterSeconds: 60 });
    const err = await collectAll(withIds({ [HORIZON]: HORIZON_ID }).collect(bareContext(up.url, { watchlist: [HORIZON] }))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).kind).toBe('http');
    expect((err as UpstreamError).status).toBe(429);
    expect(up.requests.map((r) => r.path)).toEqual([steamHistogramPath(HORIZON_ID)]);
  });

  it('reads no map and calls nothing for an empty watch list', async () => {
    up = await startUpstream([{ path: HISTOGRAM, body: HORIZON_USD }]);
    const source = createSteamSource(() => {
      throw new Error('map read');
    });
    expect(await collectAll(source.collect(bareContext(up.url, { watchlist: [] })))).toEqual([]);
    expect(up.requests).toHaveLength(0);
  });
});
