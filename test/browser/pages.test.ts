/**
 * The landing page, the API reference and GraphiQL in a real browser (Debian's Chromium), against the
 * real app on a local port with the bundled catalogue: each page shows what a reader needs, logs no
 * console error, throws nothing, and loads nothing from another origin (the machine is offline).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { testApp, type TestApp } from '../helpers/app.js';
import { TAGS } from '../../src/operations/docs.js';
import { browserSuiteTitle, launchBrowser, openProbedPage, screenshot, serve, SKIP_BROWSER, type PageProblems, type Served } from './browser.js';

let t: TestApp;
let served: Served;
let browser: Browser;

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  // The landing page's examples use the service's public address (PUBLIC_BASE_URL, else where it listens): here, where
  // the test serves it.
  let base = '';
  t = await testApp({ publicBaseUrl: () => base });
  served = await serve(t.app);
  base = served.url;
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

describe.skipIf(SKIP_BROWSER)(browserSuiteTitle('pages in Chromium'), () => {
  it('/ says what the service is, links to the docs, status, GraphiQL and OpenAPI, and shows both ways to call it', async () => {
    const { context, page, problems } = await openProbedPage(browser, served.url);
    try {
      const res = await page.goto(`${served.url}/`, { waitUntil: 'load', timeout: 90_000 });
      expect(res!.status()).toBe(200);
      expect(res!.headers()['content-type']).toBe('text/html; charset=utf-8');
      expect(res!.headers()['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(res!.headers()['content-security-policy']).toContain("default-src 'none'");
      await expect(page.title()).resolves.toContain('Quotegate');
      const text = await page.locator('main').innerText();
      for (const phrase of ['CSCP', 'ask and bid', 'fee', 'Currencies', 'Marketplace catalogue', 'X-API-Key', 'GraphQL']) {
        expect(text.toLowerCase()).toContain(phrase.toLowerCase());
      }
      // The REST example uses this service's own address and a real item name.
      expect(text).toContain(`curl -H "Authorization: Bearer qg_..."`);
      expect(text).toContain(`${served.url}/prices?app_id=730&market_hash_name=AK-47%20%7C%20Redline%20(Field-Tested)`);
      expect(text).toContain(`POST ${served.url}/graphql`);
      for (const href of ['/docs', '/status/page', '/graphql', '/openapi.json']) {
        await expect(page.locator(`main a[href="${href}"]`).first().isVisible()).resolves.toBe(true);
      }
      // The endpoint table comes from the catalogue.
      await expect(page.locator('main table').innerText()).resolves.toContain('GET /prices');
      // Its stylesheet is served and applied (system fonts, no web fonts).
      const css = await page.evaluate(() => getComputedStyle(document.querySelector('.site-header')!).borderBottomStyle);
      expect(css).toBe('solid');
      await screenshot(page, 'landing');
      expectNoProblems(problems);
    } finally {
      await context.close();
    }
  });

  it('/docs renders the API reference from /openapi.json with the bundled renderer, offline', async () => {
    const { context, page, problems } = await openProbedPage(browser, served.url);
    try {
      const openapi = page.waitForResponse((r) => r.url() === `${served.url}/openapi.json` && r.status() === 200);
      const res = await page.goto(`${served.url}/docs`, { waitUntil: 'load', timeout: 90_000 });
      expect(res!.status()).toBe(200);
      expect(res!.headers()['content-type']).toBe('text/html; charset=utf-8');
      expect(res!.headers()['x-request-id']).toBeTruthy();
      await openapi;
      // Operations of the document appear as the renderer draws them: grouped by tag, named by summary, with
      // the document's servers, licence and examples (src/operations/, examples.ts).
      await page.getByRole('heading', { name: 'Quotegate', exact: true }).first().waitFor({ timeout: 60_000 });
      const text = await page.locator('body').innerText();
      for (const tag of TAGS) expect(text).toContain(tag.name);
      for (const summary of ['Quotes of one item', 'Quotes of up to 1,000 items', 'Download every quote of a game']) expect(text).toContain(summary);
      for (const path of ['/prices', '/prices/batch', '/prices/export']) expect(text).toContain(path);
      expect(text).toContain('CSCP');
      expect(text).toContain('Proprietary (all rights reserved)');
      // The first operation's request and answer are the document's examples: the item, the markets, the quotes.
      expect(text).toContain(`${served.url}/prices?market_hash_name=AK-47%20%7C%20Redline%20(Field-Tested)&app_id=730&markets=BUFF163%2CSKINPORT%2CCSCP&side=all`);
      expect(text).toContain('"market_price_amount": "201.85"');
      // Another group opens on its summary and shows its path.
      await page.getByText('Catalogue', { exact: true }).first().click();
      await page.getByText("A marketplace's fee schedule", { exact: true }).first().click();
      await page.getByText('/websites/{code}/fee-schedule').first().waitFor({ timeout: 30_000 });
      // The renderer's script comes from this service, pinned by version.
      const scripts = await page.evaluate(() => [...document.scripts].map((s) => s.src).filter(Boolean));
      expect(scripts.some((s) => /\/assets\/vendor\/scalar-api-reference-\d+\.\d+\.\d+\/standalone\.js$/.test(s))).toBe(true);
      // Opening an operation shows its parameters.
      await page.locator('a', { hasText: '/prices' }).first().click();
      await page.getByText('market_hash_name').first().waitFor({ timeout: 30_000 });
      await screenshot(page, 'docs');
      expectNoProblems(problems);
    } finally {
      await context.close();
    }
  });

  it('GraphiQL at /graphql shows the fee-schedule example, runs it with the run button, and shows fee data', async () => {
    const { context, page, problems } = await openProbedPage(browser, served.url);
    try {
      const res = await page.goto(`${served.url}/graphql`, { waitUntil: 'load', timeout: 90_000 });
      expect(res!.status()).toBe(200);
      expect(res!.headers()['content-type']).toBe('text/html; charset=utf-8');
      expect(res!.headers()['x-request-id']).toBeTruthy();
      const editor = page.locator('.graphiql-query-editor');
      await editor.waitFor({ timeout: 60_000 });
      await expect.poll(() => editor.innerText(), { timeout: 30_000 }).toContain('WebsitesWithFeeSchedules');
      const run = page.locator('button.graphiql-execute-button');
      const answer = page.waitForResponse((r) => r.url().startsWith(`${served.url}/graphql`) && r.request().method() === 'POST' && (r.request().postData() ?? '').includes('WebsitesWithFeeSchedules'));
      await run.click();
      const body = await (await answer).json();
      expect(body.errors).toBeUndefined();
      const withFees = body.data.websites.filter((w: any) => w.feeSchedule.slots.sale?.calculationChain.steps.length > 0);
      expect(withFees.length).toBeGreaterThan(0);
      const result = page.locator('.graphiql-response');
      await expect.poll(() => result.innerText(), { timeout: 30_000 }).toContain('feeSchedule');
      const shown = await result.innerText();
      expect(shown).toContain('"websites"');
      expect(shown).toContain('"slots"');
      expect(shown).toContain('"calculationChain"');
      await screenshot(page, 'graphiql');
      expectNoProblems(problems);
    } finally {
      await context.close();
    }
  });

  it('pages answer HEAD, refuse other methods with 405, are not API operations, and send bundles compressed', async () => {
    for (const p of ['/', '/docs', '/status/page']) {
      const head = await fetch(`${served.url}${p}`, { method: 'HEAD' });
      expect([200, 503]).toContain(head.status);
      expect(head.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const post = await fetch(`${served.url}${p}`, { method: 'POST' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD');
    }
    const doc = await (await fetch(`${served.url}/openapi.json`)).json();
    for (const p of ['/', '/docs', '/status/page']) expect(doc.paths[p]).toBeUndefined();
    const endpoints = await (await fetch(`${served.url}/endpoints`)).json();
    expect(endpoints.data.map((e: any) => e.path)).not.toContain('/docs');
    expect((await fetch(`${served.url}/assets/no-such-file.js`)).status).toBe(404);
    // Large pages and bundles are sent compressed to clients that accept it.
    const landing = await fetch(`${served.url}/`, { headers: { 'Accept-Encoding': 'gzip' } });
    expect(landing.headers.get('content-encoding')).toBe(null); // small: sent as is
    expect(await landing.text()).toContain('<h1>Quotegate</h1>');
    const docs = await (await fetch(`${served.url}/docs`)).text();
    const bundle = await fetch(`${served.url}${/src="(\/assets\/vendor\/[^"]+)"/.exec(docs)![1]}`, { headers: { 'Accept-Encoding': 'gzip' } });
    expect(bundle.headers.get('content-encoding')).toBe('gzip');
    expect(bundle.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await bundle.text()).length).toBeGreaterThan(1_000_000);
  });
});
