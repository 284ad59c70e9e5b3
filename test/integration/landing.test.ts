/**
 * The landing page's example URLs (issue 41, point 11): built from PUBLIC_BASE_URL when it is set, else from the
 * address the service listens on, never from the request's Host header (`Host: evil.com` gave `http://evil.com/...`).
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../../src/env.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const started: { server: RunningServer; tdb: TestDatabase | null }[] = [];

/** A server on its own database (PostgreSQL: a fresh one; PGlite: in memory) with `extra` in its environment. */
async function serve(extra: Record<string, string>): Promise<{ port: number }> {
  const tdb = process.env.TEST_DATABASE_URL ? await testDatabase() : null;
  const server = await startServer(
    loadEnv({
      ...(tdb ? { DATABASE_URL: tdb.url! } : { PGLITE_DIR: 'memory://' }),
      PORT: '0',
      HOST: '127.0.0.1',
      QUOTEGATE_AUTOLOAD: 'false',
      EXPORT_INTERVAL_SECONDS: '0',
      STATUS_PROBE_INTERVAL_SECONDS: '0',
      VALUATION_JOB: 'off',
      COLLECTORS: 'off', // hermetic: no requests to the real marketplaces (the worker's stop is tested with it)
      LOG_LEVEL: 'silent',
      ...extra,
    }),
  );
  started.push({ server, tdb });
  return { port: Number(new URL(server.url).port) };
}

/** GET / on 127.0.0.1:`port` with the given Host header; the page's text. */
function landing(port: number, host: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/', headers: { Host: host } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

let plain: { port: number };
let configured: { port: number };
beforeAll(async () => {
  plain = await serve({});
  configured = await serve({ PUBLIC_BASE_URL: 'https://quotes.example.net/api/' });
});
afterAll(async () => {
  for (const { server, tdb } of started) {
    await server.close();
    await tdb?.destroy();
  }
});

describe('the landing page examples', () => {
  it('without PUBLIC_BASE_URL use the address the service listens on, whatever the Host header says', async () => {
    for (const host of ['evil.com', 'evil.com:8080', `127.0.0.1:${plain.port}`]) {
      const { status, text } = await landing(plain.port, host);
      expect(status).toBe(200);
      expect(text).not.toContain('evil.com');
      expect(text).toContain(`'http://127.0.0.1:${plain.port}/prices?app_id=730&amp;market_hash_name=`);
      expect(text).toContain(`curl 'http://127.0.0.1:${plain.port}/websites/BUFF163/fee-schedule'`);
      expect(text).toContain(`http://127.0.0.1:${plain.port}/graphql`);
    }
  });

  it('with PUBLIC_BASE_URL use it (trailing slash dropped), whatever the Host header says', async () => {
    const { status, text } = await landing(configured.port, 'evil.com');
    expect(status).toBe(200);
    expect(text).not.toContain('evil.com');
    expect(text).not.toContain('127.0.0.1');
    expect(text).toContain(`'https://quotes.example.net/api/prices?app_id=730&amp;market_hash_name=`);
    expect(text).toContain(`curl 'https://quotes.example.net/api/websites/BUFF163/fee-schedule'`);
    expect(text).toContain('POST https://quotes.example.net/api/graphql');
  });

  it('PUBLIC_BASE_URL must be an http(s) URL without credentials, query or fragment', () => {
    expect(loadEnv({ PUBLIC_BASE_URL: 'https://quotes.example.net' }).PUBLIC_BASE_URL).toBe('https://quotes.example.net');
    expect(loadEnv({}).PUBLIC_BASE_URL).toBeUndefined();
    for (const bad of ['quotes.example.net', 'ftp://quotes.example.net', 'https://u:p@quotes.example.net', 'https://quotes.example.net/?a=1', 'https://quotes.example.net/#x', 'javascript:alert(1)']) {
      expect(() => loadEnv({ PUBLIC_BASE_URL: bad }), bad).toThrow(/PUBLIC_BASE_URL/);
    }
  });
});
