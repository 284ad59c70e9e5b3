/**
 * /status/page in a real browser (Debian's Chromium) over 24 hours of history written by the real
 * recorders (status-seed.ts), against the app on a local port with a fixed clock: the bars, the grey
 * "no data" buckets and the scores are the ones `GET /status` returns; components without data say
 * so; the page needs no JavaScript; and an unreadable history gives "status data unavailable" (503).
 * UPDATE_README_SCREENSHOT=1 also copies the screenshot to docs/status-page.png.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { testApp, type TestApp } from '../helpers/app.js';
import { projectRoot } from '../../src/lib/paths.js';
import { SEED_NOW, seedStatusHistory } from './status-seed.js';
import { browserSuiteTitle, launchBrowser, openProbedPage, screenshot, serve, SKIP_BROWSER, type PageProblems, type Served } from './browser.js';

let t: TestApp;
let served: Served;
let browser: Browser;
let status: any;

/** A URL on which connections are refused (a port that was just free). */
async function closedUrl(): Promise<string> {
  const spare = http.createServer();
  await new Promise<void>((resolve) => spare.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(spare.address() as AddressInfo).port}/`;
  await new Promise<void>((resolve) => spare.close(() => resolve()));
  return url;
}

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  t = await testApp({
    clock: () => SEED_NOW,
    status: { infrastructureComponents: ['database', 'export', 'valuation', 'ingestion'], distribution: { '52.52,13.40': { node_count: 3, datacenter_count: 1 }, '31.23,121.47': { node_count: 8, datacenter_count: 2 } } },
  });
  served = await serve(t.app);
  await seedStatusHistory(t.db, served.url, await closedUrl());
  const res = await t.get('/status');
  expect(res.status).toBe(200);
  status = res.body.data;
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await served?.close();
  await t?.close();
});

function expectNoProblems(problems: PageProblems) {
  expect(problems.pageErrors).toEqual([]);
  expect(problems.consoleErrors).toEqual([]);
  expect(problems.failedRequests).toEqual([]);
  expect(problems.externalRequests).toEqual([]);
}

/** Class and tooltip of each bar of a component row, as drawn. */
async function barsOf(page: Page, component: string) {
  return page.locator(`[data-component="${component}"] svg.bars rect`).evaluateAll((rects) =>
    rects.map((r) => ({ level: r.getAttribute('class'), title: r.querySelector('title')?.textContent ?? '' })),
  );
}

describe.skipIf(SKIP_BROWSER)(browserSuiteTitle('status page in Chromium'), () => {
  it('draws the recorded history of GET /status: bars per bucket, grey where there is no data, scores, collection, proxies', async () => {
    const { context, page, problems } = await openProbedPage(browser, served.url);
    try {
      const res = await page.goto(`${served.url}/status/page`, { waitUntil: 'load' });
      expect(res!.status()).toBe(200);
      expect(res!.headers()['content-type']).toBe('text/html; charset=utf-8');
      expect(res!.headers()['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(res!.headers()['content-encoding']).toBe('gzip'); // a quarter megabyte of SVG, compressed
      await expect(page.locator('h1').innerText()).resolves.toBe('Service status');
      await expect(page.locator('main').innerText()).resolves.toContain('As of 2026-11-21 12:07 UTC');

      // The API row: one bar per 15-minute bucket; exactly the buckets /status has are coloured.
      const api = await barsOf(page, 'api');
      expect(api).toHaveLength(97);
      const apiBuckets = Object.keys(status.service.api);
      expect(api.filter((b) => b.level !== 'nodata')).toHaveLength(apiBuckets.length);
      expect(api.filter((b) => b.level === 'nodata').length).toBeGreaterThanOrEqual(4); // 03:00-04:00
      expect(api.find((b) => b.title.startsWith('2026-11-21 03:15–03:30'))!).toEqual({ level: 'nodata', title: '2026-11-21 03:15–03:30 UTC: no data' });
      const degraded = api.find((b) => b.title.startsWith('2026-11-21 09:15–09:30'))!;
      expect(degraded.level).toBe('degraded');
      const b0915 = status.service.api[String(Date.parse('2026-11-21T09:15:00Z') / 1000)];
      expect(degraded.title).toContain(`${b0915.ok} of ${b0915.total} probes up (${b0915.availability} %)`);
      expect(api.find((b) => b.title.startsWith('2026-11-21 09:30–09:45'))!.level).toBe('down');
      expect(api.find((b) => b.title.startsWith('2026-11-21 11:45–12:00'))!.level).toBe('up');

      // Components with no data say so and are never drawn as up.
      for (const key of ['api_cn', 'monitor', 'valuation']) {
        const row = page.locator(`[data-component="${key}"]`);
        await expect(row.locator('.state').innerText()).resolves.toBe('No data');
        await expect(row.innerText()).resolves.toContain('No data in the last 24 hours');
        expect((await barsOf(page, key)).every((b) => b.level === 'nodata')).toBe(true);
      }
      await expect(page.locator('[data-component="redis"]').count()).resolves.toBe(0);

      // Infrastructure: 5-minute buckets; the export job's failing hour and the quiet ingestion hours are grey.
      const exportBars = await barsOf(page, 'export');
      expect(exportBars).toHaveLength(289);
      expect(exportBars.filter((b) => b.level === 'up')).toHaveLength(Object.keys(status.infrastructure.export).length);
      expect(exportBars.find((b) => b.title.startsWith('2026-11-21 06:30–06:35'))).toEqual({ level: 'nodata', title: '2026-11-21 06:30–06:35 UTC: no data (the check failed or did not run)' });
      expect(exportBars.find((b) => b.title.startsWith('2026-11-21 07:30–07:35'))!.level).toBe('up');
      const ingestion = await barsOf(page, 'ingestion');
      expect(ingestion.find((b) => b.title.startsWith('2026-11-21 06:00–06:05'))!.level).toBe('nodata');
      await expect(page.locator('[data-component="database"] .state').innerText()).resolves.toBe('Check passing');

      // The banner: current state from the latest buckets, with the earlier trouble and the silent components.
      const banner = await page.locator('.banner').innerText();
      expect(banner).toContain('All monitored components operational');
      expect(banner).toContain('API, failed probes in 2 of');
      expect(banner).toContain('No data for: API (China), Monitor, CSCP valuation job');

      // Hourly scores: the recorded ones, "–" for hours without any.
      const serviceRow = page.locator('tr[data-area="service"] td.cell');
      await expect(serviceRow.count()).resolves.toBe(24);
      const cells = await serviceRow.evaluateAll((tds) => tds.map((td) => ({ cls: td.className, text: td.textContent, title: td.getAttribute('title') })));
      const h03 = cells.find((c) => c.title!.startsWith('2026-11-21 03:00–04:00'))!;
      expect(h03).toEqual({ cls: 'cell nodata', text: '–', title: '2026-11-21 03:00–04:00 UTC: no score (no data)' });
      const h09 = cells.find((c) => c.title!.startsWith('2026-11-21 09:00–10:00'))!;
      expect(h09.title).toContain(status.summary.service[String(Date.parse('2026-11-21T09:00:00Z') / 1000)]);
      expect(h09.cls).not.toContain('up');
      expect(Object.keys(status.summary.datasource).length).toBeGreaterThan(0);

      // Price collection: the chart and one row per market, counts from /status.
      await expect(page.locator('svg.chart rect.bar').count()).resolves.toBeGreaterThan(15);
      await expect(page.locator('svg.chart rect.nodata-mark').count()).resolves.toBeGreaterThanOrEqual(2); // 05:00 and 06:00
      const buffTotal = Object.values(status.datasource.result.BUFF163 as Record<string, number>).reduce((a, b) => a + b, 0);
      // (the collection table's row: the freshness table below has a row of the market too, with data-stale)
      await expect(page.locator('tr[data-market="BUFF163"]:not([data-stale])').innerText()).resolves.toContain(buffTotal.toLocaleString('en-US'));
      await expect(page.locator('tr[data-market="YOUPIN"]:not([data-stale])').count()).resolves.toBe(1);
      await expect(page.locator('tr[data-market="CSFLOAT"]:not([data-stale])').count()).resolves.toBe(1);

      // Proxy distribution.
      const proxies = await page.locator('table.distribution').innerText();
      expect(proxies).toContain('52.52,13.40');
      expect(proxies).toMatch(/Total\s+11\s+3/);

      // No script at all: everything above is server-rendered.
      await expect(page.evaluate(() => document.scripts.length)).resolves.toBe(0);
      await expect(page.locator('.legend').first().innerText()).resolves.toContain('no data');
      const file = await screenshot(page, 'status-page');
      if (process.env.UPDATE_README_SCREENSHOT === '1') fs.copyFileSync(file, path.join(projectRoot, 'docs', 'status-page.png'));
      expectNoProblems(problems);
    } finally {
      await context.close();
    }
  });

  it('reads the same without JavaScript', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      await page.goto(`${served.url}/status/page`);
      await expect(page.locator('[data-component="api"] svg.bars rect').count()).resolves.toBe(97);
      await expect(page.locator('.banner').innerText()).resolves.toContain('All monitored components operational');
    } finally {
      await context.close();
    }
  });

  it('says "status data unavailable" with 503 when the history cannot be read', async () => {
    await t.db.prisma.$executeRawUnsafe('ALTER TABLE status_summary RENAME TO status_summary_away');
    const { context, page, problems } = await openProbedPage(browser, served.url);
    try {
      const res = await page.goto(`${served.url}/status/page`, { waitUntil: 'load' });
      expect(res!.status()).toBe(503);
      expect(res!.headers()['retry-after']).toBe('30');
      expect(res!.headers()['content-type']).toBe('text/html; charset=utf-8');
      await expect(page.locator('h1').innerText()).resolves.toBe('Status data unavailable');
      await expect(page.locator('main').innerText()).resolves.toContain('not a report that the service is up or down');
      await expect(page.locator('svg.bars').count()).resolves.toBe(0);
      await screenshot(page, 'status-page-unavailable');
      expect(problems.pageErrors).toEqual([]);
      // Chromium reports the document's own 503 as a failed resource; nothing else may fail.
      expect(problems.consoleErrors.filter((e) => !e.includes('status of 503'))).toEqual([]);
      expect(problems.failedRequests).toEqual([]);
      expect(problems.externalRequests).toEqual([]);
    } finally {
      await context.close();
      await t.db.prisma.$executeRawUnsafe('ALTER TABLE status_summary_away RENAME TO status_summary');
    }
    expect((await fetch(`${served.url}/status/page`)).status).toBe(200);
  });
});
