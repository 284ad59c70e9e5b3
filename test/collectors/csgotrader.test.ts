/**
 * The csgotrader adapter (src/collectors/sources/csgotrader.ts) against a real recorded `latest/buff163.json`
 * (test/collectors/fixtures/csgotrader, with its PROVENANCE) served by the local upstream, and the upstream's
 * failures: HTML instead of JSON, a truncated body, a 200 with an error object, a renamed field, an unknown field.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSGOTRADER_FILES, CSGOTRADER_PROVIDER, CSGOTRADER_SOURCES, csgotraderRows, csgotraderSource, type CsgotraderFile } from '../../src/collectors/sources/csgotrader.js';
import { JsonNumber } from '../../src/collectors/sources/json-stream.js';
import { UpstreamError, type RawQuote } from '../../src/collectors/source.js';
import { projectRoot } from '../../src/lib/paths.js';
import { bareContext, collectAll, startUpstream, type LocalUpstream } from './upstream.js';

const FIXTURE = path.join(projectRoot, 'test/collectors/fixtures/csgotrader/buff163.json');
const TEXT = fs.readFileSync(FIXTURE, 'utf8');
const BUFF = CSGOTRADER_FILES.find((f) => f.file === 'buff163')!;
const PATH = '/latest/buff163.json';

let up: LocalUpstream;

beforeAll(async () => {
  up = await startUpstream([{ path: PATH, file: FIXTURE, headers: { 'Last-Modified': 'Sun, 06 Jun 2021 03:00:00 GMT' } }]);
});
afterAll(async () => {
  await up.close();
});

const run = (body?: string) => {
  if (body !== undefined) up.route({ path: PATH, body });
  else up.route({ path: PATH, file: FIXTURE });
  return collectAll(csgotraderSource(BUFF).collect(bareContext(up.url)));
};

/** Expects the run to fail as a whole with UpstreamError('format') whose message matches `reason`. */
async function expectFormatError(p: Promise<unknown>, reason: RegExp): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamError);
  expect((err as UpstreamError).kind).toBe('format');
  expect((err as UpstreamError).message).toMatch(reason);
}

const quote = (rows: RawQuote[], name: string, side: 'ask' | 'bid') => rows.find((r) => r.marketHashName === name && r.side === side);

