/**
 * The item pages (`/items/{market_hash_name}`, `/items?q=`) in a real browser (Debian's Chromium), against the
 * real app on a local port over real bundled data: the importers' readers run on the real quote files and the
 * history importer on the real archive and sales files, kept to the AK-47 and Redline items (the whole set
 * takes over a minute on PGlite), and the CSCP valuation job values 2026-07-12 to 2026-07-17 over them.
 * What a reader sees is checked against what the services return: the quotes per market in their currencies,
 * the converted column at the official rates, the CSCP band (mid x e^(+-u)), one chart path per series, the
 * search from the landing page's form, and the 404 and 422 pages. Screenshots: test-output/screenshots/item-*.png.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { createApp, type App } from '../../src/app.js';
import { importCatalogue } from '../../src/catalogue/import.js';
import { ingestQuotes } from '../../src/quotes/ingestion.js';
import { readBuffGoods, readCsgotraderDaily } from '../../src/collectors/importers.js';
import { bundledNames, importHistory } from '../../src/history/import.js';
import { itemIdOf, loadItemHistory, type HistoryInterval } from '../../src/history/candles.js';
import { loadQuotes } from '../../src/quotes/quotes.js';
import { parseDate, runValuation } from '../../src/valuation/daily.js';
import { Money, formatDecimal, toMoney } from '../../src/lib/money.js';
import { displayAmount, niceTicks, parseItemQuery, resolveRange, timeTicks, type ItemQuery } from '../../src/pages/item-page.js';
import { dataDir } from '../helpers/app.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { browserSuiteTitle, launchBrowser, openProbedPage, screenshot, serve, SKIP_BROWSER, type PageProblems, type Served } from './browser.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
const ITEM_PATH = `/items/${encodeURIComponent(ITEM)}`;
/** The names this test loads: every AK-47 and every Redline (a few hundred items with real quotes and history). */
const kept = (name: string) => name.includes('AK-47') || name.includes('Redline');
const NOW = new Date('2026-07-17T12:00:00Z');

let db: TestDatabase;
let app: App;
let served: Served;
let browser: Browser;
let tmp: string;
/** USD per unit, from the currency table. */
let usd: Map<string, Money>;

