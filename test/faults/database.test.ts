/**
 * Database faults under steady load (issue: reliability suite, part 2), against a private PostgreSQL
 * server and a real `quotegate serve` process:
 * - the server stops for 10 seconds and starts again;
 * - every connection of the service is terminated (pg_terminate_backend), three times.
 * Promises checked (docs/reliability.md): no 500 and no dropped connection; while the database is away
 * only 503 `dependency_unavailable` envelopes with Retry-After and a request id; /health keeps
 * answering; at least 99% of requests succeed from 5 seconds after the database is back; no credit is
 * charged for a failed request (credits used = ledger = billed 200s).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { importCatalogue } from '../../src/catalogue/import.js';
import { createAccount } from '../../src/accounts/accounts.js';
import { ingestQuotes, obs, dataDir } from '../helpers/app.js';
import { startServerProcess, type ServerProcess } from '../helpers/server.js';
import { createDatabase, sleep, startPrivatePostgres, steadyLoad, tally, type PrivatePostgres, type Sample } from './servers.js';
import { writeFigures } from './figures.js';
import { creditCounters } from '../helpers/credits.js';

const ITEM = 'AK-47 | Redline (Field-Tested)';
let server: PrivatePostgres;
let url: string;
let svc: ServerProcess;
let key: string;
let accountId: string;

/** The account's credits used (settled + recorded on leases) and the charge rows behind them (creditCounters checks ledger = used). */
async function counters() {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await creditCounters(async (sql, params) => (await c.query(sql, params)).rows, accountId);
    return { used: r.used, ledger: r.charged };
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  server = await startPrivatePostgres();
  url = await createDatabase(server, 'qg_faults');
  const db = await openDatabase({ url });
  await importCatalogue(db.prisma, dataDir);
  await ingestQuotes(db, [obs(ITEM, { price: '201.85' }), obs(ITEM, { side: 'bid', price: '195' })]);
  const account = await createAccount(db, { credits: 10_000_000n });
  key = account.key;
  accountId = account.accountId;
  await db.close();
  svc = await startServerProcess({
    DATABASE_URL: url,
    QUOTEGATE_RATE_LIMITS: 'off',
    EXPORT_INTERVAL_SECONDS: '0',
    STATUS_PROBE_INTERVAL_SECONDS: '0',
    LOG_LEVEL: 'warn',
  });
});
afterAll(async () => {
  await svc?.stop();
  await server?.destroy();
});

const mix = (i: number) => {
  const r = i % 10;
  if (r < 7) return { label: 'prices', path: `/prices?market_hash_name=${encodeURIComponent(ITEM)}`, headers: { Authorization: `Bearer ${key}` } };
  if (r < 9) return { label: 'websites', path: '/websites' };
  return { label: 'health', path: '/health' };
};

/** The checks every fault run shares; returns the figures. */
async function judge(samples: Sample[], backAt: number) {
  const statuses = tally(samples);
  // Nothing but 200 and 503; no dropped connection, no hang.
  expect(Object.keys(statuses).filter((k) => k !== '200' && k !== '503')).toEqual([]);
  for (const s of samples.filter((x) => x.status === 503)) {
    expect(s.code).toBe('dependency_unavailable');
    expect(Number(s.retryAfter)).toBeGreaterThan(0);
    expect(s.requestId).toBeTruthy();
    expect(s.bodyRequestId).toBe(s.requestId);
    expect(s.billable === undefined || s.billable === false).toBe(true);
  }
  // Liveness never depends on the database.
  expect(samples.filter((s) => s.label === 'health' && s.status !== 200)).toEqual([]);
  const after = samples.filter((s) => s.sentAt >= backAt + 5000);
  const okAfter = after.filter((s) => s.status === 200).length;
  expect(after.length).toBeGreaterThan(50);
  expect(okAfter / after.length).toBeGreaterThanOrEqual(0.99);
  // Recovery: from the first moment after which every request succeeded.
  const failedAfterBack = samples.filter((s) => s.sentAt >= backAt && s.status !== 200);
  const lastFailure = failedAfterBack.length ? failedAfterBack.map((s) => s.sentAt + s.ms).reduce((a, b) => Math.max(a, b), -Infinity) : backAt;
  // Credits: charged exactly for the billed 200s, never for a failure.
  const billed = samples.filter((s) => s.label === 'prices' && s.status === 200 && s.billable === true).length;
  // Charges taken from a credit lease are recorded within a second (README, Billing): wait until the counters stand still.
  let c = await counters();
  for (let i = 0, still = 0; i < 40 && still < 5; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const next = await counters();
    still = next.used === c.used ? still + 1 : 0;
    c = next;
  }
  expect(c.used).toBe(c.ledger);
  return {
    requests: samples.length,
    statuses,
    five_xx_other_than_503: samples.filter((s) => s.status >= 500 && s.status !== 503).length,
    success_rate_from_5s_after_return: Number((okAfter / after.length).toFixed(4)),
    recovery_ms_after_return: Math.round(Math.max(0, lastFailure - backAt)),
    max_latency_ms: Math.round(samples.map((s) => s.ms).reduce((a, b) => Math.max(a, b), -Infinity)),
    billed_200s: billed,
    credits_used: c.used,
    ledger_sum: c.ledger,
  };
}

describe('database faults under steady load', () => {
  it('the database server stops for 10 s: 503 with Retry-After while it is away, then back to 200; no credit lost', async () => {
    const before = await counters();
    const load = steadyLoad(svc.url, 8, mix);
    await sleep(3000);
    const downAt = load.elapsed();
    await server.stop();
    await sleep(10_000);
    await server.start();
    const backAt = load.elapsed();
    await sleep(12_000);
    const samples = await load.stop();
    const during = samples.filter((s) => s.sentAt > downAt + 500 && s.sentAt + s.ms < backAt);
    expect(during.filter((s) => s.label === 'prices' && s.status === 503).length).toBeGreaterThan(0);
    const figures = await judge(samples, backAt);
    const billedHere = samples.filter((s) => s.label === 'prices' && s.status === 200 && s.billable === true).length;
    expect(figures.credits_used - before.used).toBe(billedHere);
    writeFigures('database-stop', { down_ms: Math.round(backAt - downAt), ...figures });
    expect((await fetch(`${svc.url}/health`)).status).toBe(200);
  });

  it("every connection of the service is terminated three times: no 500, and service resumes at once", async () => {
    const before = await counters();
    const load = steadyLoad(svc.url, 8, mix);
    await sleep(2000);
    const killed: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      killed.push(await server.terminateConnections('qg_faults'));
      await sleep(1000);
    }
    const backAt = load.elapsed();
    await sleep(8000);
    const samples = await load.stop();
    expect(killed.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    const figures = await judge(samples, backAt);
    const billedHere = samples.filter((s) => s.label === 'prices' && s.status === 200 && s.billable === true).length;
    expect(figures.credits_used - before.used).toBe(billedHere);
    writeFigures('database-terminate', { connections_terminated: killed, ...figures });
  });
});
