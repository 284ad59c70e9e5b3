/**
 * The item pages' limit per client address (issue 41, point 9): `/items/{name}` showed every market's price, the
 * valuation band and the history with no key, no charge and no limit (30 requests in a row: all 200). Now a client
 * address gets PAGE_RATE_LIMIT item pages (default 30 in any 60 s), then a 429 page with Retry-After; the API,
 * `/valuation`, the status page and the landing page are not counted; X-Forwarded-For names the client only when
 * TRUST_PROXY says whose to believe; with Redis (TEST_REDIS_URL) replicas share one count.
 * Requests go over real HTTP (node:http on 127.0.0.1), so each has the peer address a client has.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { loadEnv } from '../../src/env.js';
import { addressKey, clientAddress, parsePageRateLimit, parseTrustProxy } from '../../src/pages/page-limit.js';
import { createRateLimiter, type RateLimiter } from '../../src/limits/rate-limiter.js';
import { importCatalogue } from '../../src/catalogue/import.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { dataDir, ingestQuotes, obs } from '../helpers/app.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
const ITEM_PATH = `/items/${encodeURIComponent(ITEM)}`;
const redisUrl = process.env.TEST_REDIS_URL;

let db: TestDatabase;
let key: string;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  db = await testDatabase();
  await importCatalogue(db.prisma, dataDir);
  await ingestQuotes(db, [obs(ITEM, { price: '201.85' }), obs('Recoil Case', { price: '2.59' })]);
  key = (await createAccount(db, { credits: 1000n })).key;
});
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await db?.destroy();
});

/** `app` on 127.0.0.1 over node:http, as `quotegate serve` serves it; closed after the file. */
async function serve(app: App): Promise<string> {
  const server = http.createServer(app.listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await app.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function served(deps: Parameters<typeof createApp>[0] extends infer D ? Omit<D & object, 'db'> : never = {}): Promise<string> {
  return serve(createApp({ db, ...deps }));
}

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('the item pages per client address (default 30 a minute)', () => {
  it('30 item pages answer 200, the 31st a 429 page with Retry-After; the API, /valuation and the status page still answer', async () => {
    const base = await served();
    for (let i = 1; i <= 30; i++) {
      const res = await get(`${base}${i % 3 === 0 ? '/items?q=redline' : ITEM_PATH}`);
      expect(res.status, `page ${i}`).toBe(200);
      expect(res.headers.get('ratelimit-policy')).toBe('"pages";q=30;w=60');
      expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"pages";r=${30 - i};t=\\d+$`));
    }
    const refused = await get(`${base}${ITEM_PATH}`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/^text\/html/);
    const wait = Number(refused.headers.get('retry-after'));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(refused.text).toContain('Too many pages');
    expect(refused.text).toContain(`wait ${wait} second`);
    expect(refused.text).not.toContain('201.85');
    // Every item page is counted, the search and a HEAD too.
    expect((await get(`${base}/items?q=recoil`)).status).toBe(429);
    expect((await fetch(`${base}${ITEM_PATH}`, { method: 'HEAD' })).status).toBe(429);
    // Not counted: the API (with its own limits), the landing page, /valuation and the status page.
    expect((await get(`${base}/prices?market_hash_name=${encodeURIComponent(ITEM)}`, { Authorization: `Bearer ${key}` })).status).toBe(200);
    expect((await get(`${base}/health`)).status).toBe(200);
    for (const path of ['/', '/valuation', '/status/page', '/docs']) {
      const res = await get(`${base}${path}`);
      expect([200, 503], path).toContain(res.status);
      expect(res.headers.get('ratelimit-policy'), path).toBeNull();
    }
  });

  it('PAGE_RATE_LIMIT sets the count and window: the pages answer again once the window has passed', async () => {
    let now = Date.now();
    const rateLimiter = createRateLimiter({ now: () => now });
    const base = await served({ rateLimiter, pages: { rateLimit: parsePageRateLimit('3/10') } });
    for (let i = 0; i < 3; i++) expect((await get(`${base}${ITEM_PATH}`)).status).toBe(200);
    const refused = await get(`${base}${ITEM_PATH}`);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBe(10);
    now += 5_000;
    expect((await get(`${base}${ITEM_PATH}`)).status).toBe(429);
    now += 5_001;
    expect((await get(`${base}${ITEM_PATH}`)).status).toBe(200);
    // Off: no limit.
    const open = await served({ rateLimiter: createRateLimiter({}), pages: { rateLimit: parsePageRateLimit('off') } });
    for (let i = 0; i < 5; i++) expect((await get(`${open}/items?q=ak`)).status).toBe(200);
  });

  it('X-Forwarded-For is ignored without TRUST_PROXY, and names the client behind a trusted proxy', async () => {
    const limit = parsePageRateLimit('2/60');
    // No trusted proxy: a client cannot pick a fresh address per request.
    const plain = await served({ rateLimiter: createRateLimiter({}), pages: { rateLimit: limit } });
    const spoofed = await Promise.all([1, 2, 3].map((i) => get(`${plain}/items?q=ak`, { 'X-Forwarded-For': `198.51.100.${i}` })));
    expect(spoofed.map((r) => r.status).sort()).toEqual([200, 200, 429]);
    // Behind one trusted proxy (this test is the proxy, on loopback): each forwarded client has its own count.
    const proxied = await served({ rateLimiter: createRateLimiter({}), pages: { rateLimit: limit, trustProxy: parseTrustProxy('loopback') } });
    const a = { 'X-Forwarded-For': '203.0.113.7' };
    const b = { 'X-Forwarded-For': '203.0.113.8' };
    expect((await get(`${proxied}/items?q=ak`, a)).status).toBe(200);
    expect((await get(`${proxied}/items?q=ak`, a)).status).toBe(200);
    expect((await get(`${proxied}/items?q=ak`, a)).status).toBe(429);
    expect((await get(`${proxied}/items?q=ak`, b)).status).toBe(200);
    // A client's own X-Forwarded-For entry in front of the proxy's is not believed: the proxy appended the real one.
    expect((await get(`${proxied}/items?q=ak`, { 'X-Forwarded-For': '203.0.113.99, 203.0.113.7' })).status).toBe(429);
    // With a hop count: the entry the nearest proxy appended.
    const hops = await served({ rateLimiter: createRateLimiter({}), pages: { rateLimit: limit, trustProxy: parseTrustProxy('1') } });
    expect((await get(`${hops}/items?q=ak`, { 'X-Forwarded-For': '192.0.2.1, 203.0.113.50' })).status).toBe(200);
    expect((await get(`${hops}/items?q=ak`, { 'X-Forwarded-For': '192.0.2.2, 203.0.113.50' })).status).toBe(200);
    expect((await get(`${hops}/items?q=ak`, { 'X-Forwarded-For': '192.0.2.3, 203.0.113.50' })).status).toBe(429);
  });

  it.skipIf(!redisUrl)('with Redis, two replicas share one count per address', async () => {
    const keyPrefix = `qg:test:pages:${crypto.randomUUID()}`;
    const limiters: RateLimiter[] = [createRateLimiter({ redisUrl, keyPrefix }), createRateLimiter({ redisUrl, keyPrefix })];
    // Connected before the first page (a limiter not yet connected decides in this replica's memory).
    await vi.waitFor(() => Promise.all(limiters.map((l) => l.ping!())), { timeout: 10_000, interval: 50 });
    const [one, two] = await Promise.all(limiters.map((rateLimiter) => served({ rateLimiter, pages: { rateLimit: parsePageRateLimit('4/60') } })));
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await get(`${i % 2 === 0 ? one : two}/items?q=ak`)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    for (const l of limiters) closers.push(() => l.close());
  });
});

describe('configuration and client addresses', () => {
  it('PAGE_RATE_LIMIT defaults to 30/60 and TRUST_PROXY to nobody; bad values fail the start', () => {
    const env = loadEnv({});
    expect(env.PAGE_RATE_LIMIT).toEqual({ maxRequests: 30, windowSeconds: 60 });
    expect(env.TRUST_PROXY).toBeNull();
    expect(loadEnv({ PAGE_RATE_LIMIT: '120/3600' }).PAGE_RATE_LIMIT).toEqual({ maxRequests: 120, windowSeconds: 3600 });
    expect(loadEnv({ PAGE_RATE_LIMIT: 'off' }).PAGE_RATE_LIMIT).toBeNull();
    for (const bad of ['30', '0/60', '30/0', 'x/60', '30/60/1', '-1/60']) expect(() => loadEnv({ PAGE_RATE_LIMIT: bad }), bad).toThrow(/PAGE_RATE_LIMIT/);
    expect(() => loadEnv({ TRUST_PROXY: 'not-an-address' })).toThrow(/TRUST_PROXY/);
    expect(loadEnv({ TRUST_PROXY: '10.0.0.0/8, loopback' }).TRUST_PROXY).toBeTypeOf('function');
  });

  it('IPv6 clients count by /64, IPv4-mapped peers as IPv4; no peer (in process) is not counted', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(addressKey('::ffff:192.0.2.9')).toBe('192.0.2.9');
    expect(addressKey('192.0.2.9')).toBe('192.0.2.9');
    expect(clientAddress(undefined, '192.0.2.1', parseTrustProxy('1'))).toBeNull();
    expect(clientAddress('10.0.0.1', 'garbage, not-an-ip', parseTrustProxy('1'))).toBe('10.0.0.1');
  });
});