/** Writes the bundled history files, kept to `kept` names, under `dir` (same formats, same file names). */
function writeKeptHistory(dir: string): void {
  const buffDir = path.join(dataDir, 'history', 'buff163_biweekly_2021-2024');
  const buffFile = fs.readdirSync(buffDir).find((f) => f.endsWith('.json.gz'))!;
  const archive = JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(buffDir, buffFile))).toString('utf8')) as Record<string, unknown>;
  fs.mkdirSync(path.join(dir, 'buff'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'buff', buffFile), zlib.gzipSync(JSON.stringify(Object.fromEntries(Object.entries(archive).filter(([n]) => kept(n))))));
  const steamDir = path.join(dataDir, 'history', 'steam_daily_sales_2026Q1');
  const steamFile = fs.readdirSync(steamDir).find((f) => f.endsWith('.csv.gz'))!;
  const [header, ...lines] = zlib.gunzipSync(fs.readFileSync(path.join(steamDir, steamFile))).toString('utf8').split('\n');
  fs.mkdirSync(path.join(dir, 'steam'), { recursive: true });
  // The other columns are a date and numbers, so a line mentions a kept name only through its name.
  fs.writeFileSync(path.join(dir, 'steam', steamFile), zlib.gzipSync([header, ...lines.filter((l) => l && kept(l))].join('\n') + '\n'));
}

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  db = await testDatabase();
  await importCatalogue(db.prisma, dataDir);
  // Quotes: the importers' readers on the real files (Buff163 pages first, then the csgotrader days, as importPath orders them).
  const pricesDir = path.join(dataDir, 'prices');
  for (const folder of fs.readdirSync(pricesDir).sort()) {
    const dir = path.join(pricesDir, folder);
    if (folder.startsWith('buff163_goods')) {
      for (const f of fs.readdirSync(dir).filter((n) => /^goods_\d{8}_\d{6}\.json$/.test(n)).sort()) await ingestQuotes(db, readBuffGoods(path.join(dir, f)).filter((o) => kept(o.marketHashName)));
    } else if (folder.startsWith('csgotrader_daily')) {
      const currencyOf = new Map((await db.query<{ code: string; currency_code: string }>(`SELECT code, currency_code FROM website`)).map((r) => [r.code, r.currency_code]));
      for (const day of (await readCsgotraderDaily(dir, currencyOf)).values()) await ingestQuotes(db, day.filter((o) => kept(o.marketHashName)));
    }
  }
  // History: the real importer on the real files, kept to the same names.
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-item-page-'));
  writeKeptHistory(tmp);
  const h = await importHistory(db, tmp, bundledNames(dataDir));
  expect(h.points).toBeGreaterThan(1000);
  // CSCP valuations of July 2026 (the job's computation, one run per day).
  for (let d = 12; d <= 17; d++) await runValuation(db, parseDate(`2026-07-${d}`), { now: () => NOW });
  usd = new Map((await db.query<{ code: string; usd_rate: string }>(`SELECT code, usd_rate::text AS usd_rate FROM currency`)).map((r) => [r.code, toMoney(r.usd_rate)]));
  // These tests load about 30 item pages from one address within a minute, as many as PAGE_RATE_LIMIT's default
  // allows a person: their app allows more (the limit itself: test/integration/page-rate-limit.test.ts).
  app = createApp({ db, clock: () => NOW, pages: { rateLimit: { maxRequests: 1000, windowSeconds: 60 } } });
  served = await serve(app);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await served?.close();
  await app?.close();
  await db?.destroy();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** Problems other than the browser's report of the document's own error status (a 404 or 422 page). */
function expectNoProblems(problems: PageProblems, status?: number) {
  expect(problems.pageErrors).toEqual([]);
  expect(problems.consoleErrors.filter((e) => !(status && e.includes(`status of ${status}`)))).toEqual([]);
  expect(problems.failedRequests).toEqual([]);
  expect(problems.externalRequests).toEqual([]);
}

/** `amount` in `from` as `to` at the official rates, as the page shows it (two decimals, half-even). */
function converted(amount: string, from: string, to: string): string {
  return toMoney(amount).times(usd.get(from)!).div(usd.get(to)!).toFixed(2);
}

/** The cells of the quote rows as shown: market/side -> [price, currency, converted]. */
async function quoteRows(page: Page): Promise<Record<string, string[]>> {
  const rows = await page.locator('table.quotes tbody tr').evaluateAll((trs) =>
    trs.map((tr) => ({
      key: `${tr.getAttribute('data-market')}/${tr.getAttribute('data-side')}`,
      cells: [tr.querySelector('td.price')?.textContent ?? '', tr.querySelector('td.currency')?.textContent ?? '', tr.querySelector('td.converted')?.textContent ?? ''],
    })),
  );
  return Object.fromEntries(rows.map((r) => [r.key, r.cells]));
}

/** The range and interval the page's form shows (what it drew). */
async function shownRange(page: Page): Promise<{ from: string; to: string; interval: HistoryInterval }> {
  return {
    from: await page.locator('#from').inputValue(),
    to: await page.locator('#to').inputValue(),
    interval: (await page.locator('#interval').inputValue()) as HistoryInterval,
  };
}

