/** GET /metrics (Prometheus text) and request-scoped JSON logs, as an operator sees them. */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { runExportSnapshots } from '../../src/exports/exports.js';

let t: TestApp;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  const logger = pino({ level: 'info' }, new Writable({ write: (c, _e, done) => (lines.push(JSON.parse(String(c))), done()) }));
  t = await testApp({ logger, metricsToken: METRICS_TOKEN });
});

const METRICS_TOKEN = 'operator-metrics-token-0123456789';
afterAll(async () => {
  await t.close();
});

/** The value of one sample of the /metrics text (0 when absent). */
async function sample(name: string, labels: Record<string, string>): Promise<number> {
  const res = await t.get('/metrics', { Authorization: `Bearer ${METRICS_TOKEN}` });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of res.text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.indexOf('}'));
    if (want.every((w) => inside.split(',').includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

describe('GET /metrics', () => {
  it('counts requests per operation and status, credits charged, rate-limit rejections, ingestion and snapshot builds', async () => {
    const before = {
      ok: await sample('quotegate_http_requests_total', { operation: 'getPrices', method: 'GET', status: '200' }),
      notFound: await sample('quotegate_http_requests_total', { operation: 'getPrices', method: 'GET', status: '404' }),
      credits: await sample('quotegate_credits_charged_total', { operation: 'getPrices' }),
      rejected: await sample('quotegate_rate_limit_rejections_total', { operation: 'exportPrices' }),
      inserted: await sample('quotegate_ingested_observations_total', { outcome: 'inserted' }),
      builds: await sample('quotegate_export_build_duration_seconds_count', { side: 'ask', outcome: 'published' }),
    };
    await ingestQuotes(t.db, [obs('Recoil Case'), obs('Recoil Case', { side: 'bid' })]);
    await runExportSnapshots(t.db);
    const a = await createAccount(t.db, { credits: 100n });
    const auth = { Authorization: `Bearer ${a.key}` };
    for (let i = 0; i < 3; i++) expect((await t.get('/prices?market_hash_name=Recoil%20Case', auth)).status).toBe(200);
    expect((await t.get('/prices?market_hash_name=nope', auth)).status).toBe(404);
    for (let i = 0; i < 3; i++) await t.get('/prices/export', auth);

    expect(await sample('quotegate_http_requests_total', { operation: 'getPrices', method: 'GET', status: '200' })).toBe(before.ok + 3);
    expect(await sample('quotegate_http_requests_total', { operation: 'getPrices', method: 'GET', status: '404' })).toBe(before.notFound + 1);
    expect(await sample('quotegate_credits_charged_total', { operation: 'getPrices' })).toBe(before.credits + 3);
    expect(await sample('quotegate_rate_limit_rejections_total', { operation: 'exportPrices' })).toBe(before.rejected + 1);
    expect(await sample('quotegate_ingested_observations_total', { outcome: 'inserted' })).toBe(before.inserted + 2);
    expect(await sample('quotegate_export_build_duration_seconds_count', { side: 'ask', outcome: 'published' })).toBe(before.builds + 1);
    expect(await sample('quotegate_http_request_duration_seconds_count', { operation: 'getPrices', status: '200' })).toBeGreaterThanOrEqual(3);
  });

  it('writes one JSON log line per request, each with its request id, and never a credential', async () => {
    const a = await createAccount(t.db, { credits: 5n });
    const res = await t.get('/prices?market_hash_name=Recoil%20Case', { 'X-API-Key': a.key });
    const mine = lines.filter((l) => l.request_id === res.headers.get('x-request-id'));
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ msg: 'request', operation: 'getPrices', method: 'GET', path: '/prices', status: 200 });
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.length).toBeGreaterThan(5);
    for (const l of requests) expect(l.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.stringify(lines)).not.toContain(a.key);
  });

  it('logs an unexpected error once with its request id, answers internal_error without the cause, and charges nothing (REST and GraphQL)', async () => {
    const a = await createAccount(t.db, { credits: 5n });
    const auth = { 'X-API-Key': a.key };
    // Quotes are read from source_quote: without it, a name not yet cached fails in a way no client input can cause.
    await t.db.query(`ALTER TABLE source_quote RENAME TO source_quote_away`);
    try {
      // Called directly: a 500 is in no operation's documented answers (t.get checks every answer against them).
      const res = await t.app.fetch(new Request('http://test/prices?market_hash_name=Never%20Asked', { headers: auth }));
      const text = await res.text();
      expect(res.status).toBe(500);
      expect(JSON.parse(text).error.code).toBe('internal_error');
      expect(text).not.toContain('source_quote');
      const restId = res.headers.get('x-request-id');
      expect(lines.filter((l) => l.request_id === restId && l.msg === 'unexpected error')).toHaveLength(1);

      const g = await t.gql('query { prices(marketHashName: "Never Asked Either") { appId } }', {}, auth);
      expect(g.body.data).toBeNull();
      expect(g.body.errors[0].extensions.code).toBe('internal_error');
      expect(g.text).not.toContain('source_quote');
      const gqlId = g.headers.get('x-request-id');
      expect(lines.filter((l) => l.request_id === gqlId && l.msg === 'unexpected error')).toHaveLength(1);
    } finally {
      await t.db.query(`ALTER TABLE source_quote_away RENAME TO source_quote`);
    }
    expect((await t.get('/me', auth)).body.data.credit).toMatchObject({ used: 0, remaining: 5 });
  });
});

