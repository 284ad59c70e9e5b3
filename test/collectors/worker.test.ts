/**
 * The collector worker (src/collectors/worker.ts, pg-boss): in this process on the test database (PGlite by
 * default: the queue runs through the embedded database), and, with TEST_DATABASE_URL, two `quotegate collect`
 * processes on one PostgreSQL database against local upstreams for a few compressed intervals: each source runs
 * once per interval, every quote arrives once, and a killed worker's sources are taken over. At start, the exchange
 * rates run before the sources' first runs, which convert with them.
 */
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCollectors } from '../../src/collectors/start.js';
import { startCollectorWorker, type CollectorTask } from '../../src/collectors/worker.js';
import { openDatabase } from '../../src/db/client.js';
import { importCatalogue } from '../../src/catalogue/import.js';
import { dataDir } from '../helpers/app.js';
import { serverUrl, testDatabase, type TestDatabase } from '../helpers/db.js';
import { startCollectorProcess, type CollectorProcess } from '../helpers/collector.js';
import { startUpstream, type LocalUpstream } from './upstream.js';
import { fakeBody, fakeSource, type FakeItem } from './fake-source.js';
import { loadCollectorSourceEnv, loadEnv } from '../../src/env.js';
import { CSGOTRADER_RATES, ECB_RATES } from '../../src/collectors/rates.js';
import { Money, formatDecimal, toMoney } from '../../src/lib/money.js';

const SLOT_MS = 2000; // the fake sources' 100 s x COLLECTOR_INTERVAL_SCALE 0.02
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const items = (market: string, currency: string, n: number): FakeItem[] =>
  Array.from({ length: n }, (_, i) => ({ name: `${market} item ${i}`, market, side: 'ask', currency, price: `${i + 1}.50`, quantity: 1 }));

interface Run {
  source_id: string;
  worker: string;
  started: number;
  outcome: string;
  error: string | null;
}

async function runsOf(db: TestDatabase): Promise<Run[]> {
  const rows = await db.query<{ source_id: string; worker: string; started: string; outcome: string; error: string | null }>(
    `SELECT source_id, worker, (extract(epoch FROM started_at) * 1000)::bigint::text AS started, outcome, error_message AS error FROM collector_run ORDER BY started_at`,
  );
  return rows.map((r) => ({ ...r, started: Number(r.started) }));
}

/** Slots (start times / SLOT_MS) in which each source ran, with how often. */
function slotsOf(runs: Run[], source: string): Map<number, number> {
  const m = new Map<number, number>();
  for (const r of runs.filter((x) => x.source_id === source)) {
    const slot = Math.floor(r.started / SLOT_MS);
    m.set(slot, (m.get(slot) ?? 0) + 1);
  }
  return m;
}

async function activity(db: TestDatabase, market: string): Promise<number> {
  const [row] = await db.query<{ n: string | null }>(`SELECT sum(count)::text AS n FROM ingest_activity WHERE market_code = $1`, [market]);
  return Number(row?.n ?? 0);
}

