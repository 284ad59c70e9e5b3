/**
 * Browser-test support: Debian's Chromium driven by playwright-core, the real app behind an in-process
 * node:http server, and a page probe that records console errors, page errors, failed requests and
 * any request leaving this machine. Without /usr/bin/chromium the browser suites are skipped (their
 * title says why) unless BROWSER_REQUIRED=1, when they fail.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { projectRoot } from '../../src/lib/paths.js';
import type { App } from '../../src/app.js';

/** The Chromium binary (Debian's package). */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** BROWSER_REQUIRED=1 (CI): a missing browser fails the suites instead of skipping them. */
export const BROWSER_REQUIRED = process.env.BROWSER_REQUIRED === '1';
/** Whether the browser suites run. */
export const BROWSER_AVAILABLE = fs.existsSync(CHROMIUM_PATH);
/** Whether the browser suites are skipped (no browser, and not required). */
export const SKIP_BROWSER = !BROWSER_AVAILABLE && !BROWSER_REQUIRED;

/** A suite title that says why it is skipped when it is. */
export function browserSuiteTitle(title: string): string {
  return SKIP_BROWSER ? `${title} — SKIPPED: ${CHROMIUM_PATH} not found (apt-get install chromium; BROWSER_REQUIRED=1 makes this fail)` : title;
}

if (SKIP_BROWSER) {
  console.warn(`browser tests skipped: ${CHROMIUM_PATH} not found (apt-get install chromium; BROWSER_REQUIRED=1 makes this fail)`);
}

/** Where the screenshots go (git-ignored). */
export const SCREENSHOT_DIR = path.join(projectRoot, 'test-output', 'screenshots');

/** Starts headless Chromium; throws with a clear message when it is missing. */
export async function launchBrowser(): Promise<Browser> {
  if (!BROWSER_AVAILABLE) throw new Error(`BROWSER_REQUIRED=1 but ${CHROMIUM_PATH} is missing: apt-get install -y --no-install-recommends chromium`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** The app listening on 127.0.0.1 on a free port. */
export interface Served {
  url: string;
  close(): Promise<void>;
}

/** Serves `app` with node:http (as `quotegate serve` does). */
export async function serve(app: App): Promise<Served> {
  const server = http.createServer(app.adapter as unknown as http.RequestListener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** What went wrong on a page, as the browser reported it. */
export interface PageProblems {
  consoleErrors: string[];
  pageErrors: string[];
  failedRequests: string[];
  /** Requests to anything but the service under test (the page must work offline). */
  externalRequests: string[];
}

/** A fresh page in its own context, recording problems; `origin` is the service under test. */
export async function openProbedPage(browser: Browser, origin: string): Promise<{ context: BrowserContext; page: Page; problems: PageProblems }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
  const page = await context.newPage();
  const problems: PageProblems = { consoleErrors: [], pageErrors: [], failedRequests: [], externalRequests: [] };
  page.on('console', (m) => {
    if (m.type() === 'error') problems.consoleErrors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => problems.pageErrors.push(String(e)));
  page.on('requestfailed', (r) => problems.failedRequests.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  context.on('request', (r) => {
    const u = r.url();
    if (u.startsWith('data:') || u.startsWith('blob:')) return;
    const host = new URL(u).hostname;
    if (!u.startsWith(origin) && host !== '127.0.0.1' && host !== 'localhost') problems.externalRequests.push(u);
  });
  return { context, page, problems };
}

/** A full-page screenshot under test-output/screenshots/; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