describe('GET /openapi.json', () => {
  it('serves the document whose x-quotegate extensions equal GET /endpoints, entry by entry', async () => {
    const res = await t.get('/openapi.json');
    expect(res.status).toBe(200);
    const endpoints = (await t.get('/endpoints')).body.data as { method: string; path: string }[];
    const fromDoc = Object.values(res.body.paths as Record<string, Record<string, { 'x-quotegate': { method: string; path: string } }>>)
      .flatMap((methods) => Object.values(methods).map((op) => op['x-quotegate']));
    const key = (e: { method: string; path: string }) => `${e.path} ${e.method}`;
    expect(fromDoc).toHaveLength(endpoints.length);
    expect(fromDoc.sort((a, b) => key(a).localeCompare(key(b)))).toEqual([...endpoints].sort((a, b) => key(a).localeCompare(key(b))));
  });

  it('says where the API is (`/`: relative to the document, when PUBLIC_BASE_URL is unset) and revalidates by ETag: 304 without a body', async () => {
    const res = await t.get('/openapi.json');
    expect(res.body.servers).toEqual([{ url: '/', description: expect.any(String) }]);
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    const etag = res.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    const again = await t.app.fetch(new Request('http://test/openapi.json', { headers: { 'If-None-Match': etag } }));
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    const weak = await t.app.fetch(new Request('http://test/openapi.json', { headers: { 'If-None-Match': `"other", W/${etag}` } }));
    expect(weak.status).toBe(304);
    const stale = await t.app.fetch(new Request('http://test/openapi.json', { headers: { 'If-None-Match': '"other"' } }));
    expect(stale.status).toBe(200);
    expect(JSON.parse(await stale.text())).toEqual(res.body);
    const head = await t.app.fetch(new Request('http://test/openapi.json', { method: 'HEAD' }));
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBe(etag);
    expect(await head.text()).toBe('');
  });

  it('with PUBLIC_BASE_URL its servers entry and contact are that address, under another ETag', async () => {
    const { createApp } = await import('../../src/app.js');
    const app = createApp({ db: t.db, apiServerUrl: 'https://prices.quotegate.test/api' });
    try {
      const res = await app.fetch(new Request('http://test/openapi.json'));
      const body = await res.json();
      expect(body.servers).toEqual([{ url: 'https://prices.quotegate.test/api', description: 'This service' }]);
      expect(body.info.contact).toEqual({ name: 'Quotegate', url: 'https://prices.quotegate.test/api/' });
      expect(res.headers.get('etag')).not.toBe((await t.get('/openapi.json')).headers.get('etag'));
    } finally {
      await app.close();
    }
  });
});