describe('csgotrader buff163.json (recorded)', () => {
  it('maps starting_at.price to the BUFF163 ask and highest_order.price to the bid, in USD, exact decimal text', async () => {
    const rows = await run();
    expect(up.requests.at(-1)!.path).toBe(PATH);
    const items = JSON.parse(TEXT) as Record<string, { starting_at: { price: unknown }; highest_order: { price: unknown } }>;
    const names = Object.keys(items);
    expect(names).toHaveLength(35);
    // Two rows per item, except the item whose prices are csgotrader's "null" strings.
    expect(rows).toHaveLength(2 * 34);
    for (const r of rows) {
      expect(r.marketCode).toBe('BUFF163');
      expect(r.currencyCode).toBe('USD');
      expect(r.quantity).toBeNull();
      expect(r.isQuantityMinimum).toBeNull();
      expect(r.isAllItemsSamePrice).toBeNull();
      expect(r.delisted).toBeUndefined();
      expect(typeof r.price).toBe('string');
    }
    expect(quote(rows, 'MP5-SD | Phosphor (Field-Tested)', 'ask')!.price).toBe('2.8');
    expect(quote(rows, 'MP5-SD | Phosphor (Field-Tested)', 'bid')!.price).toBe('2.48');
    expect(quote(rows, 'Sticker | Vox Eminor (Foil) | Katowice 2015', 'ask')!.price).toBe('437.39');
    expect(quote(rows, 'AK-47 | Redline (Field-Tested)', 'ask')!.price).toBe('14.06');
    expect(quote(rows, 'AK-47 | Redline (Field-Tested)', 'bid')!.price).toBe('13.43');
    // A number written with a trailing zero keeps it (never a JS float round trip).
    expect(quote(rows, 'AWP | Pink DDPAT (Battle-Scarred)', 'ask')!.price).toBe('15.0');
    // The item's price, not a Doppler phase's.
    expect(quote(rows, '★ Butterfly Knife | Doppler (Factory New)', 'ask')!.price).toBe('1041.22');
    expect(quote(rows, '★ Butterfly Knife | Doppler (Factory New)', 'bid')!.price).toBe('995.06');
    // Escaped names are decoded to the market hash name.
    expect(quote(rows, '★ Karambit | Autotronic (Field-Tested)', 'ask')!.price).toBe('584.15');
    // "null" prices: no row (no delisting claimed either).
    expect(rows.filter((r) => r.marketHashName === '★ StatTrak™ Paracord Knife | Safari Mesh (Factory New)')).toEqual([]);
    // Bid above ask stays as recorded (the runner and the precedence rules decide, not the adapter).
    expect(quote(rows, 'P90 | Asiimov (Field-Tested)', 'ask')!.price).toBe('6.2');
    expect(quote(rows, 'P90 | Asiimov (Field-Tested)', 'bid')!.price).toBe('6.22');
  });

  it('ignores an unknown extra field (on the item and on the side object)', async () => {
    const base = await run();
    const perItem = TEXT.replaceAll('"starting_at": {', '"listings": 12, "updated": {"at": [1, 2]}, "starting_at": {"volume": 3, ');
    expect(perItem).not.toBe(TEXT);
    expect(await run(perItem)).toEqual(base);
  });

  it('fails loudly when a required field is renamed (highest_order, or price inside it)', async () => {
    await expectFormatError(run(TEXT.replaceAll('"highest_order"', '"best_order"')), /no `highest_order` field \(renamed upstream\?\)/);
    await expectFormatError(run(TEXT.replaceAll('"highest_order": {"price"', '"highest_order": {"amount"')), /highest_order: no `price` field/);
    await expectFormatError(run(TEXT.replaceAll('"starting_at"', '"lowest_ask"')), /no `starting_at` field/);
  });

  it('fails the run with a format error on HTML, a truncated body and a 200 with an error object', async () => {
    up.route({ path: PATH, file: FIXTURE });
    const src = csgotraderSource(BUFF);
    up.play(PATH, 'html');
    await expectFormatError(collectAll(src.collect(bareContext(up.url))), /HTML instead of JSON/);
    up.play(PATH, 'truncated');
    await expectFormatError(collectAll(src.collect(bareContext(up.url))), /truncated/);
    up.play(PATH, 'error-object');
    await expectFormatError(collectAll(src.collect(bareContext(up.url))), /error object.*Internal error, try again later/);
    up.play(PATH, null);
    await expectFormatError(run('{"MP5-SD | Phosphor (Field-Tested)": {"starting_at": {"price": 2.8}, "highest_order": {"price": 2.48}}'), /truncated/);
    await expectFormatError(run(''), /empty body/);
    await expectFormatError(run('[{"starting_at": 1}]'), /expected a JSON object at the top, found array/);
    await expectFormatError(run('{"AK-47 | Redline (Field-Tested)": 14.06}'), /expected an object of fields, found a number/);
  });

  it('a non-2xx answer is the runner context\'s http error, not a format error', async () => {
    up.play(PATH, '503', { times: 1 });
    const err = await collectAll(csgotraderSource(BUFF).collect(bareContext(up.url))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).kind).toBe('http');
  });
});

