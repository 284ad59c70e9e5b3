/**
 * The valuation page `/valuation` (issue: a valuation that earns trust, point 1) in a real browser (Debian's
 * Chromium) against the real app: the stored accuracy series as charts and tables that read without
 * JavaScript, opened on the latest scored days however long ago they were (issue 44, point 7), the targets scored
 * against their side's only input on their own labelled row, the range form, the empty state and its hint, the 422
 * page for a bad range, a link from the landing page, and no console error or request to another origin.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { testApp, type TestApp } from '../helpers/app.js';
import { browserSuiteTitle, launchBrowser, openProbedPage, screenshot, serve, SKIP_BROWSER, type Served } from './browser.js';
import { storeAccuracyDay, type AccuracyDay, type AccuracySegment } from '../../src/valuation/accuracy.js';

let t: TestApp;
let served: Served;
let browser: Browser;

const seg = (segment: AccuracySegment['segment'], value: string, medianError: number, calibration: number, targets = 100): AccuracySegment => ({
  segment,
  value,
  items: Math.round(targets / 3),
  targets,
  medianError,
  p90Error: medianError * 3,
  calibration,
});
const DAYS: AccuracyDay[] = ['2026-07-12', '2026-07-13', '2026-07-14', '2026-07-16'].map((date, i) => ({
  date,
  source: i < 3 ? 'recomputed' : 'published',
  segments: [
    seg('all', 'all', 0.05 + i * 0.01, 0.7 - i * 0.01, 4000),
    seg('target', 'ask', 0.06 + i * 0.01, 0.66, 3500),
    seg('target', 'bid', 0.04, 0.7, 60),
    seg('target', 'bid_only_input', 0.000007, 0.9, 440),
    seg('sides', 'one_sided', 0.08, 0.59, 600),
    seg('sides', 'two_sided', 0.05, 0.71, 3400),
    seg('band', 'under_1', 0.09, 0.6, 800),
    seg('band', 'over_100', 0.03, 0.75, 300),
    seg('type', 'weapon', 0.05, 0.7, 3000),
  ],
}));

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  // Months after the last scored day: the page still opens on the scored days.
  t = await testApp({ clock: () => new Date('2026-11-27T12:00:00Z') });
  for (const d of DAYS) await storeAccuracyDay(t.db, { ...d, learning: { date: d.date, calibration: {}, markets: {} } }, new Date('2026-07-17T00:05:00Z'));
  served = await serve(t.app);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await served?.close();
  await t?.close();
});

describe.skipIf(SKIP_BROWSER)(browserSuiteTitle('the valuation page in Chromium'), () => {
  it('shows the median error and calibration per day as charts, the latest day by segment and every day, without JavaScript', async () => {
    const { context, page, problems } = await openProbedPage(browser, served.url);
    try {
      await page.goto(`${served.url}/`, { waitUntil: 'load' });
      await page.locator('main a[href="/valuation"]').first().click();
      await page.waitForURL(`${served.url}/valuation`);
      const res = await page.reload({ waitUntil: 'load' });
      expect(res!.status()).toBe(200);
      expect(res!.headers()['content-security-policy']).toContain("default-src 'none'");
      await expect(page.title()).resolves.toContain('Valuation accuracy');
      // Opened on the 90 days ending at the last scored day, not on the empty 90 days ending yesterday.
      expect([await page.inputValue('input[name="from"]'), await page.inputValue('input[name="to"]')]).toEqual(['2026-04-18', '2026-07-16']);
      const main = await page.locator('main').innerText();
      expect(main).toContain('How accurate is the CSCP valuation?');
      expect(main).toContain('68.3 %');
      // Two charts: three error lines; three calibration lines plus the promised 68 %; a point per day and line.
      expect(await page.locator('figure.chart').count()).toBe(2);
      expect(await page.locator('figure.chart').nth(0).locator('path').count()).toBe(3);
      expect(await page.locator('figure.chart').nth(1).locator('path').count()).toBe(4);
      expect(await page.locator('figure.chart').nth(0).locator('circle').count()).toBe(3 * DAYS.length);
      await expect(page.locator('figure.chart').nth(0).locator('circle title').first().textContent()).resolves.toBe('All targets, 2026-07-12: 0.050');
      // The latest day by segment, in the served order, with its figures.
      expect(await page.locator('#latest').textContent()).toBe('2026-07-16 by segment');
      const rows = await page.locator('#latest + p + table tbody tr').allInnerTexts();
      expect(rows.map((r) => r.split('\t')[0])).toEqual([
        'All targets',
        'Ask targets',
        'Bid targets',
        'Bid targets scored against their only input (left out of the other rows)',
        'One-sided items (asks only)',
        'Two-sided items',
        'Mid under 1 CNY',
        'Mid over 100 CNY',
        'Item type: weapon',
      ]);
      expect(rows[0]!.split('\t')).toEqual(['All targets', '1333', '4000', '0.0800', '0.2400', '67.0 %']);
      // Every day, newest first, with its source.
      const days = await page.locator('#days + table tbody tr').allInnerTexts();
      expect(days.map((r) => r.split('\t').slice(0, 2))).toEqual([
        ['2026-07-16', 'published'],
        ['2026-07-14', 'recomputed'],
        ['2026-07-13', 'recomputed'],
        ['2026-07-12', 'recomputed'],
      ]);
      await screenshot(page, 'valuation-page');
      // The range form works without JavaScript: a range with two days.
      await page.fill('input[name="from"]', '2026-07-13');
      await page.fill('input[name="to"]', '2026-07-14');
      await page.click('form.range button');
      await page.waitForURL(/from=2026-07-13/);
      expect(await page.locator('#days + table tbody tr').count()).toBe(2);
      expect(problems.pageErrors).toEqual([]);
      expect(problems.consoleErrors).toEqual([]);
      expect(problems.externalRequests).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('says so when nothing was scored in the range, with the scored days and a link to them; a reversed or bad range is a 422 page', async () => {
    const empty = await fetch(`${served.url}/valuation?from=2025-01-01&to=2025-01-31`);
    expect(empty.status).toBe(200);
    const text = await empty.text();
    expect(text).toContain('No valuation day in 2025-01-01 – 2025-01-31 has been scored yet.');
    expect(text).toContain('Scored days run from 2026-07-12 to 2026-07-16: <a href="/valuation">show the latest 90 days</a>');
    const reversed = await fetch(`${served.url}/valuation?from=2026-07-14&to=2026-07-13`);
    expect(reversed.status).toBe(422);
    expect(await reversed.text()).toContain('must not be after to');
    const bad = await fetch(`${served.url}/valuation?from=2026-02-30`);
    expect(bad.status).toBe(422);
    expect(await bad.text()).toContain('from: must be a date YYYY-MM-DD that exists');
  });
});
