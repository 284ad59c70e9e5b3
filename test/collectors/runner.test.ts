/**
 * The collector runner (src/collectors/runner.ts) against a local upstream with a fake source: validation,
 * conversion, each failure of a response as a whole (the market's quotes stay as they were, the run is marked
 * failed), complete listings and their scans, credentials (not configured; never logged), the breaker and the
 * state log, and the /status datasource counts. Real PGlite (or PostgreSQL with TEST_DATABASE_URL).
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CollectorRuntime, INGEST_CHUNK, runSource, type RunResult } from '../../src/collectors/runner.js';
import { loadCollectorSourceEnv } from '../../src/env.js';
import { Money, toMoney } from '../../src/lib/money.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { startUpstream, type LocalUpstream } from './upstream.js';
import { fakeBody, fakeSource, type FakeItem } from './fake-source.js';
import type { CollectorSource } from '../../src/collectors/source.js';

let t: TestApp;
let up: LocalUpstream;
let logLines: string[] = [];
const SECRET = 'sk_live_4f9a2c7e1b';

const logger = pino(
  { level: 'debug' },
  new Writable({
    write(chunk, _enc, cb) {
      logLines.push(chunk.toString());
      cb();
    },
  }),
);

function runtime(vars: Record<string, string> = {}, opts: Partial<ConstructorParameters<typeof CollectorRuntime>[0]> = {}): CollectorRuntime {
  return new CollectorRuntime({
    db: t.db,
    logger,
    sourceEnv: (s) => loadCollectorSourceEnv(s, [], { COLLECTOR_FAKE_URL: up.url, ...vars }),
    retryBaseMs: 20,
    ...opts,
  });
}

const item = (name: string, over: Partial<FakeItem> = {}): FakeItem => ({ name, market: 'BITSKINS', side: 'ask', currency: 'USD', price: '10.50', quantity: 3, ...over });
const listing = (n: number, prefix = 'Item'): FakeItem[] => Array.from({ length: n }, (_, i) => item(`${prefix} ${i}`, { price: `${10 + i}.25` }));
/** A listing of both of the fake source's markets: `n` BitSkins rows and one Skinport row. */
const full = (n: number): FakeItem[] => [...listing(n), item('Skin A', { market: 'SKINPORT', currency: 'EUR' })];

/** Every FAKE quote as a stable text: what a failed run must leave exactly as it was. */
async function quotes(): Promise<string[]> {
  const rows = await t.db.query<{ line: string }>(
    `SELECT concat_ws('|', i.market_hash_name, q.market_code, q.side, q.currency_code, trim_scale(q.price)::text, q.quantity, (q.delisted_at IS NOT NULL)::text, q.observed_at, q.fresh_at) AS line
       FROM source_quote q JOIN item i ON i.id = q.item_id WHERE q.provider_code = 'FAKE' ORDER BY 1`,
  );
  return rows.map((r) => r.line);
}

async function runs(): Promise<{ outcome: string; error_kind: string | null; error_message: string | null; complete: boolean }[]> {
  return t.db.query(`SELECT outcome, error_kind, error_message, complete FROM collector_run WHERE source_id = 'fake' ORDER BY id`);
}

function serve(items: FakeItem[]): void {
  up.route({ path: '/v1/list', body: fakeBody(items) });
  up.play('/v1/list', null);
}

beforeAll(async () => {
  t = await testApp();
  up = await startUpstream([{ path: '/v1/list', body: fakeBody([]) }]);
});
afterAll(async () => {
  await up.close();
  await t.close();
});
beforeEach(async () => {
  logLines = [];
  await t.db.query(`DELETE FROM collector_run`);
  await t.db.query(`DELETE FROM source_quote WHERE provider_code = 'FAKE'`);
  await t.db.query(`DELETE FROM market_scan WHERE provider_code = 'FAKE'`);
});