describe('csgotrader sources', () => {
  it('one source per file, provider CSGOTRADER, none a complete listing, no Steam source', () => {
    expect(CSGOTRADER_SOURCES.map((s) => s.id)).toEqual(CSGOTRADER_FILES.map((f) => `csgotrader_${f.file}`));
    for (const s of CSGOTRADER_SOURCES) {
      expect(s.providerCode).toBe(CSGOTRADER_PROVIDER);
      expect(s.completeListing).toBe(false);
      expect(s.defaultBaseUrl).toBe('https://prices.csgotrader.app');
      expect(s.id).toMatch(/^[a-z0-9_]+$/); // COLLECTOR_<ID>_URL is a valid variable name
    }
    const markets = CSGOTRADER_SOURCES.flatMap((s) => s.markets);
    expect(markets).toEqual(['BUFF163', 'YOUPIN', 'CSFLOAT', 'SKINPORT', 'CSMONEY', 'MARKETCSGO', 'LISSKINS']);
    expect(markets).not.toContain('STEAM');
    expect(CSGOTRADER_FILES.map((f) => f.file)).not.toContain('steam');
  });

  it('the bundled data notes describe the same Buff163 fields the adapter reads', () => {
    const notes = fs.readFileSync(path.join(projectRoot, 'data/prices/csgotrader_daily_2026-07/PROVENANCE.md'), 'utf8');
    expect(notes).toContain('buff163.json → starting_at.price');
    expect(notes).toContain('buff163.json → highest_order.price');
    expect(notes).toMatch(/steam\.json.*(average|not a live ask)/s);
    expect(BUFF.format).toEqual({ kind: 'sides', fields: [{ field: 'starting_at', side: 'ask' }, { field: 'highest_order', side: 'bid' }] });
  });

  // The other files' shapes as csgotrader's own reader reads them (no recording of them was found: PROVENANCE.md).
  const file = (name: string): CsgotraderFile => CSGOTRADER_FILES.find((f) => f.file === name)!;
  const n = (text: string) => new JsonNumber(text);

  it('bare-number files (youpin, csgotm): the number, a quoted number, null or "null"; an object needs `price`', () => {
    expect(csgotraderRows(file('youpin'), 'AK-47 | Redline (Field-Tested)', n('212.50'))).toEqual([
      { marketHashName: 'AK-47 | Redline (Field-Tested)', marketCode: 'YOUPIN', side: 'ask', currencyCode: 'USD', price: '212.50', quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null },
    ]);
    expect(csgotraderRows(file('csgotm'), 'Fever Case', '0.006')[0]).toMatchObject({ marketCode: 'MARKETCSGO', side: 'ask', price: '0.006' });
    expect(csgotraderRows(file('youpin'), 'x', null)).toEqual([]);
    expect(csgotraderRows(file('youpin'), 'x', 'null')).toEqual([]);
    expect(csgotraderRows(file('youpin'), 'x', { price: n('3.1') })[0]!.price).toBe('3.1');
    expect(() => csgotraderRows(file('youpin'), 'x', { amount: n('3.1') })).toThrow(/without `price`/);
    expect(() => csgotraderRows(file('youpin'), 'x', true)).toThrow(UpstreamError);
  });

  it('price files (csfloat, csmoney, lisskins) and skinport.json: the field, Doppler phases ignored, a renamed field fails', () => {
    expect(csgotraderRows(file('csfloat'), 'a', { price: n('10.20') })[0]).toMatchObject({ marketCode: 'CSFLOAT', side: 'ask', price: '10.20', currencyCode: 'USD' });
    expect(csgotraderRows(file('csmoney'), 'a', { price: n('7'), doppler: { 'Phase 2': n('9') } })).toHaveLength(1);
    expect(csgotraderRows(file('lisskins'), 'a', { price: null, doppler: { Ruby: n('900') } })).toEqual([]);
    expect(csgotraderRows(file('skinport'), 'a', { suggested_price: n('0.03'), starting_at: n('0.02') })[0]).toMatchObject({ marketCode: 'SKINPORT', price: '0.02' });
    expect(() => csgotraderRows(file('skinport'), 'a', { suggested_price: n('0.03'), min_price: n('0.02') })).toThrow(/no `starting_at` field/);
    expect(() => csgotraderRows(file('csfloat'), 'a', { last_24h: n('1') })).toThrow(/no `price` field/);
    expect(() => csgotraderRows(file('csfloat'), 'a', n('1'))).toThrow(/expected an object of fields/);
  });
});
