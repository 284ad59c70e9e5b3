/**
 * CORS on both faces, in process on the real app: preflights answered 204 with what a page on another
 * origin may send (never metered: no charge, no rate-limit point), the answers' CORS headers with the
 * headers a client reads exposed, no cookies ever, and a configured allow-list (`CORS_ORIGINS`) that
 * gives other origins nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { loadEnv } from '../../src/env.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
const PRICES = `/prices?market_hash_name=${encodeURIComponent(ITEM)}`;
const DASHBOARD = 'https://dashboard.example.com';
const EXPOSED = ['X-Request-ID', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'ETag', 'X-Export-Generated-At', 'X-Change-Sequence', 'X-Billable', 'X-Credit-Cost', 'X-Credit-Remaining'];

let t: TestApp;
let listed: TestApp;

beforeAll(async () => {
  t = await testApp();
  listed = await testApp({ corsOrigins: [DASHBOARD, 'http://localhost:5173'] });
  for (const app of [t, listed]) await ingestQuotes(app.db, [obs(ITEM, { price: '201.85' })]);
});
afterAll(async () => {
  await t?.close();
  await listed?.close();
});

/** A preflight as a browser sends it (never with credentials). */
function preflight(app: TestApp, path: string, origin: string, method = 'GET', headers = 'x-api-key', extra: Record<string, string> = {}) {
  return app.app.fetch(
    new Request(`http://test${path}`, {
      method: 'OPTIONS',
      headers: { Origin: origin, 'Access-Control-Request-Method': method, 'Access-Control-Request-Headers': headers, ...extra },
    }),
  );
}

const list = (value: string | null) => (value ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);

async function creditsUsed(app: TestApp, accountId: string) {
  const [row] = await app.db.query<{ used: string; rows: string }>(
    `SELECT credits_used::text AS used, (SELECT count(*) FROM credit_ledger WHERE account_id = $1 AND kind = 'charge')::text AS rows FROM account WHERE id = $1`,
    [accountId],
  );
  return { used: Number(row!.used), rows: Number(row!.rows) };
}

describe('CORS, default: any origin, no cookies', () => {
  it('answers a preflight of /prices 204 with the allowed methods and headers, before any metering', async () => {
    const a = await createAccount(t.db, { credits: 10n });
    // Even a preflight that carried the key (browsers never send one) is neither charged nor counted.
    const res = await preflight(t, PRICES, DASHBOARD, 'GET', 'x-api-key', { 'X-API-Key': a.key });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect(res.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(list(res.headers.get('access-control-allow-methods'))).toEqual(['get', 'head', 'post', 'delete', 'options']);
    expect(list(res.headers.get('access-control-allow-headers'))).toEqual(['authorization', 'x-api-key', 'content-type', 'if-none-match']);
    expect(Number(res.headers.get('access-control-max-age'))).toBeGreaterThan(0);
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(list(res.headers.get('vary'))).toContain('origin');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get('ratelimit')).toBeNull();
    expect(await creditsUsed(t, a.accountId)).toEqual({ used: 0, rows: 0 });
    // The first real request still finds the whole window: the preflight consumed no point.
    const got = await t.get(PRICES, { 'X-API-Key': a.key, Origin: DASHBOARD });
    expect(got.status).toBe(200);
    expect(got.headers.get('ratelimit')).toMatch(/^"getPrices";r=119;t=\d+$/);
    expect(await creditsUsed(t, a.accountId)).toEqual({ used: 1, rows: 1 });
  });

  it('answers preflights of /graphql and of a POST body the same way', async () => {
    for (const [path, method] of [['/graphql', 'POST'], ['/prices/batch', 'POST'], ['/websites', 'GET']] as const) {
      const res = await preflight(t, path, 'http://localhost:8080', method, 'content-type, authorization');
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('http://localhost:8080');
    }
  });

  it('adds the CORS headers to REST, GraphQL and page answers, exposing the headers clients read', async () => {
    const a = await createAccount(t.db, { credits: 10n });
    const rest = await t.get(PRICES, { Authorization: `Bearer ${a.key}`, Origin: DASHBOARD });
    expect(rest.status).toBe(200);
    expect(rest.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(list(rest.headers.get('access-control-expose-headers'))).toEqual(EXPOSED.map((h) => h.toLowerCase()));
    expect(rest.headers.get('access-control-allow-credentials')).toBeNull();

    const gql = await t.gql(`{ health { status } }`, {}, { Origin: DASHBOARD });
    expect(gql.status).toBe(200);
    // One value: Yoga's own CORS is off, so the header is not doubled.
    expect(gql.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(list(gql.headers.get('access-control-expose-headers'))).toContain('x-request-id');

    const page = await t.get('/', { Origin: DASHBOARD, 'Accept-Encoding': 'gzip' });
    expect(page.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    // Vary keeps what the page varies on and adds Origin.
    expect(list(page.headers.get('vary'))).toEqual(expect.arrayContaining(['accept-encoding', 'origin']));

    // Errors carry them too (a browser page must be able to read a 401).
    const denied = await t.get(PRICES, { Origin: DASHBOARD });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
  });

  it('sends no CORS headers to a request without Origin', async () => {
    const res = await t.get('/websites');
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('CORS with an allow-list (CORS_ORIGINS)', () => {
  it('allows the listed origins and gives any other origin no CORS headers, so its browser refuses the answer', async () => {
    for (const origin of [DASHBOARD, 'http://localhost:5173']) {
      const ok = await preflight(listed, PRICES, origin);
      expect(ok.headers.get('access-control-allow-origin')).toBe(origin);
      expect((await listed.get('/websites', { Origin: origin })).headers.get('access-control-allow-origin')).toBe(origin);
    }
    const evil = 'https://evil.example.net';
    const pre = await preflight(listed, PRICES, evil);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    expect(pre.headers.get('access-control-allow-methods')).toBeNull();
    const get = await listed.get('/websites', { Origin: evil });
    expect(get.status).toBe(200); // the server answers; the browser hides it from the page
    expect(get.headers.get('access-control-allow-origin')).toBeNull();
    expect(list(get.headers.get('vary'))).toContain('origin');
    const gql = await listed.gql(`{ health { status } }`, {}, { Origin: evil });
    expect(gql.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('reads CORS_ORIGINS as a comma-separated list of origins or *, refusing anything else', () => {
    expect(loadEnv({}).CORS_ORIGINS).toEqual(['*']);
    expect(loadEnv({ CORS_ORIGINS: ` ${DASHBOARD}, http://localhost:5173 ` }).CORS_ORIGINS).toEqual([DASHBOARD, 'http://localhost:5173']);
    expect(() => loadEnv({ CORS_ORIGINS: `${DASHBOARD}/app` })).toThrow(/CORS_ORIGINS/);
    expect(() => loadEnv({ CORS_ORIGINS: 'dashboard.example.com' })).toThrow(/CORS_ORIGINS/);
  });
});
