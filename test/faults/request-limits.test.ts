/**
 * Request limits against a real listening server (src/server.ts on in-memory PGlite), driven by raw
 * sockets as a misbehaving client would: bodies over MAX_BODY_BYTES get 413 `payload_too_large` in the
 * error envelope without the server reading them to the end (declared with Content-Length, or chunked
 * and growing), on POST /prices/batch and POST /graphql; clients that send headers or a body too
 * slowly are cut off at the server's timeouts (shortened here through HTTP_HEADERS_TIMEOUT_SECONDS and
 * HTTP_REQUEST_TIMEOUT_SECONDS), while the server keeps answering everyone else.
 *
 * Time bounds in here are hang checks (generous multiples of the configured timeouts), never
 * performance assertions.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../../src/env.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { MAX_BODY_BYTES } from '../../src/app.js';
import { createAccount } from '../../src/accounts/accounts.js';

const HEADERS_TIMEOUT_S = 1;
const REQUEST_TIMEOUT_S = 2;

let server: RunningServer;
let port: number;

beforeAll(async () => {
  server = await startServer(
    loadEnv({
      PGLITE_DIR: 'memory://',
      PORT: '0',
      HOST: '127.0.0.1',
      QUOTEGATE_AUTOLOAD: 'false',
      EXPORT_INTERVAL_SECONDS: '0',
      STATUS_PROBE_INTERVAL_SECONDS: '0',
      VALUATION_JOB: 'off',
      COLLECTORS: 'off',
      LOG_LEVEL: 'silent',
      HTTP_HEADERS_TIMEOUT_SECONDS: String(HEADERS_TIMEOUT_S),
      HTTP_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S),
    }),
  );
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server?.close();
});

/** What a raw client saw: the parsed answer (if any), bytes it managed to send, and whether the server closed. */
interface RawOutcome {
  status: number | null;
  headers: Record<string, string>;
  body: string;
  sent: number;
  closed: boolean;
  /** Milliseconds from connecting to the server closing the connection (null if it did not). */
  closedAfterMs: number | null;
  raw: string;
}

/** Parses one HTTP/1.1 response (Content-Length or chunked) from `raw`; null until it is complete. */
function parseResponse(raw: Buffer): { status: number; headers: Record<string, string>; body: string } | null {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const status = Number(statusLine!.split(' ')[1]);
  let rest = raw.subarray(end + 4);
  if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    return rest.length >= n ? { status, headers, body: rest.subarray(0, n).toString('utf8') } : null;
  }
  if (headers['transfer-encoding'] === 'chunked') {
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = rest.indexOf('\r\n');
      if (lineEnd < 0) return null;
      const size = parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
      if (size === 0) return { status, headers, body: Buffer.concat(parts).toString('utf8') };
      if (rest.length < lineEnd + 2 + size + 2) return null;
      parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      rest = rest.subarray(lineEnd + 2 + size + 2);
    }
  }
  return { status, headers, body: '' };
}

/**
 * Opens a connection, writes `head`, then calls `next()` for more bytes to write (respecting
 * back-pressure, `pauseMs` between writes) until it returns null, an answer has arrived (unless
 * `keepSending`: a hostile client), or the server closed. Resolves once the server closed the
 * connection or `waitMs` passed.
 */
function rawClient(head: string, next: () => Buffer | null, opts: { pauseMs?: number; waitMs: number; keepSending?: boolean }): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let sent = 0;
    let closed = false;
    let closedAfterMs: number | null = null;
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const parsed = parseResponse(received);
      resolve({ status: parsed?.status ?? null, headers: parsed?.headers ?? {}, body: parsed?.body ?? '', sent, closed, closedAfterMs, raw: received.toString('latin1').slice(0, 2000) });
    };
    const timer = setTimeout(finish, opts.waitMs);
    socket.on('data', (d) => (received = Buffer.concat([received, d])));
    socket.on('error', () => undefined); // a reset after the answer is the server closing: recorded below
    socket.on('close', () => {
      closed = true;
      closedAfterMs = Date.now() - started;
      finish();
    });
    const pump = () => {
      while (!closed && (opts.keepSending || parseResponse(received) === null)) {
        const chunk = next();
        if (chunk === null) return;
        sent += chunk.length;
        const more = socket.write(chunk);
        if (opts.pauseMs) return void setTimeout(pump, opts.pauseMs);
        if (!more) return void socket.once('drain', pump);
      }
    };
    socket.once('connect', () => {
      socket.write(head);
      pump();
    });
  });
}

/** A body source: `total` bytes in chunks of `size` (chunked framing when `chunked`). */
function bodySource(total: number, size: number, chunked: boolean, fill = 'a'): () => Buffer | null {
  let left = total;
  const chunk = Buffer.alloc(size, fill);
  return () => {
    if (left <= 0) return null;
    const n = Math.min(size, left);
    left -= n;
    const data = n === size ? chunk : chunk.subarray(0, n);
    return chunked ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), data, Buffer.from('\r\n')]) : data;
  };
}

function expectTooLarge(o: RawOutcome): void {
  expect(o.status, o.raw).toBe(413);
  const body = JSON.parse(o.body);
  expect(Object.keys(body).sort()).toEqual(['error', 'meta']);
  expect(body.error.code).toBe('payload_too_large');
  expect(body.meta.request_id).toBe(o.headers['x-request-id']);
}

