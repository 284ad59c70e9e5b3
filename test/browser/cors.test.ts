/**
 * CORS in a real browser (Debian's Chromium): a dashboard page served by a second local HTTP server (another
 * port, so another origin) calls the API with fetch(): REST with an X-API-Key header (a preflighted request),
 * the export, and GraphQL with a JSON POST. The browser lets the page read the answers and the exposed headers
 * (X-Request-ID, RateLimit, ETag, X-Credit-Remaining, ...). A service whose CORS_ORIGINS does not list the
 * page's origin is refused by the browser itself.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { buildSnapshot } from '../../src/exports/exports.js';
import { browserSuiteTitle, launchBrowser, openProbedPage, serve, SKIP_BROWSER, type Served } from './browser.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';

/**
 * The dashboard: on load it calls the API named by `?api=` with the key of `?key=` and leaves what it
 * could read in `window.results` (a failed fetch leaves its error).
 */
const DASHBOARD_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Dashboard on another origin</title></head>
<body><pre id="out">running</pre>
<script>
(async () => {
  const params = new URLSearchParams(location.search);
  const api = params.get('api');
  const key = params.get('key');
  const read = (res, names) => Object.fromEntries(names.map((n) => [n, res.headers.get(n)]));
  const out = {};
  try {
    const prices = await fetch(api + '/prices?market_hash_name=' + encodeURIComponent(params.get('name')), { headers: { 'X-API-Key': key } });
    out.prices = { status: prices.status, headers: read(prices, ['X-Request-ID', 'RateLimit', 'RateLimit-Policy']), body: await prices.json() };
    const file = await fetch(api + '/prices/export', { headers: { 'X-API-Key': key } });
    out.export = {
      status: file.status,
      headers: read(file, ['X-Request-ID', 'ETag', 'X-Export-Generated-At', 'X-Billable', 'X-Credit-Cost', 'X-Credit-Remaining']),
      bytes: (await file.text()).length,
    };
    const gql = await fetch(api + '/graphql', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
      body: JSON.stringify({ query: 'query($n: String!) { prices(marketHashName: $n) { marketHashName } }', variables: { n: params.get('name') } }),
    });
    out.graphql = { status: gql.status, headers: read(gql, ['X-Request-ID', 'RateLimit']), body: await gql.json() };
  } catch (e) {
    out.error = String(e);
  }
  window.results = out;
  document.getElementById('out').textContent = JSON.stringify(out, null, 2);
})();
</script></body></html>`;

/** The dashboard's own server: another port of 127.0.0.1, hence another origin than the API's. */
async function serveDashboard(): Promise<Served> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(DASHBOARD_HTML);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

let open: TestApp;
let closed: TestApp;
let api: Served;
let closedApi: Served;
let dashboard: Served;
let browser: Browser;

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  dashboard = await serveDashboard();
  open = await testApp();
  // This service only admits another dashboard: the page's origin is not listed.
  closed = await testApp({ corsOrigins: ['https://dashboard.example.com'] });
  for (const t of [open, closed]) await ingestQuotes(t.db, [obs(ITEM, { price: '201.85' }), obs(ITEM, { side: 'bid', price: '198.19' })]);
  await buildSnapshot(open.db, '730', 'ask');
  api = await serve(open.app);
  closedApi = await serve(closed.app);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await api?.close();
  await closedApi?.close();
  await dashboard?.close();
  await open?.close();
  await closed?.close();
});

/** Opens the dashboard against `apiUrl` with `key` and returns what its script could read. */
async function runDashboard(apiUrl: string, key: string) {
  const { context, page, problems } = await openProbedPage(browser, dashboard.url);
  try {
    const res = await page.goto(`${dashboard.url}/?api=${encodeURIComponent(apiUrl)}&key=${encodeURIComponent(key)}&name=${encodeURIComponent(ITEM)}`, {
      waitUntil: 'load',
      timeout: 90_000,
    });
    expect(res!.status()).toBe(200);
    await page.waitForFunction(() => (window as unknown as { results?: unknown }).results !== undefined, undefined, { timeout: 60_000 });
    const results = await page.evaluate(() => (window as unknown as { results: any }).results);
    return { results, problems };
  } finally {
    await context.close();
  }
}

describe.skipIf(SKIP_BROWSER)(browserSuiteTitle('CORS in Chromium'), () => {
  it('a page on another origin calls REST, the export and GraphQL with an API key and reads the exposed headers', async () => {
    expect(new URL(dashboard.url).origin).not.toBe(new URL(api.url).origin);
    const a = await createAccount(open.db, { credits: 100n });
    const { results: r, problems } = await runDashboard(api.url, a.key);
    expect(r.error).toBeUndefined();

    expect(r.prices.status).toBe(200);
    expect(r.prices.headers['X-Request-ID']).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.prices.body.meta.request_id).toBe(r.prices.headers['X-Request-ID']);
    expect(r.prices.headers.RateLimit).toMatch(/^"getPrices";r=119;t=\d+$/);
    expect(r.prices.headers['RateLimit-Policy']).toBe('"getPrices";q=120;w=60');
    expect(r.prices.body.data.market_hash_name).toBe(ITEM);
    expect(r.prices.body.meta.credit.remaining).toBe(99);

    expect(r.export.status).toBe(200);
    expect(r.export.headers['X-Request-ID']).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.export.headers.ETag).toMatch(/^".+"$/);
    expect(r.export.headers['X-Export-Generated-At']).toBeTruthy();
    expect(r.export.headers['X-Billable']).toBe('true');
    expect(r.export.headers['X-Credit-Cost']).toBe('10');
    expect(r.export.headers['X-Credit-Remaining']).toBe('89');
    expect(r.export.bytes).toBeGreaterThan(0);

    expect(r.graphql.status).toBe(200);
    expect(r.graphql.headers['X-Request-ID']).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.graphql.headers.RateLimit).toMatch(/^"getPrices";r=118;t=\d+$/);
    expect(r.graphql.body.data.prices.marketHashName).toBe(ITEM);
    expect(r.graphql.body.extensions.billing).toEqual({ billable: true, credit: { cost: 1, remaining: 88 } });

    expect(problems.pageErrors).toEqual([]);
    expect(problems.consoleErrors).toEqual([]);
    expect(problems.failedRequests).toEqual([]);
    expect(problems.externalRequests).toEqual([]);
  });

  it('the browser refuses the answers of a service that does not list the page origin, and nothing is charged', async () => {
    const a = await createAccount(closed.db, { credits: 100n });
    const { results: r, problems } = await runDashboard(closedApi.url, a.key);
    expect(r.prices).toBeUndefined();
    expect(r.error).toMatch(/Failed to fetch/);
    expect(problems.consoleErrors.join('\n')).toMatch(/CORS policy/);
    // The preflight was answered without the page's origin, so the GET itself was never sent.
    const [row] = await closed.db.query<{ used: string }>(`SELECT credits_used::text AS used FROM account WHERE id = $1`, [a.accountId]);
    expect(Number(row!.used)).toBe(0);
  });
});
