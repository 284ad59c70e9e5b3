/**
 * A fresh start is not an outage (issue 41, point 12): a fresh install showed amber "Degraded: API" because the
 * service's own /health probe timed out while its start-up work ran. Probes and checks made before the service is
 * ready are not recorded (their buckets are "no data", never down), the first hour of an install is scored on the
 * buckets after its first recording only, and a running service records nothing before its first export build ends.
 */
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../helpers/app.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { statusTick, type StatusRecorderOptions } from '../../src/jobs/status-recorder.js';
import { recordInfrastructure, recordSummary, type InfrastructureCheck } from '../../src/status/status.js';
import { openDatabase } from '../../src/db/client.js';
import { loadEnv } from '../../src/env.js';
import { startServer } from '../../src/server.js';
import { ingestQuotes, obs } from '../helpers/app.js';

const at = (iso: string) => new Date(iso);
const unix = (iso: string) => String(Date.parse(iso) / 1000);

let now = at('2026-11-21T10:37:10Z');
let t: TestApp;
let closedUrl: string;
let upUrl: string;
let upServer: http.Server;

beforeAll(async () => {
  t = await testApp({ clock: () => now, status: { infrastructureComponents: ['database'], distribution: {} } });
  upServer = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => upServer.listen(0, '127.0.0.1', r));
  upUrl = `http://127.0.0.1:${(upServer.address() as AddressInfo).port}/health`;
  // A port that was just free: connections are refused, as a service too busy starting to answer looks to a probe.
  const spare = http.createServer();
  await new Promise<void>((r) => spare.listen(0, '127.0.0.1', r));
  closedUrl = `http://127.0.0.1:${(spare.address() as AddressInfo).port}/health`;
  await new Promise<void>((r) => spare.close(() => r()));
});
afterAll(async () => {
  await new Promise<void>((r) => upServer.close(() => r()));
  await t.close();
});

const database: InfrastructureCheck = { component: 'database', run: async () => ({ ok: true }) };

describe('the status recorder before the service is ready', () => {
  it('records neither probes nor checks: the status shows no data, not a degraded API; once ready it records', async () => {
    let ready = false;
    const opts: StatusRecorderOptions = { checks: [database], targets: [{ component: 'api', url: closedUrl }], intervalSeconds: 60, clock: () => now, ready: () => ready };
    let last: number | null = null;
    for (const iso of ['2026-11-21T10:37:10Z', '2026-11-21T10:38:10Z', '2026-11-21T10:39:10Z']) {
      now = at(iso);
      last = await statusTick(t.db, opts, last);
    }
    const before = (await t.get('/status')).body.data;
    expect(before.service.api).toEqual({});
    expect(before.infrastructure.database).toEqual({});
    const page = await t.get('/status/page');
    expect(page.status).toBe(200);
    expect(page.text).toContain('No status data recorded');
    expect(page.text).not.toMatch(/Degraded|Outage/);

    // Ready: the service answers its probe now.
    ready = true;
    opts.targets = [{ component: 'api', url: upUrl }];
    for (const iso of ['2026-11-21T10:40:10Z', '2026-11-21T10:41:10Z']) {
      now = at(iso);
      last = await statusTick(t.db, opts, last);
    }
    const after = (await t.get('/status')).body.data;
    expect(after.service.api).toEqual({ [unix('2026-11-21T10:30:00Z')]: { ok: 2, total: 2, availability: '100.00', latency_ms: expect.any(Number) } });
    expect(Object.keys(after.infrastructure.database)).toEqual([unix('2026-11-21T10:40:00Z')]);
    const upPage = await t.get('/status/page');
    expect(upPage.text).toContain('All monitored components operational');
    expect(upPage.text).not.toMatch(/Degraded|Outage/);
  });

  it('scores the first hour of an install on the buckets after its first recording only', async () => {
    // The install's checks pass from 10:40 on (first recording above); the hour 10:00 has 4 buckets from there.
    for (const minute of ['45', '50', '55']) await recordInfrastructure(t.db, [database], at(`2026-11-21T10:${minute}:10Z`));
    for (let m = 0; m < 60; m += 5) await recordInfrastructure(t.db, [database], at(`2026-11-21T11:${String(m).padStart(2, '0')}:10Z`));
    // 12:00-13:00: the service is down for 20 minutes (4 buckets without a passed check).
    for (let m = 20; m < 60; m += 5) await recordInfrastructure(t.db, [database], at(`2026-11-21T12:${String(m).padStart(2, '0')}:10Z`));
    now = at('2026-11-21T13:01:00Z');
    const scores = await recordSummary(t.db, now);
    expect(scores.infrastructure![unix('2026-11-21T10:00:00Z')]).toBe('100.00'); // 4 of 4, not 4 of 12
    expect(scores.infrastructure![unix('2026-11-21T11:00:00Z')]).toBe('100.00');
    expect(scores.infrastructure![unix('2026-11-21T12:00:00Z')]).toBe('66.67'); // a gap after the first recording still counts
    expect((await t.get('/status')).body.data.summary.infrastructure).toEqual(scores.infrastructure);
  });
});