describe('validation', () => {
  it('counts and skips bad rows, converts to the market currency, writes the rest', async () => {
    const rt = runtime();
    serve([
      item('Good BitSkins', { price: '12.3456789' }),
      item('Good Skinport', { market: 'SKINPORT', currency: 'EUR', price: '7.10' }),
      item('Skinport in USD', { market: 'SKINPORT', currency: 'USD', price: '100' }),
      item('Zero', { price: '0' }),
      item('Zero too', { price: '0.000' }),
      item('Negative', { price: '-5' }),
      item('Letters', { price: 'abc' }),
      item('Exponent', { price: '1e3' }),
      item('Unknown currency', { currency: 'XYZ' }),
      item('', {}),
      item('   ', {}),
      item('x'.repeat(10_000), {}),
      item('Deprecated market', { market: 'OPSKINS' }),
      item('Not this source', { market: 'STEAM' }),
      item('Bad quantity', { quantity: -1 }),
      item('Good BitSkins', { price: '99' }),
      // A row's own observation time (an aggregator's): kept when before the run, the run's start when after it.
      item('Seen earlier', { seen: '2026-07-01T10:00:00.000Z' }),
      item('Seen later', { seen: '2999-01-01T00:00:00.000Z' }),
      item('Seen when?', { seen: 'not a date' }),
    ]);
    const r = await runSource(rt, fakeSource({ completeListing: false }));
    expect(r.outcome).toBe('ok');
    expect(r.rowsAccepted).toBe(5);
    expect(r.rowsSkipped).toBe(14);
    expect(r.skips).toEqual({ price: 5, currency: 1, name: 3, market: 2, quantity: 1, duplicate: 1, observed_at: 1 });
    const seen = await t.db.query<{ name: string; observed_at: Date; fresh_at: Date }>(
      `SELECT i.market_hash_name AS name, q.observed_at, q.fresh_at FROM source_quote q JOIN item i ON i.id = q.item_id
        WHERE q.provider_code = 'FAKE' AND i.market_hash_name LIKE 'Seen %' ORDER BY 1`,
    );
    expect(seen.map((x) => [x.name, new Date(x.observed_at).toISOString(), new Date(x.fresh_at).toISOString()])).toEqual([
      ['Seen earlier', '2026-07-01T10:00:00.000Z', '2026-07-01T10:00:00.000Z'],
      ['Seen later', r.startedAt.toISOString(), r.startedAt.toISOString()],
    ]);
    const [usd] = await t.db.query<{ usd_rate: string }>(`SELECT usd_rate::text FROM currency WHERE code = 'USD'`);
    const [eur] = await t.db.query<{ usd_rate: string }>(`SELECT usd_rate::text FROM currency WHERE code = 'EUR'`);
    const converted = toMoney('100').times(toMoney(usd!.usd_rate)).div(toMoney(eur!.usd_rate)).toDecimalPlaces(2, Money.ROUND_HALF_EVEN);
    const res = await t.get(`/prices?market_hash_name=${encodeURIComponent('Skinport in USD')}`, t.auth());
    expect(res.status).toBe(200);
    const q = res.body.data.markets.find((m: any) => m.market_code === 'SKINPORT');
    expect(q.market_currency_code).toBe('EUR');
    expect(q.market_price_amount).toBe(converted.toFixed());
    expect(await quotes()).toEqual([
      expect.stringMatching(/^Good BitSkins\|BITSKINS\|ask\|USD\|12\.3456789\|3\|false/),
      expect.stringMatching(/^Good Skinport\|SKINPORT\|ask\|EUR\|7\.1\|3\|false/),
      expect.stringMatching(/^Seen earlier\|BITSKINS\|ask\|USD\|10\.5\|3\|false/),
      expect.stringMatching(/^Seen later\|BITSKINS\|ask\|USD\|10\.5\|3\|false/),
      expect.stringMatching(/^Skinport in USD\|SKINPORT\|ask\|EUR\|/),
    ]);
    const [run] = await t.db.query<{ rows_accepted: number; rows_skipped: number; skips: Record<string, number> }>(`SELECT rows_accepted, rows_skipped, skips FROM collector_run`);
    expect(run).toMatchObject({ rows_accepted: 5, rows_skipped: 14, skips: r.skips });
  });

  it('feeds /status datasource: realtime and result count the run per market', async () => {
    const rt = runtime();
    serve([...listing(4), item('Skin A', { market: 'SKINPORT', currency: 'EUR' })]);
    const before = (await t.get('/status')).body.data.datasource;
    const sum = (m: Record<string, number> | undefined) => Object.values(m ?? {}).reduce((a, b) => a + b, 0);
    expect((await runSource(rt, fakeSource())).outcome).toBe('ok');
    const after = (await t.get('/status')).body.data.datasource;
    expect(sum(after.realtime.BITSKINS) - sum(before.realtime.BITSKINS)).toBe(4);
    expect(sum(after.result.BITSKINS) - sum(before.result.BITSKINS)).toBe(4);
    expect(sum(after.realtime.SKINPORT) - sum(before.realtime.SKINPORT)).toBe(1);
  });
});