describe.skipIf(SKIP_BROWSER)(browserSuiteTitle('item pages in Chromium'), () => {
  it('the landing page’s search box finds the item, and its result opens the item page', async () => {
    const { context, page, problems } = await openProbedPage(browser, served.url);
    try {
      await page.goto(`${served.url}/`, { waitUntil: 'load' });
      await expect(page.locator(`main a[href="/items"]`).first().isVisible()).resolves.toBe(true);
      await page.getByLabel('Item name (or part of it)').fill('redline (field');
      await Promise.all([page.waitForURL(/\/items\?q=/), page.getByRole('button', { name: 'Search items' }).click()]);
      expect(new URL(page.url()).searchParams.get('q')).toBe('redline (field');
      const results = page.locator('ol.results a');
      const names = await results.allInnerTexts();
      expect(names).toContain(ITEM);
      expect(names.length).toBeGreaterThan(1); // StatTrak™ too, and the other Redlines
      expect(names.length).toBeLessThanOrEqual(50);
      for (const n of names) expect(n.toLowerCase()).toContain('redline (field');
      await screenshot(page, 'item-search');
      await Promise.all([page.waitForURL(`**${ITEM_PATH}`), page.getByRole('link', { name: ITEM, exact: true }).click()]);
      await expect(page.locator('h1').innerText()).resolves.toBe(ITEM);
      expectNoProblems(problems);
    } finally {
      await context.close();
    }
    // At most 50 results, and a search without matches says so.
    const many = await (await fetch(`${served.url}/items?q=AK-47`)).text();
    expect(many.match(/<li><a href="\/items\//g)).toHaveLength(50);
    expect(many).toContain('more match: refine the search');
    const none = await fetch(`${served.url}/items?q=${encodeURIComponent('no such skin')}`);
    expect(none.status).toBe(200);
    expect(await none.text()).toContain('No item name contains “no such skin”');
  });

  it('shows the quotes per market in their currency and in USD, the CSCP band, and the history chart with one path per series', async () => {
    const { context, page, problems } = await openProbedPage(browser, served.url);
    try {
      const res = await page.goto(`${served.url}${ITEM_PATH}`, { waitUntil: 'load' });
      expect(res!.status()).toBe(200);
      expect(res!.headers()['content-type']).toBe('text/html; charset=utf-8');
      expect(res!.headers()['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(res!.headers()['content-security-policy']).toContain("default-src 'none'");
      await expect(page.title()).resolves.toContain(ITEM);
      await expect(page.locator('h1').innerText()).resolves.toBe(ITEM);
      await expect(page.locator('#currency').inputValue()).resolves.toBe('USD');

      // Quotes: one row per market and side, in the market's currency as published, and in USD at the official rates.
      const quotes = (await loadQuotes(db, '730', [ITEM])).get(ITEM)!;
      const rows = await quoteRows(page);
      expect(Object.keys(rows)).toEqual(quotes.map((q) => `${q.marketCode}/${q.side}`));
      for (const q of quotes) {
        const price = formatDecimal(q.price!);
        expect(rows[`${q.marketCode}/${q.side}`]).toEqual([price, q.currencyCode, converted(price, q.currencyCode, 'USD')]);
      }
      // The real quotes of 2026-07-16 (test/integration/real-data.test.ts), each in its market's currency.
      expect(rows['BUFF163/ask']!.slice(0, 2)).toEqual(['201.85', 'CNY']);
      expect(rows['SKINPORT/ask']!.slice(0, 2)).toEqual(['27.14', 'EUR']);
      expect(rows['CSFLOAT/ask']).toEqual(['28.18', 'USD', '28.18']);
      expect(rows['CSCP/mid']![1]).toBe('CNY');
      await expect(page.locator('table.quotes thead').innerText()).resolves.toContain('In USD');
      await expect(page.locator('[data-rates]').innerText()).resolves.toMatch(/1 CNY = 0\.\d+ USD/);

      // CSCP: the mid and its band mid x e^(+-u) (4 decimals), in CNY and in USD.
      const cscp = quotes.find((q) => q.marketCode === 'CSCP')!;
      const factor = Money.exp(new Money(String(cscp.valuation!.uncertainty)));
      const low = cscp.price!.div(factor).toDecimalPlaces(4).toFixed();
      const high = cscp.price!.times(factor).toDecimalPlaces(4).toFixed();
      const cscpCells = async (key: string) => page.locator(`tr[data-cscp="${key}"] td`).allInnerTexts();
      expect(await cscpCells('mid')).toEqual([formatDecimal(cscp.price!), 'CNY', converted(cscp.price!.toFixed(), 'CNY', 'USD'), 'USD']);
      expect(await cscpCells('band_low')).toEqual([low, 'CNY', converted(low, 'CNY', 'USD'), 'USD']);
      expect(await cscpCells('band_high')).toEqual([high, 'CNY', converted(high, 'CNY', 'USD'), 'USD']);
      expect(Number(low)).toBeLessThan(Number(formatDecimal(cscp.price!)));
      await expect(page.locator('#cscp').innerText()).resolves.toContain(`CSCP valuation of 2026-07-17`);
      await expect(page.locator('[data-cscp-u]').innerText()).resolves.toBe(String(cscp.valuation!.uncertainty));

      // The chart: by default the whole history at a week interval; one path per series of the history read.
      const range = await shownRange(page);
      expect(range.interval).toBe('week');
      expect(range.from <= '2021-08-31').toBe(true); // the Buff163 archive
      expect(range.to).toBe('2026-07-17'); // the last valuation
      const itemId = (await itemIdOf(db, '730', ITEM))!;
      const history = await loadItemHistory(db, { itemId, markets: null, series: null, ...range });
      const keys = history.series.map((s) => `${s.marketCode}/${s.series}`);
      expect(keys).toEqual(expect.arrayContaining(['BUFF163/listing_minimum', 'STEAM/sales', 'BUFF163/ask', 'BUFF163/bid', 'SKINPORT/ask']));
      const chart = page.locator('svg.history-chart');
      await expect(chart.count()).resolves.toBe(1);
      const paths = await chart.locator('path.series').evaluateAll((ps) => ps.map((p) => `${p.getAttribute('data-market')}/${p.getAttribute('data-series')}`));
      expect(paths).toEqual(keys);
      // The weekly Buff163 archive line spans years: many points in one path.
      const archive = await chart.locator('path.series[data-series="listing_minimum"]').getAttribute('d');
      expect(archive!.split('L').length).toBeGreaterThan(50);
      await expect(chart.locator('path.cscp-band').count()).resolves.toBe(1);
      const axisTitles = await chart.locator('text.axis-title').allTextContents();
      expect(axisTitles.join(' ')).toContain('Price in USD');
      expect(axisTitles.join(' ')).toContain('Date (UTC');
      const ticks = await chart.locator('text:not(.axis-title)').allTextContents();
      for (const year of ['2022', '2023', '2024', '2025', '2026']) expect(ticks).toContain(year);
      // The legend names every series and the band.
      const legend = await page.locator('#history-chart .legend').innerText();
      for (const k of keys) expect(legend).toContain(k.split('/')[0]!);
      expect(legend).toContain('listing minimum');
      expect(legend).toContain('daily sales');
      expect(legend).toContain('CSCP band');
      // The table fallback: the latest candle of every series, its close exact and in USD.
      const latest = await page.locator('table.latest-candles tbody tr').evaluateAll((trs) =>
        trs.map((tr) => ({ key: `${tr.getAttribute('data-market')}/${tr.getAttribute('data-series')}`, close: tr.querySelector('td.close')!.textContent, usd: tr.querySelector('td.converted')!.textContent })),
      );
      expect(latest.map((r) => r.key)).toEqual(keys);
      for (const s of history.series) {
        const last = [...s.candles].reverse().find((c) => c.close !== null)!;
        expect(latest.find((r) => r.key === `${s.marketCode}/${s.series}`)).toEqual({ key: `${s.marketCode}/${s.series}`, close: last.close, usd: converted(last.close!, s.currencyCode, 'USD') });
      }
      // No script anywhere: everything is server-rendered.
      await expect(page.evaluate(() => document.scripts.length)).resolves.toBe(0);
      await screenshot(page, 'item-page');
      expectNoProblems(problems);
    } finally {
      await context.close();
    }
  });

  it('changes currency, interval and range with its form (no JavaScript): July 2026 daily in EUR with the CSCP band over the valued days', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(`${served.url}${ITEM_PATH}`);
      await page.locator('#currency').selectOption('EUR');
      await page.locator('#interval').selectOption('day');
      await page.locator('#from').fill('2026-07-01');
      await page.locator('#to').fill('2026-07-17');
      await Promise.all([page.waitForURL(/currency=EUR/), page.getByRole('button', { name: 'Show' }).click()]);
      const url = new URL(page.url());
      expect(Object.fromEntries(url.searchParams)).toEqual({ currency: 'EUR', interval: 'day', from: '2026-07-01', to: '2026-07-17' });
      const rows = await quoteRows(page);
      expect(rows['SKINPORT/ask']).toEqual(['27.14', 'EUR', '27.14']);
      expect(rows['BUFF163/ask']).toEqual(['201.85', 'CNY', converted('201.85', 'CNY', 'EUR')]);
      expect(rows['CSFLOAT/ask']).toEqual(['28.18', 'USD', converted('28.18', 'USD', 'EUR')]);
      await expect(page.locator('table.quotes thead').innerText()).resolves.toContain('In EUR');

      const itemId = (await itemIdOf(db, '730', ITEM))!;
      const history = await loadItemHistory(db, { itemId, markets: null, series: null, from: '2026-07-01', to: '2026-07-17', interval: 'day' });
      expect(history.cscp.length).toBeGreaterThanOrEqual(3);
      const chart = page.locator('svg.history-chart');
      const paths = await chart.locator('path.series').evaluateAll((ps) => ps.map((p) => `${p.getAttribute('data-market')}/${p.getAttribute('data-series')}`));
      expect(paths).toEqual(history.series.map((s) => `${s.marketCode}/${s.series}`));
      expect(paths).not.toContain('BUFF163/listing_minimum'); // the archive ends in 2024
      // The band is one shaded area over the valued days (a polygon: twice as many corners as valuations).
      const band = (await chart.locator('path.cscp-band').getAttribute('d'))!;
      expect(band.split(/[ML]/).filter(Boolean).length).toBe(2 * history.cscp.length);
      await expect(page.locator('#history-chart .legend').innerText()).resolves.toContain(`${history.cscp.length} valuations`);
      expect((await chart.locator('text.axis-title').allTextContents()).join(' ')).toContain('Price in EUR');
      await expect(page.locator('table.latest-candles thead').innerText()).resolves.toContain('Close in EUR');
      await screenshot(page, 'item-page-eur-daily');
    } finally {
      await context.close();
    }
  });

  it('answers 404 for an unknown item, with the search box', async () => {
    const { context, page, problems } = await openProbedPage(browser, served.url);
    try {
      const res = await page.goto(`${served.url}/items/${encodeURIComponent('AK-47 | Nonexistent (Field-Tested)')}`, { waitUntil: 'load' });
      expect(res!.status()).toBe(404);
      expect(res!.headers()['content-type']).toBe('text/html; charset=utf-8');
      await expect(page.locator('h1').innerText()).resolves.toBe('No such item');
      await expect(page.locator('main').innerText()).resolves.toContain('knows no CS2 item named “AK-47 | Nonexistent (Field-Tested)”');
      await expect(page.getByLabel('Item name (or part of it)').inputValue()).resolves.toBe('AK-47 | Nonexistent (Field-Tested)');
      await screenshot(page, 'item-page-404');
      expectNoProblems(problems, 404);
    } finally {
      await context.close();
    }
  });

  it('answers 422 with the reason for an unknown currency, a bad interval or date, a reversed or too long range', async () => {
    const { context, page, problems } = await openProbedPage(browser, served.url);
    try {
      const res = await page.goto(`${served.url}${ITEM_PATH}?currency=XYZ`, { waitUntil: 'load' });
      expect(res!.status()).toBe(422);
      await expect(page.locator('[role="alert"] h1').innerText()).resolves.toBe('This page cannot be shown with these parameters');
      await expect(page.locator('[data-parameter="currency"]').innerText()).resolves.toContain('XYZ is not a currency of this service');
      await expect(page.locator('main').innerText()).resolves.toContain('EUR');
      await expect(page.locator(`main a[href="${ITEM_PATH}"]`).first().isVisible()).resolves.toBe(true);
      await screenshot(page, 'item-page-422');
      expectNoProblems(problems, 422);
    } finally {
      await context.close();
    }
    const cases: Array<[string, string, string]> = [
      ['interval=year', 'interval', '“year” is not an interval: use day, week or month'],
      ['from=2026-02-30', 'from', '“2026-02-30” is not a date that exists'],
      ['to=16.07.2026', 'to', '“16.07.2026” is not a date that exists'],
      ['from=2026-07-17&to=2026-07-01', 'from', 'the range is reversed: from (2026-07-17) is after to (2026-07-01)'],
      ['interval=day&from=2021-01-01&to=2026-07-01', 'from', 'interval day allows at most 366'],
    ];
    for (const [query, parameter, message] of cases) {
      const r = await fetch(`${served.url}${ITEM_PATH}?${query}`);
      expect(r.status, query).toBe(422);
      const html = await r.text();
      expect(html, query).toContain(`data-parameter="${parameter}"`);
      expect(html, query).toContain(message);
    }
    // A lower-case code is the same currency.
    expect((await fetch(`${served.url}${ITEM_PATH}?currency=eur`)).status).toBe(200);
  });

  it('answers HEAD like GET without a body, refuses other methods, and is not an API operation', async () => {
    const head = await fetch(`${served.url}${ITEM_PATH}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await head.text()).toBe('');
    expect((await fetch(`${served.url}/items/${encodeURIComponent('No such thing')}`, { method: 'HEAD' })).status).toBe(404);
    expect((await fetch(`${served.url}/items?q=Redline`, { method: 'HEAD' })).status).toBe(200);
    const post = await fetch(`${served.url}${ITEM_PATH}`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    const doc = await (await fetch(`${served.url}/openapi.json`)).json();
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/items'))).toEqual([]);
    // Large pages go compressed to clients that accept it.
    const gz = await fetch(`${served.url}${ITEM_PATH}`, { headers: { 'Accept-Encoding': 'gzip' } });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    // A name with characters that need encoding round-trips; a malformed encoding is a 404, not a 500.
    expect((await fetch(`${served.url}/items/%E0%A4%A`)).status).toBe(404);
    const star = (await db.query<{ market_hash_name: string }>(`SELECT market_hash_name FROM item WHERE market_hash_name LIKE '★%' LIMIT 1`))[0];
    if (star) expect((await fetch(`${served.url}/items/${encodeURIComponent(star.market_hash_name)}`)).status).toBe(200);
  });

  it('says "item data unavailable" with 503 (an HTML page, not a stack trace) when the history cannot be read', async () => {
    await db.query('ALTER TABLE candle_month RENAME TO candle_month_away');
    try {
      const res = await fetch(`${served.url}${ITEM_PATH}`);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('30');
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await res.text()).toContain('<h1>Item data unavailable</h1>');
    } finally {
      await db.query('ALTER TABLE candle_month_away RENAME TO candle_month');
    }
    expect((await fetch(`${served.url}${ITEM_PATH}`)).status).toBe(200);
  });
});

describe('item page helpers (no browser needed)', () => {
  it('reads the query: currency upper-cased, interval, existing days; reports each problem by parameter', () => {
    expect(parseItemQuery(new URLSearchParams('currency=eur&interval=day&from=2026-07-01&to=2026-07-17'))).toEqual({
      query: { currency: 'EUR', interval: 'day', from: '2026-07-01', to: '2026-07-17' },
      problems: [],
    });
    expect(parseItemQuery(new URLSearchParams('')).query).toEqual({ currency: 'USD', interval: null, from: null, to: null });
    const bad = parseItemQuery(new URLSearchParams('currency=$$&interval=hour&from=2026-13-01&to=2026-07-01'));
    expect(bad.problems.map((p) => p.parameter)).toEqual(['currency', 'interval', 'from']);
    expect(parseItemQuery(new URLSearchParams('from=2026-07-02&to=2026-07-01')).problems[0]!.message).toContain('reversed');
  });

  it('defaults the range to the whole history and the interval to what spans it; refuses a given range too long for the interval', () => {
    const q = (over: Partial<ItemQuery>): ItemQuery => ({ currency: 'USD', interval: null, from: null, to: null, ...over });
    const extent = { first: '2021-08-04', last: '2026-07-17' };
    expect(resolveRange(q({}), extent, '2026-07-17')).toEqual({ from: '2021-08-04', to: '2026-07-17', interval: 'week', whole: true, note: null });
    expect(resolveRange(q({}), { first: '2016-01-01', last: '2026-07-17' }, '2026-07-17')).toMatchObject({ interval: 'month' });
    expect(resolveRange(q({}), { first: '2026-07-11', last: '2026-07-17' }, '2026-07-17')).toMatchObject({ interval: 'day' });
    expect(resolveRange(q({ from: '2026-07-01' }), extent, '2026-07-17')).toMatchObject({ from: '2026-07-01', to: '2026-07-17', interval: 'day', whole: false });
    // An explicit interval shortens a defaulted end, and refuses a given range it cannot span.
    expect(resolveRange(q({ interval: 'day' }), extent, '2026-07-17')).toMatchObject({ from: '2025-07-17', to: '2026-07-17', interval: 'day' });
    expect(resolveRange(q({ interval: 'day', from: '2024-01-01', to: '2026-01-01' }), extent, '2026-07-17')).toMatchObject({ parameter: 'from' });
    expect(resolveRange(q({}), null, '2026-07-17')).toMatchObject({ from: '2026-07-17', to: '2026-07-17' });
  });

  it('draws nice decimal ticks and calendar date ticks', () => {
    const y = niceTicks(toMoney('8.73'), toMoney('43.84'), 6);
    expect(y.ticks.map((t) => t.toFixed())).toEqual(['0', '10', '20', '30', '40', '50']);
    expect(niceTicks(toMoney('0.0012'), toMoney('0.0031')).step.toFixed()).toBe('0.0005');
    expect(niceTicks(toMoney('7'), toMoney('7')).ticks.length).toBeGreaterThan(1);
    const days = (a: string, b: string) => timeTicks(Date.parse(`${a}T00:00:00Z`), Date.parse(`${b}T00:00:00Z`)).map((t) => t.label);
    expect(days('2021-08-02', '2026-07-13')).toEqual(['2022', '2023', '2024', '2025', '2026']);
    expect(days('2026-07-01', '2026-07-17')).toEqual(['2026-07-01', '2026-07-03', '2026-07-05', '2026-07-07', '2026-07-09', '2026-07-11', '2026-07-13', '2026-07-15', '2026-07-17']);
    expect(days('2025-07-14', '2026-07-13')).toEqual(['2025-09', '2025-11', '2026-01', '2026-03', '2026-05', '2026-07']);
    expect(displayAmount(toMoney('29.535'))).toBe('29.54');
    expect(displayAmount(toMoney('29.525'))).toBe('29.52'); // half-even
    expect(displayAmount(toMoney('0.000301234'))).toBe('0.0003012');
  });
});