describe('a running service', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'qg-status-startup-'));
  let tdb: TestDatabase | null = null;
  afterAll(async () => {
    await tdb?.destroy();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('records its first probe and check only after its start-up work (the first export build) is over', async () => {
    // A catalogue whose first export build takes a while (every item written).
    const target = process.env.TEST_DATABASE_URL ? { url: (tdb = await testDatabase()).url! } : { pgliteDir: path.join(root, 'pglite') };
    const seed = 'url' in target ? tdb! : await openDatabase(target);
    const names = Array.from({ length: 1500 }, (_, i) => `Sticker | Startup ${i}`);
    await ingestQuotes(seed, names.flatMap((name) => [obs(name, { price: '1.5' }), obs(name, { side: 'bid', price: '1.25' })]));
    if (!('url' in target)) await seed.close();

    const server = await startServer(
      loadEnv({
        ...('url' in target ? { DATABASE_URL: target.url } : { PGLITE_DIR: target.pgliteDir }),
        PORT: '0',
        HOST: '127.0.0.1',
        QUOTEGATE_AUTOLOAD: 'false',
        EXPORT_INTERVAL_SECONDS: '3600',
        STATUS_PROBE_INTERVAL_SECONDS: '1',
        VALUATION_JOB: 'off',
        COLLECTORS: 'off', // hermetic: no requests to the real marketplaces (the worker's stop is tested with it)
        LOG_LEVEL: 'silent',
      }),
    );
    try {
      // Wait for the first export build and the first recorded check (the recorder ticks every second).
      let exported: { ok: Date | null }[] = [];
      let checks: { first: Date | null; n: number }[] = [];
      for (let i = 0; i < 300; i += 1) {
        exported = await server.db.query<{ ok: Date | null }>(`SELECT last_ok_at AS ok FROM job_run WHERE job = 'export'`);
        checks = await server.db.query<{ first: Date | null; n: number }>(`SELECT min(checked_at) AS first, count(*)::int AS n FROM status_infrastructure`);
        if (exported[0]?.ok && checks[0]!.n > 0) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(exported[0]?.ok).toBeTruthy();
      expect(checks[0]!.n).toBeGreaterThan(0);
      expect(new Date(checks[0]!.first!).getTime()).toBeGreaterThanOrEqual(new Date(exported[0]!.ok!).getTime());
      const status = (await (await fetch(`${server.url.replace('localhost', '127.0.0.1')}/status`)).json()).data;
      for (const bucket of Object.values(status.service.api) as { ok: number; total: number }[]) expect(bucket.ok).toBe(bucket.total);
    } finally {
      await server.close();
    }
  });
});