describe('the worker in this process', () => {
  let db: TestDatabase;
  let up: LocalUpstream;
  beforeAll(async () => {
    db = await testDatabase();
    await importCatalogue(db.prisma, dataDir);
    up = await startUpstream([{ path: '/v1/list', body: fakeBody(items('BITSKINS', 'USD', 5)) }]);
  });
  afterAll(async () => {
    await up.close();
    await db.destroy();
  });

  it('runs a source once per interval through the queue and records each run', async () => {
    const env = loadEnv({ COLLECTOR_INTERVAL_SCALE: '0.02', COLLECTOR_CONCURRENCY: '2' });
    const source = fakeSource({ id: 'fake-local', markets: ['BITSKINS'], intervalSeconds: 100 });
    const logger = pino({ level: 'silent' });
    const collectors = await startCollectors(db, logger, env, {
      extraSources: [source],
      only: ['fake-local'],
      sourceEnv: () => ({ baseUrl: up.url, proxies: [], intervalSeconds: null, credential: null }),
    });
    const started = Date.now();
    // Stopped in the middle of a slot, four or more slots on: a run starts at a slot's beginning and is not cut off.
    const stopAt = (Math.floor(started / SLOT_MS) + 5) * SLOT_MS + SLOT_MS / 2;
    await sleep(stopAt - Date.now());
    await collectors.stop();
    const runs = (await runsOf(db)).filter((r) => r.source_id === 'fake-local');
    const slots = slotsOf(runs, 'fake-local');
    expect([...slots.values()].every((n) => n === 1)).toBe(true);
    const elapsedSlots = Math.floor(Date.now() / SLOT_MS) - Math.floor(started / SLOT_MS) + 1;
    expect(runs.length).toBeGreaterThanOrEqual(elapsedSlots - 2);
    expect(runs.length).toBeLessThanOrEqual(elapsedSlots);
    expect(runs.filter((r) => r.outcome !== 'ok').map((r) => `${r.outcome}: ${r.error}`)).toEqual([]);
    expect(await activity(db, 'BITSKINS')).toBe(5 * runs.length);
    expect(up.requests.length).toBe(runs.length);
  }, 60_000);
});

describe('the worker at start: the exchange rates first', () => {
  it("the sources' first runs start after the rates' run and convert with its rates", async () => {
    const db = await testDatabase();
    await importCatalogue(db.prisma, dataDir);
    const fixtures = path.join(import.meta.dirname, 'fixtures');
    const ecb = await startUpstream([{ path: ECB_RATES.path, file: path.join(fixtures, 'ecb/eurofxref-daily-2025-05-09.xml'), contentType: 'text/xml' }]);
    const csgotrader = await startUpstream([
      { path: CSGOTRADER_RATES.path, file: path.join(fixtures, 'csgotrader/exchange_rates_2026-07-16.json'), headers: { 'Last-Modified': 'Thu, 16 Jul 2026 06:00:00 GMT' } },
    ]);
    // EUR prices on BITSKINS, a USD market: converted with EUR's official rate.
    const up = await startUpstream([{ path: '/v1/list', body: fakeBody([{ name: 'Worker EUR item', market: 'BITSKINS', side: 'ask', currency: 'EUR', price: '1000.00', quantity: 1 }]) }]);
    try {
      // The stored rates (the bundled EUR: not the recording's 1.1252) are older than the recorded ECB day.
      await db.query(`UPDATE currency SET rate_date = '2025-01-01'`);
      const rateOf = async (code: string) => (await db.query<{ r: string }>(`SELECT trim_scale(usd_rate)::text AS r FROM currency WHERE code = $1`, [code]))[0]!.r;
      const eurBefore = await rateOf('EUR');
      expect(eurBefore).not.toBe('1.1252');
      const vars = { COLLECTOR_ECB_URL: ecb.url, COLLECTOR_CSGOTRADER_URL: csgotrader.url, COLLECTOR_FAKE_EUR_URL: up.url };
      const collectors = await startCollectors(db, pino({ level: 'silent' }), loadEnv({ COLLECTOR_INTERVAL_SCALE: '0.02', COLLECTOR_CONCURRENCY: '4' }), {
        extraSources: [fakeSource({ id: 'fake-eur', markets: ['BITSKINS'], intervalSeconds: 100, completeListing: false })],
        only: ['fake-eur', 'rates'],
        sourceEnv: (s) => loadCollectorSourceEnv(s, [], vars),
      });
      try {
        for (let i = 0; i < 300 && (await runsOf(db)).filter((r) => r.source_id === 'fake-eur').length === 0; i++) await sleep(100);
      } finally {
        await collectors.stop();
      }
      const rows = await db.query<{ source_id: string; outcome: string; started: string; finished: string }>(
        `SELECT source_id, outcome, (extract(epoch FROM started_at) * 1000)::bigint::text AS started, (extract(epoch FROM finished_at) * 1000)::bigint::text AS finished
           FROM collector_run ORDER BY started_at, id`,
      );
      const rates = rows.filter((r) => r.source_id === 'rates');
      const source = rows.filter((r) => r.source_id === 'fake-eur');
      expect(rates.map((r) => r.outcome)).toEqual(['ok']);
      expect(source.length).toBeGreaterThan(0);
      expect(source[0]!.outcome).toBe('ok');
      // The source's first run began once the rates' run had finished...
      expect(Number(source[0]!.started)).toBeGreaterThanOrEqual(Number(rates[0]!.finished));
      // ... and its quote is converted with the rates it wrote.
      const eur = await rateOf('EUR');
      expect(eur).toBe('1.1252');
      const [q] = await db.query<{ price: string; currency: string }>(
        `SELECT trim_scale(q.price)::text AS price, q.currency_code AS currency FROM source_quote q JOIN item i ON i.id = q.item_id WHERE i.market_hash_name = 'Worker EUR item' AND q.provider_code = 'FAKE'`,
      );
      const at = (rate: string) => formatDecimal(toMoney('1000.00').times(toMoney(rate)).toDecimalPlaces(2, Money.ROUND_HALF_EVEN));
      expect(q).toEqual({ price: at(eur), currency: 'USD' });
      expect(q!.price).not.toBe(at(eurBefore));
    } finally {
      await Promise.all([ecb, csgotrader, up].map((u) => u.close()));
      await db.destroy();
    }
  }, 60_000);
});