describe('a run of several chunks', () => {
  it('writes every row once, new items and changes included, with its chunks in flight together', async () => {
    const rt = runtime();
    // INGEST_CHUNK * 2 + 1 rows of new names: three chunks, two of them in flight at once.
    const n = INGEST_CHUNK * 2 + 1;
    serve(full(n).map((r, i) => (r.market === 'BITSKINS' ? { ...r, name: `Chunked ${i}` } : r)));
    const seqBefore = await t.db.query<{ n: string }>(`SELECT coalesce(max(seq), 0)::text AS n FROM quote_change`);
    const before = (await t.get('/status')).body.data.datasource;
    const r = await runSource(rt, fakeSource());
    expect(r).toMatchObject({ outcome: 'ok', rowsAccepted: n + 1, complete: true });
    const [written] = await t.db.query<{ quotes: number; items: number }>(
      `SELECT count(*)::int AS quotes, count(DISTINCT q.item_id)::int AS items FROM source_quote q JOIN item i ON i.id = q.item_id
        WHERE q.provider_code = 'FAKE' AND q.market_code = 'BITSKINS' AND i.market_hash_name LIKE 'Chunked %'`,
    );
    expect(written).toEqual({ quotes: n, items: n });
    // One change per new quote, each once, in the change sequence.
    const [changes] = await t.db.query<{ rows: number; keys: number }>(
      `SELECT count(*)::int AS rows, count(DISTINCT (c.item_id, c.market_code, c.side))::int AS keys FROM quote_change c
        WHERE c.seq > $1::bigint AND c.market_code = 'BITSKINS'`,
      [seqBefore[0]!.n],
    );
    expect(changes).toEqual({ rows: n, keys: n });
    const after = (await t.get('/status')).body.data.datasource;
    const sum = (m: Record<string, number> | undefined) => Object.values(m ?? {}).reduce((a, b) => a + b, 0);
    expect(sum(after.realtime.BITSKINS) - sum(before.realtime.BITSKINS)).toBe(n);
  });
});

describe('complete listings', () => {
  it('a complete run completes the scan: a quote it did not see is delisted', async () => {
    const rt = runtime();
    serve([...listing(4), item('Skin A', { market: 'SKINPORT', currency: 'EUR' })]);
    expect((await runSource(rt, fakeSource())).outcome).toBe('ok');
    serve([...listing(3), item('Skin A', { market: 'SKINPORT', currency: 'EUR' })]);
    const r = await runSource(rt, fakeSource());
    expect(r).toMatchObject({ outcome: 'ok', complete: true, delisted: 1 });
    const gone = await t.db.query<{ quantity: number; delisted: boolean; price: string }>(
      `SELECT q.quantity, q.delisted_at IS NOT NULL AS delisted, trim_scale(q.price)::text AS price FROM source_quote q JOIN item i ON i.id = q.item_id WHERE i.market_hash_name = 'Item 3' AND q.provider_code = 'FAKE'`,
    );
    expect(gone).toEqual([{ quantity: 0, delisted: true, price: '13.25' }]);
    const scans = await t.db.query<{ market_code: string }>(`SELECT market_code FROM market_scan WHERE provider_code = 'FAKE' ORDER BY 1`);
    expect(scans.map((s) => s.market_code)).toEqual(['BITSKINS', 'SKINPORT']);
  });

  it('a partial source never completes a scan', async () => {
    const rt = runtime();
    serve([...listing(4), item('Skin A', { market: 'SKINPORT', currency: 'EUR' })]);
    await runSource(rt, fakeSource({ completeListing: false }));
    serve([item('Item 0')]);
    const r = await runSource(rt, fakeSource({ completeListing: false }));
    expect(r).toMatchObject({ outcome: 'ok', complete: false, delisted: 0 });
    expect((await quotes()).filter((q) => q.includes('|true|'))).toEqual([]);
    expect(await t.db.query(`SELECT 1 FROM market_scan WHERE provider_code = 'FAKE'`)).toEqual([]);
  });
});