const DECLARED = 64 * 1024 * 1024;

async function health(): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(5000) });
  await res.text();
  return res.status;
}

describe('oversized bodies: 413 in the error envelope, before the body is read to its end', () => {
  for (const path of ['/prices/batch', '/graphql']) {
    it(`POST ${path} declaring ${DECLARED} bytes (Content-Length): 413 after the first bytes, the rest never read`, async () => {
      const head = `POST ${path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: ${DECLARED}\r\n\r\n`;
      // A hostile client: it goes on sending after the answer.
      const o = await rawClient(head, bodySource(DECLARED, 64 * 1024, false), { waitMs: (REQUEST_TIMEOUT_S + 10) * 1000, keepSending: true });
      expectTooLarge(o);
      // The client could not push the declared body: the server stopped reading (socket buffers only).
      expect(o.sent).toBeLessThan(DECLARED / 2);
      // A client that leaves the connection open is cut off at the request timeout.
      expect(o.closed).toBe(true);
    });

    it(`POST ${path} with a chunked body that grows without end: 413 once it passes ${MAX_BODY_BYTES} bytes`, async () => {
      const head = `POST ${path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
      const o = await rawClient(head, bodySource(DECLARED, 64 * 1024, true), { waitMs: (REQUEST_TIMEOUT_S + 10) * 1000, keepSending: true });
      expectTooLarge(o);
      expect(o.sent).toBeGreaterThan(MAX_BODY_BYTES);
      expect(o.sent).toBeLessThan(DECLARED / 2);
      expect(o.closed).toBe(true);
    });
  }

  it(`a body of exactly ${MAX_BODY_BYTES} bytes is read and judged (422); one byte more is 413`, async () => {
    const at = (n: number) => JSON.stringify({ market_hash_names: ['x'.repeat(n - 26)] });
    expect(Buffer.byteLength(at(MAX_BODY_BYTES))).toBe(MAX_BODY_BYTES);
    // A valid key: the credential is checked before the body is judged (422 needs a caller).
    const { key } = await createAccount(server.db, { credits: 10n });
    const send = async (body: string) => {
      const res = await fetch(`http://127.0.0.1:${port}/prices/batch`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` },
        body,
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const exact = await send(at(MAX_BODY_BYTES));
    expect(exact.status).toBe(422);
    expect(exact.body.error.details.errors[0].field).toBe('market_hash_names.0');
    const over = await send(at(MAX_BODY_BYTES + 1));
    expect(over.status).toBe(413);
    expect(over.body.error.code).toBe('payload_too_large');
    expect(await health()).toBe(200);
  });
});

describe('slow clients are cut off at the timeouts while others are served', () => {
  it(`headers sent a byte at a time (slowloris): closed after about ${HEADERS_TIMEOUT_S} s with 408, /health answers meanwhile`, async () => {
    const header = Buffer.from('X-Slow: ' + 'a'.repeat(10_000) + '\r\n');
    const slow = Array.from({ length: 10 }, () => {
      let i = 0;
      return rawClient('GET /health HTTP/1.1\r\nHost: t\r\n', () => header.subarray(i % header.length, (i++ % header.length) + 1), { pauseMs: 100, waitMs: (HEADERS_TIMEOUT_S + 10) * 1000 });
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(await health()).toBe(200);
    const outcomes = await Promise.all(slow);
    for (const o of outcomes) {
      expect(o.closed, o.raw).toBe(true);
      expect(o.status, o.raw).toBe(408);
      expect(o.closedAfterMs!).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_S * 1000 - 100);
    }
    expect(await health()).toBe(200);
  });

  it(`a body sent a byte at a time: closed after about ${REQUEST_TIMEOUT_S} s with 408, /health answers meanwhile`, async () => {
    const head = 'POST /prices/batch HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n';
    const slow = Array.from({ length: 5 }, () => rawClient(head, bodySource(1000, 1, false, ' '), { pauseMs: 100, waitMs: (REQUEST_TIMEOUT_S + 10) * 1000 }));
    await new Promise((r) => setTimeout(r, 300));
    expect(await health()).toBe(200);
    const outcomes = await Promise.all(slow);
    for (const o of outcomes) {
      expect(o.closed, o.raw).toBe(true);
      expect(o.status, o.raw).toBe(408);
      expect(o.sent).toBeLessThan(1000);
      expect(o.closedAfterMs!).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_S * 1000 - 100);
    }
    expect(await health()).toBe(200);
  });
});

describe('timeout settings', () => {
  it('default to 15 s for headers and 30 s for the whole request; headers longer than the request are refused at start', () => {
    const defaults = loadEnv({});
    expect([defaults.HTTP_HEADERS_TIMEOUT_SECONDS, defaults.HTTP_REQUEST_TIMEOUT_SECONDS]).toEqual([15, 30]);
    expect(() => loadEnv({ HTTP_HEADERS_TIMEOUT_SECONDS: '40' })).toThrow(/HTTP_HEADERS_TIMEOUT_SECONDS: must not exceed HTTP_REQUEST_TIMEOUT_SECONDS/);
    expect(() => loadEnv({ HTTP_REQUEST_TIMEOUT_SECONDS: '0' })).toThrow(/HTTP_REQUEST_TIMEOUT_SECONDS/);
  });
});