describe("stopping the worker while a run waits for its source's rate limit", () => {
  it('stops at once and leaves no statement running: the database closes right after, no unhandled rejection', async () => {
    const db = await testDatabase();
    await importCatalogue(db.prisma, dataDir);
    const up = await startUpstream([{ path: '/v1/list', body: fakeBody(items('BITSKINS', 'USD', 5)) }]);
    up.play('/v1/list', '503'); // retryable: the retry waits for the limiter's next slot, a minute away
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => void rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      const env = loadEnv({ COLLECTOR_INTERVAL_SCALE: '0.02', COLLECTOR_CONCURRENCY: '2' });
      const collectors = await startCollectors(db, pino({ level: 'silent' }), env, {
        extraSources: [fakeSource({ id: 'fake-local', markets: ['BITSKINS'], intervalSeconds: 100, limits: { requestsPerMinute: 1, concurrency: 1, timeoutMs: 2000, retries: 2 } })],
        only: ['fake-local'],
        sourceEnv: () => ({ baseUrl: up.url, proxies: [], intervalSeconds: null, credential: null }),
      });
      for (let i = 0; i < 100 && up.requests.length === 0; i++) await sleep(100);
      expect(up.requests.length).toBeGreaterThan(0); // the first attempt was answered 503; the retry waits
      await sleep(300);
      await collectors.stop();
      // The run ended on the cancellation and recorded it before stop returned (it did not sit in the limiter's
      // queue for its slot a minute away, past the stop's cap, and write after the database closed).
      const runs = (await runsOf(db)).filter((r) => r.source_id === 'fake-local');
      expect(runs.map((r) => r.outcome)).toEqual(['unreachable']);
      const [last] = await db.query<{ error: string }>(`SELECT error_message AS error FROM collector_run WHERE source_id = 'fake-local'`);
      expect(last?.error).toMatch(/cancelled/);
      await db.destroy(); // what the server's close does next
      await sleep(1500); // pg-boss's own timers would fire here
      expect(rejections.map(String)).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
      await up.close();
    }
  }, 60_000);
});

describe.skipIf(!serverUrl)('workers started at once on a fresh PostgreSQL database', () => {
  it('all start: the ones that lose the race to install the queue schema try again', async () => {
    const tdb = await testDatabase();
    const dbs = await Promise.all([0, 1, 2].map(() => openDatabase({ url: tdb.url! })));
    try {
      const task = { id: 'noop', intervalSeconds: 3600, run: async () => ({}) } as unknown as CollectorTask;
      const started = await Promise.allSettled(dbs.map((db) => startCollectorWorker({ db, logger: pino({ level: 'silent' }), tasks: [task], concurrency: 1 })));
      expect(started.map((r) => (r.status === 'rejected' ? String(r.reason) : 'started'))).toEqual(['started', 'started', 'started']);
      for (const r of started) if (r.status === 'fulfilled') await r.value.stop(2000);
    } finally {
      for (const db of dbs) await db.close();
      await tdb.destroy();
    }
  }, 60_000);
});