describe('a response that fails as a whole leaves the quotes as they were', () => {
  const good = () => [...listing(6), item('Skin A', { market: 'SKINPORT', currency: 'EUR' }), item('Skin B', { market: 'SKINPORT', currency: 'EUR' })];
  let rt: CollectorRuntime;
  let before: string[];

  async function failing(setup: () => void, source: CollectorSource = fakeSource()): Promise<RunResult> {
    rt = runtime();
    serve(good());
    expect((await runSource(rt, source)).outcome).toBe('ok');
    before = await quotes();
    expect(before.length).toBe(8);
    // The next listing would delist and reprice everything, if it were applied.
    up.route({ path: '/v1/list', body: fakeBody([item('Item 0', { price: '1.00' })]) });
    setup();
    const r = await runSource(rt, source);
    expect(await quotes()).toEqual(before);
    const recorded = await runs();
    expect(recorded.at(-1)).toMatchObject({ outcome: r.outcome, error_kind: r.errorKind, complete: false });
    expect(r.outcome).not.toBe('ok');
    return r;
  }

  it('5xx: retried, then failed', async () => {
    const seen = up.requests.length;
    const r = await failing(() => up.play('/v1/list', '503'));
    expect(r).toMatchObject({ outcome: 'failed', errorKind: 'http' });
    expect(r.errorMessage).toMatch(/503/);
    // the good run's request, then the first attempt and its 2 retries
    expect(up.requests.length - seen).toBe(4);
  });

  it('a hanging upstream: timeout, then failed (unreachable)', async () => {
    const r = await failing(() => up.play('/v1/list', 'hang'), fakeSource({ limits: { requestsPerMinute: 600, concurrency: 1, timeoutMs: 300, retries: 1 } }));
    expect(r).toMatchObject({ outcome: 'unreachable', errorKind: 'unreachable' });
    expect(r.errorMessage).toMatch(/timeout/);
  });

  it('a truncated body', async () => {
    up.route({ path: '/v1/list', body: fakeBody(listing(50)) });
    const r = await failing(() => {
      up.route({ path: '/v1/list', body: fakeBody(listing(50)) });
      up.play('/v1/list', 'truncated');
    });
    expect(r).toMatchObject({ outcome: 'failed', errorKind: 'format' });
  });

  it('HTML instead of JSON', async () => {
    const r = await failing(() => up.play('/v1/list', 'html'));
    expect(r).toMatchObject({ outcome: 'failed', errorKind: 'format' });
    expect(r.errorMessage).toMatch(/html/i);
  });

  it('a 200 with an error object', async () => {
    const r = await failing(() => up.play('/v1/list', 'error-object'));
    expect(r).toMatchObject({ outcome: 'failed', errorKind: 'format' });
  });

  it('a listing that shrank by more than half', async () => {
    const r = await failing(() => up.route({ path: '/v1/list', body: fakeBody([...listing(2), item('Skin A', { market: 'SKINPORT', currency: 'EUR' })]) }));
    expect(r).toMatchObject({ outcome: 'failed', errorKind: 'shrunk' });
    expect(r.errorMessage).toMatch(/BITSKINS shrank from 6 to 2/);
  });

  it('a listing left empty by bad rows', async () => {
    const r = await failing(() => up.route({ path: '/v1/list', body: fakeBody(good().map((i) => ({ ...i, price: '0' }))) }));
    expect(r).toMatchObject({ outcome: 'failed', errorKind: 'shrunk' });
  });

  it('half of the listing is still a listing', async () => {
    rt = runtime();
    serve(good());
    await runSource(rt, fakeSource());
    serve([...listing(3), item('Skin A', { market: 'SKINPORT', currency: 'EUR' })]);
    expect(await runSource(rt, fakeSource())).toMatchObject({ outcome: 'ok', delisted: 4 });
  });
});

describe('retries', () => {
  it('429 with Retry-After: waits that long, then succeeds', async () => {
    const rt = runtime();
    serve(full(3));
    up.play('/v1/list', '429', { times: 1, retryAfterSeconds: 2 });
    const started = Date.now();
    const r = await runSource(rt, fakeSource());
    expect(r.outcome).toBe('ok');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
    expect(await quotes()).toHaveLength(4);
  });
});

