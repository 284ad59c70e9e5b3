/**
 * What a real listening server does at the connection level (issue: contract and metering holes),
 * on PGlite (or PostgreSQL with TEST_DATABASE_URL), with the clients people use:
 * - a 413 never poisons a pooled keep-alive connection (undici Pool and Node's fetch): the next
 *   request is answered at once, not after the request timeout;
 * - a malformed Host header gets 400 in the error envelope with a request id and a metric, never a
 *   500 with a stack trace;
 * - /metrics is not public on the API port: 404 without METRICS_TOKEN, 401 with a wrong token, and
 *   served on METRICS_PORT;
 * - an export download the client drops half-way is refunded.
 *
 * Time limits here are hang checks (the broken behaviour waited the 30 s request timeout), never
 * performance assertions.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../../src/env.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { MAX_BODY_BYTES } from '../../src/app.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const METRICS_TOKEN = 'operator-token-for-the-test-0123';
let server: RunningServer;
let tdb: TestDatabase | null = null;
let origin: string;

beforeAll(async () => {
  // On PostgreSQL the server gets a fresh database of its own; on PGlite an in-memory one.
  if (process.env.TEST_DATABASE_URL) tdb = await testDatabase();
  server = await startServer(
    loadEnv({
      ...(tdb ? { DATABASE_URL: tdb.url! } : { PGLITE_DIR: 'memory://' }),
      PORT: '0',
      HOST: '127.0.0.1',
      QUOTEGATE_AUTOLOAD: 'false',
      EXPORT_INTERVAL_SECONDS: '0',
      STATUS_PROBE_INTERVAL_SECONDS: '0',
      VALUATION_JOB: 'off',
      COLLECTORS: 'off',
      LOG_LEVEL: 'silent',
      METRICS_PORT: '0',
      METRICS_TOKEN,
    }),
  );
  origin = server.url.replace('localhost', '127.0.0.1');
});
afterAll(async () => {
  await server?.close();
  await tdb?.destroy();
});

/** Sends raw bytes and resolves with the whole answer once the server closes or `ms` passes. */
function raw(bytes: string, ms = 5000): Promise<string> {
  const { port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(bytes));
    let out = '';
    socket.on('data', (d) => (out += d.toString('latin1')));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
    setTimeout(() => (socket.destroy(), resolve(out)), ms);
  });
}