describe.skipIf(!serverUrl)('two collector processes on one PostgreSQL database', () => {
  let db: TestDatabase;
  let upA: LocalUpstream;
  let upB: LocalUpstream;
  let workers: CollectorProcess[] = [];
  const A = items('SKINPORT', 'EUR', 30);
  const B = items('BITSKINS', 'USD', 40);

  beforeAll(async () => {
    db = await testDatabase();
    await importCatalogue(db.prisma, dataDir);
    upA = await startUpstream([{ path: '/v1/list', body: fakeBody(A) }]);
    upB = await startUpstream([{ path: '/v1/list', body: fakeBody(B) }]);
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await upA.close();
    await upB.close();
    await db?.destroy();
  });

  it('each source runs once per interval, every quote arrives once, and a dead worker is taken over', async () => {
    const env = {
      DATABASE_URL: db.url!,
      COLLECTOR_FAKE_A_URL: upA.url,
      COLLECTOR_FAKE_B_URL: upB.url,
      COLLECTOR_INTERVAL_SCALE: '0.02',
      LOG_LEVEL: 'info',
    };
    const args = ['--sources-module', 'test/collectors/fake-source.ts', '--only', 'fake-a,fake-b'];
    workers = await Promise.all([0, 1].map(() => startCollectorProcess(env, args)));
    await sleep(5 * SLOT_MS);
    const killedAt = Date.now();
    await workers[0]!.kill('SIGKILL');
    await sleep(5 * SLOT_MS);
    await workers[1]!.stop();
    const runs = await runsOf(db);
    for (const source of ['fake-a', 'fake-b']) {
      const slots = slotsOf(runs, source);
      // Never twice in one interval, whatever the number of workers.
      expect([...slots.entries()].filter(([, n]) => n > 1)).toEqual([]);
      // Every interval from the first to the last has its run, except at most the one the killed worker held.
      const first = Math.min(...slots.keys());
      const last = Math.max(...slots.keys());
      const missing = [];
      for (let s = first; s <= last; s++) if (!slots.has(s)) missing.push(s);
      expect(missing.length).toBeLessThanOrEqual(1);
      expect(last - first).toBeGreaterThanOrEqual(7);
      // After the kill, the survivor runs every later interval.
      const after = runs.filter((r) => r.source_id === source && r.started > killedAt + SLOT_MS);
      expect(after.length).toBeGreaterThanOrEqual(3);
      expect(new Set(after.map((r) => r.worker)).size).toBe(1);
      expect(after[0]!.worker).toMatch(new RegExp(`:${workers[1]!.pid}$`));
    }
    // Both processes took work before the kill.
    const before = runs.filter((r) => r.started < killedAt);
    expect(new Set(before.map((r) => r.worker)).size).toBe(2);
    // Every quote arrived once per run: requests, ingested observations and runs agree.
    const okA = runs.filter((r) => r.source_id === 'fake-a' && r.outcome === 'ok').length;
    const okB = runs.filter((r) => r.source_id === 'fake-b' && r.outcome === 'ok').length;
    expect(await activity(db, 'SKINPORT')).toBe(A.length * okA);
    expect(await activity(db, 'BITSKINS')).toBe(B.length * okB);
    const allA = runs.filter((r) => r.source_id === 'fake-a').length;
    expect(upA.requests.length).toBeGreaterThanOrEqual(okA);
    expect(upA.requests.length).toBeLessThanOrEqual(allA + 1); // + the run the killed worker may have begun
    const [counts] = await db.query<{ a: number; b: number }>(
      `SELECT count(*) FILTER (WHERE provider_code = 'FAKEA')::int AS a, count(*) FILTER (WHERE provider_code = 'FAKEB')::int AS b FROM source_quote`,
    );
    expect(counts).toEqual({ a: A.length, b: B.length });
  }, 120_000);
});