describe('credentials', () => {
  it('a source without its credential is not configured, and its upstream is never called', async () => {
    const rt = runtime();
    serve(listing(3));
    const seen = up.requests.length;
    const r = await runSource(rt, fakeSource({ credentialEnv: 'FAKE_API_KEY' }));
    expect(r.outcome).toBe('not_configured');
    expect(up.requests.length).toBe(seen);
    expect((await runs()).at(-1)).toMatchObject({ outcome: 'not_configured', error_kind: null });
    expect(logLines.join('')).toMatch(/FAKE_API_KEY is not set/);
  });

  it('the credential reaches the upstream and never the log or the run records', async () => {
    const rt = runtime({ FAKE_API_KEY: SECRET });
    const source = fakeSource({ credentialEnv: 'FAKE_API_KEY', limits: { requestsPerMinute: 600, concurrency: 1, timeoutMs: 300, retries: 0 } });
    serve(full(3));
    const seen = up.requests.length;
    expect((await runSource(rt, source)).outcome).toBe('ok');
    expect(up.requests[seen]!.path).toContain(SECRET);
    expect(up.requests[seen]!.headers.authorization).toBe(`Bearer ${SECRET}`);
    for (const mode of ['503', 'hang', 'html'] as const) {
      up.play('/v1/list', mode);
      expect((await runSource(rt, source)).outcome).not.toBe('ok');
    }
    // A request whose path holds the key, failing: its message names the path.
    const messages = (await t.db.query<{ error_message: string | null }>(`SELECT error_message FROM collector_run`)).map((r) => r.error_message ?? '');
    expect(messages.join('\n')).toMatch(/\[credential\]/);
    const all = logLines.join('') + messages.join('\n');
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain(encodeURIComponent(SECRET));
  });
});

describe('offline', () => {
  it('unreachable is logged once per change of state; the breaker opens, then lets a trial through and recovers', async () => {
    const rt = runtime({}, { breakerThreshold: 2, intervalScale: 0.25 });
    // interval 60 s x 0.25 = 15 s; the breaker's first pause is 2 intervals: shorten the source's own interval instead.
    const source = fakeSource({ intervalSeconds: 1, limits: { requestsPerMinute: 600, concurrency: 1, timeoutMs: 300, retries: 0 } });
    serve(full(2));
    expect((await runSource(rt, source)).outcome).toBe('ok');
    up.play('/v1/list', '503');
    const outcomes: string[] = [];
    for (let i = 0; i < 4; i++) outcomes.push((await runSource(rt, source)).outcome);
    const seen = up.requests.length;
    expect(outcomes).toEqual(['failed', 'failed', 'unreachable', 'unreachable']);
    const last = (await runs()).at(-1)!;
    expect(last.error_message).toMatch(/circuit open/);
    expect(up.requests.length).toBe(seen); // short-circuited runs do not call the upstream
    const warned = logLines.filter((l) => /"level":40/.test(l));
    expect(warned.filter((l) => /unreachable/.test(l))).toHaveLength(1);
    // After the pause (two intervals, with jitter) one trial goes through; the upstream is back.
    up.play('/v1/list', null);
    let outcome = '';
    for (let i = 0; i < 20 && outcome !== 'ok'; i++) {
      await new Promise((r) => setTimeout(r, 300));
      outcome = (await runSource(rt, source)).outcome;
    }
    expect(outcome).toBe('ok');
    expect(logLines.filter((l) => /recovered/.test(l))).toHaveLength(1);
    await rt.close();
  });

  it('a refused connection is unreachable, logged once for several runs', async () => {
    const rt = runtime({ COLLECTOR_FAKE_URL: 'http://127.0.0.1:9' }, { breakerThreshold: 100 });
    const source = fakeSource({ limits: { requestsPerMinute: 600, concurrency: 1, timeoutMs: 500, retries: 1 } });
    for (let i = 0; i < 3; i++) expect((await runSource(rt, source)).outcome).toBe('unreachable');
    expect(logLines.filter((l) => /"level":40/.test(l) && /unreachable/.test(l))).toHaveLength(1);
    await rt.close();
  });
});