describe('a refused body does not poison a pooled connection', () => {
  const big = JSON.stringify({ market_hash_names: Array.from({ length: 150_000 }, (_, i) => `item name number ${i}`) }); // about 3.5 MB, over the 2 MiB limit

  it('undici Pool (one connection): 413, then at once a normal request on the same pool', async () => {
    expect(Buffer.byteLength(big)).toBeGreaterThan(MAX_BODY_BYTES);
    const pool = new Pool(origin, { connections: 1, pipelining: 1, headersTimeout: 5000, bodyTimeout: 5000 });
    try {
      for (const path of ['/prices/batch', '/graphql']) {
        const refused = await pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
        expect(refused.statusCode).toBe(413);
        const body = (await refused.body.json()) as { error: { code: string } };
        expect(body.error.code).toBe('payload_too_large');
        const next = await pool.request({ path: '/health', method: 'GET' });
        expect(next.statusCode).toBe(200);
        expect(await next.body.json()).toMatchObject({ status: expect.any(String) });
      }
    } finally {
      await pool.close();
    }
  });

  it("Node's fetch (global keep-alive pool): two 3 MB batches in a row both get 413 at once", async () => {
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${origin}/prices/batch`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: big,
        signal: AbortSignal.timeout(10_000),
      });
      expect(res.status).toBe(413);
      expect((await res.json()).error.code).toBe('payload_too_large');
    }
    const after = await fetch(`${origin}/health`, { signal: AbortSignal.timeout(10_000) });
    expect(after.status).toBe(200);
  });

  it('a body declared far larger than the drain budget: 413 with Connection: close', async () => {
    const answer = await raw(`POST /prices/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${64 * 1024 * 1024}\r\n\r\n{"market_hash_names": [`);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(answer).toContain('"payload_too_large"');
  });
});

describe('malformed requests get the envelope, never a 500', () => {
  it('a Host header no URL can be formed from: 400 bad_request with a request id, counted in the metrics', async () => {
    const metric = async () => {
      const text = await (await fetch(server.metricsUrl!)).text();
      const line = text.split('\n').find((l) => l.startsWith('quotegate_http_requests_total{') && l.includes('status="400"') && l.includes('operation="unmatched"'));
      return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
    };
    const before = await metric();
    const answer = await raw('GET /health HTTP/1.1\r\nHost: a b\r\n\r\n');
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).toMatch(/content-type: application\/json/i);
    const requestId = /x-request-id: (\S+)/i.exec(head!)?.[1];
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const parsed = JSON.parse(body!);
    expect(parsed).toEqual({ error: { code: 'bad_request', message: expect.any(String) }, meta: { request_id: requestId } });
    expect(answer).not.toMatch(/node_modules|at .*\.js/);
    expect(await metric()).toBe(before + 1);
  });
});

describe('/metrics is not public on the API port', () => {
  it('401 without the operator token or with a wrong one, 200 with it; served on METRICS_PORT without one', async () => {
    const none = await fetch(`${origin}/metrics`);
    expect(none.status).toBe(401);
    expect((await none.json()).error.code).toBe('unauthorized');
    expect((await fetch(`${origin}/metrics`, { headers: { Authorization: 'Bearer wrong-token-wrong-token' } })).status).toBe(401);
    const ok = await fetch(`${origin}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('quotegate_http_requests_total');
    expect(server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const side = await fetch(server.metricsUrl!);
    expect(side.status).toBe(200);
    expect(await side.text()).toContain('process_resident_memory_bytes');
  });
});

describe('a file is paid for when it is delivered', () => {
  it('a client that drops the connection half-way through the export gets its 10 credits back', async () => {
    const db = server.db;
    const chunks = 24; // 24 MiB: far more than the socket buffers hold, so the client leaves mid-file
    const [{ id }] = (await db.query<{ id: string }>(
      `INSERT INTO export_build (app_id, side, etag, items_sha256, generated_at, build_ms, byte_size, item_count, quote_count, complete)
       VALUES ('730', 'ask', $1, $2, now(), 1, $3, 1, 1, true) RETURNING id::text AS id`,
      [`"synthetic-${crypto.randomUUID()}"`, 'f'.repeat(64), chunks * 1024 * 1024],
    )) as [{ id: string }];
    // 1 MiB chunks made by the database itself (sending 24 MiB of parameters to PGlite is slow).
    await db.query(`INSERT INTO export_chunk (build_id, seq, bytes) SELECT $1, g, decode(repeat(md5(g::text), 65536), 'hex') FROM generate_series(0, $2 - 1) g`, [id, chunks]);
    await db.query(
      `INSERT INTO export_current (app_id, side, build_id) VALUES ('730', 'ask', $1) ON CONFLICT (app_id, side, format) DO UPDATE SET build_id = EXCLUDED.build_id`,
      [id],
    );
    await db.notify('qg_exports', '730'); // published as the builder publishes
    const a = await createAccount(db, { credits: 20n });
    const received = await new Promise<{ status: number; remaining: string | undefined; bytes: number }>((resolve, reject) => {
      const req = http.get(`${origin}/prices/export`, { headers: { Authorization: `Bearer ${a.key}` } }, (res) => {
        let bytes = 0;
        res.on('data', (d: Buffer) => {
          bytes += d.length;
          if (bytes > 256 * 1024) {
            res.destroy();
            req.destroy();
            resolve({ status: res.statusCode!, remaining: res.headers['x-credit-remaining'] as string | undefined, bytes });
          }
        });
        res.on('error', () => undefined);
      });
      req.on('error', (e) => (e.message.includes('aborted') || e.message.includes('socket hang up') ? undefined : reject(e)));
    });
    expect(received.status).toBe(200);
    expect(received.remaining).toBe('10');
    const counters = async () =>
      (await db.query<{ used: string; refunds: string }>(
        `SELECT credits_used::text AS used, (SELECT count(*) FROM credit_ledger WHERE account_id = $1 AND kind = 'refund')::text AS refunds FROM account WHERE id = $1`,
        [a.accountId],
      ))[0]!;
    await expect.poll(counters, { timeout: 10_000 }).toEqual({ used: '0', refunds: '1' });
  });
});