/** A minimal HTTP proxy (CONNECT tunnels and absolute-URL requests) that counts what it carried. */
async function startProxy(): Promise<{ url: string; carried: () => number; close: () => Promise<void> }> {
  let carried = 0;
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    carried += 1;
    const target = new URL(req.url!);
    const out = http.request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    req.pipe(out);
  });
  server.on('connect', (req, socket: net.Socket, head) => {
    carried += 1;
    const [host, port] = req.url!.split(':');
    const upstream = net.connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    sockets.add(socket).add(upstream);
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    carried: () => carried,
    close: async () => {
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A minimal SOCKS5 proxy (no authentication, CONNECT only) that counts its connections. */
async function startSocks5(): Promise<{ url: string; carried: () => number; close: () => Promise<void> }> {
  let carried = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('error', () => undefined);
    client.once('data', (greeting) => {
      if (greeting[0] !== 5) return client.destroy();
      client.write(Buffer.from([5, 0])); // no authentication
      client.once('data', (req) => {
        // VER CMD RSV ATYP ADDR PORT; ATYP 1 = IPv4, 3 = domain name
        let host: string;
        let at: number;
        if (req[3] === 1) {
          host = [...req.subarray(4, 8)].join('.');
          at = 8;
        } else if (req[3] === 3) {
          host = req.subarray(5, 5 + req[4]!).toString();
          at = 5 + req[4]!;
        } else return client.destroy();
        const port = req.readUInt16BE(at);
        carried += 1;
        const upstream = net.connect(port, host, () => {
          client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
          upstream.pipe(client);
          client.pipe(upstream);
        });
        sockets.add(upstream);
        upstream.on('error', () => client.destroy());
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `socks5://127.0.0.1:${(server.address() as AddressInfo).port}`,
    carried: () => carried,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('proxies', () => {
  it('a SOCKS5 proxy carries the requests', async () => {
    const socks = await startSocks5();
    const rt = runtime({ COLLECTOR_FAKE_PROXIES: socks.url });
    serve(full(2));
    const seen = up.requests.length;
    expect((await runSource(rt, fakeSource())).outcome).toBe('ok');
    expect(up.requests.length - seen).toBe(1);
    expect(socks.carried()).toBeGreaterThanOrEqual(1);
    await rt.close();
    await socks.close();
  });

  it('sends a source\'s requests through its proxies, one after the other', async () => {
    const [a, b] = await Promise.all([startProxy(), startProxy()]);
    const rt = runtime({ COLLECTOR_FAKE_PROXIES: `${a.url},${b.url}` });
    serve(full(2));
    const seen = up.requests.length;
    for (let i = 0; i < 4; i++) expect((await runSource(rt, fakeSource())).outcome).toBe('ok');
    expect(up.requests.length - seen).toBe(4);
    // Each proxy carried some of them (a kept-alive tunnel may carry several requests).
    expect(a.carried()).toBeGreaterThanOrEqual(1);
    expect(b.carried()).toBeGreaterThanOrEqual(1);
    await rt.close();
    // Never around them: with a proxy that is down, the source is unreachable.
    const down = runtime({ COLLECTOR_FAKE_PROXIES: 'http://127.0.0.1:9' });
    const before = up.requests.length;
    expect((await runSource(down, fakeSource({ limits: { requestsPerMinute: 600, concurrency: 1, timeoutMs: 500, retries: 0 } }))).outcome).toBe('unreachable');
    expect(up.requests.length).toBe(before);
    await down.close();
    await Promise.all([a.close(), b.close()]);
  });
});

describe('watch list', () => {
  it('is computed for per-item sources only: a bulk source never reads it, a per-item source sees it', async () => {
    let loads = 0;
    const rt = runtime({}, {
      watchlist: async () => {
        loads += 1;
        return ['Watched A', 'Watched B'];
      },
    });
    serve(full(2));
    const bulk = await runSource(rt, fakeSource({ completeListing: false }));
    expect(bulk.outcome).toBe('ok');
    expect(loads).toBe(0);
    let seen: readonly string[] = [];
    const perItem = fakeSource({
      completeListing: false,
      perItem: true,
      async *collect(ctx) {
        seen = ctx.watchlist;
        yield { marketHashName: 'Watched A', marketCode: 'BITSKINS', side: 'ask', currencyCode: 'USD', price: '1.25', quantity: 1 };
      },
    });
    expect((await runSource(rt, perItem)).outcome).toBe('ok');
    expect(loads).toBe(1);
    expect(seen).toEqual(['Watched A', 'Watched B']);
  });
});
