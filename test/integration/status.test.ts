/**
 * GET /status and the recorder jobs behind it, with a fixed clock: 5-minute infrastructure buckets,
 * 15-minute service buckets from real HTTP probes, datasource counts from ingestion, hourly summary
 * scores, missing data shown as missing, pruning, and 503 (never a partial answer) when the store fails.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import {
  defaultChecks,
  pruneStatus,
  recordInfrastructure,
  recordJobRun,
  recordServiceProbes,
  recordSummary,
  type InfrastructureCheck,
} from '../../src/status/status.js';
import { statusTick } from '../../src/jobs/status-recorder.js';
import { startServerProcess } from '../helpers/server.js';

const at = (iso: string) => new Date(iso);
const unix = (iso: string) => String(Date.parse(iso) / 1000);

let now = at('2026-11-21T12:02:30Z');
let t: TestApp;
let probeServer: http.Server;
let probeUp = true;
let probeUrl: string;
let closedUrl: string;

beforeAll(async () => {
  t = await testApp({
    clock: () => now,
    status: { infrastructureComponents: ['database', 'export', 'valuation', 'ingestion', 'flaky'], distribution: { '52.52,13.40': { node_count: 3, datacenter_count: 1 } } },
  });
  probeServer = http.createServer((_req, res) => {
    res.statusCode = probeUp ? 200 : 503;
    res.end(probeUp ? 'ok' : 'down');
  });
  await new Promise<void>((resolve) => probeServer.listen(0, '127.0.0.1', resolve));
  probeUrl = `http://127.0.0.1:${(probeServer.address() as AddressInfo).port}/health`;
  // A port that was just free: connections are refused.
  const spare = http.createServer();
  await new Promise<void>((resolve) => spare.listen(0, '127.0.0.1', resolve));
  closedUrl = `http://127.0.0.1:${(spare.address() as AddressInfo).port}/`;
  await new Promise<void>((resolve) => spare.close(() => resolve()));
});
afterAll(async () => {
  await new Promise<void>((resolve) => probeServer.close(() => resolve()));
  await t.close();
});

async function status() {
  const res = await t.get('/status');
  expect(res.status).toBe(200);
  expect(res.body.meta.request_id).toBe(res.headers.get('x-request-id'));
  return res.body.data;
}

/** A check whose answer the test sets. */
let flakyOk = true;
const flaky: InfrastructureCheck = {
  component: 'flaky',
  run: async () => (flakyOk ? { ok: true } : { ok: false, detail: 'down on purpose' }),
};

describe('GET /status', () => {
  it('is public, free, and shows empty areas and the configured distribution before anything is recorded', async () => {
    const res = await t.get('/status');
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({ request_id: res.headers.get('x-request-id') });
    expect(res.body.data).toEqual({
      summary: { service: {}, infrastructure: {}, datasource: {} },
      service: { web: {}, api: {}, api_cn: {}, monitor: {} },
      datasource: { realtime: {}, result: {} },
      infrastructure: { database: {}, export: {}, valuation: {}, ingestion: {}, flaky: {} },
      distribution: { '52.52,13.40': { node_count: 3, datacenter_count: 1 } },
    });
  });

  it('infrastructure: one bucket per passed check and 5 minutes; a failed or skipped check leaves its bucket missing', async () => {
    const checks = [...defaultChecks(t.db, { exportIntervalSeconds: 300, ingestionMaxAgeSeconds: 900 }), flaky];
    // 12:00 bucket: the export job ran a minute ago, a collector sent a quote two minutes ago.
    now = at('2026-11-21T12:02:30Z');
    await recordJobRun(t.db.prisma, 'export', 'ok', at('2026-11-21T12:01:30Z'));
    await ingestQuotes(t.db, [obs('Status Item', { observedAt: at('2026-11-21T12:00:40Z') })], { now });
    const first = await recordInfrastructure(t.db, checks, now);
    expect(first).toMatchObject({ database: { ok: true }, export: { ok: true }, ingestion: { ok: true }, flaky: { ok: true } });
    expect(first.valuation).toEqual({ skipped: true, detail: 'the valuation job has not run yet' });
    // 12:05 bucket: the flaky check fails.
    flakyOk = false;
    now = at('2026-11-21T12:06:00Z');
    await recordInfrastructure(t.db, checks, now);
    flakyOk = true;
    // 12:10 bucket: the recorder did not run. 12:35: export and ingestion are stale by then.
    now = at('2026-11-21T12:35:10Z');
    const late = await recordInfrastructure(t.db, checks, now);
    expect(late.export).toMatchObject({ ok: false });
    expect(late.ingestion).toMatchObject({ ok: false });

    const infra = (await status()).infrastructure;
    const b = (iso: string) => unix(iso);
    expect(Object.keys(infra.database)).toEqual([b('2026-11-21T12:00:00Z'), b('2026-11-21T12:05:00Z'), b('2026-11-21T12:35:00Z')]);
    expect(Object.keys(infra.flaky)).toEqual([b('2026-11-21T12:00:00Z'), b('2026-11-21T12:35:00Z')]);
    expect(Object.keys(infra.export)).toEqual([b('2026-11-21T12:00:00Z'), b('2026-11-21T12:05:00Z')]);
    expect(Object.keys(infra.ingestion)).toEqual([b('2026-11-21T12:00:00Z'), b('2026-11-21T12:05:00Z')]);
    expect(infra.valuation).toEqual({});
    expect(infra.redis).toBeUndefined();
    expect(infra.database[b('2026-11-21T12:00:00Z')]).toEqual({ latency_ms: expect.any(Number) });

    // A second run in the same bucket replaces the first.
    flakyOk = false;
    await recordInfrastructure(t.db, [flaky], at('2026-11-21T12:36:00Z'));
    flakyOk = true;
    expect((await status()).infrastructure.flaky[b('2026-11-21T12:35:00Z')]).toBeUndefined();
  });

  it('service: real probes summed per 15-minute bucket; a component without a URL has no data, not zeros', async () => {
    const targets = [
      { component: 'api' as const, url: probeUrl },
      { component: 'web' as const, url: closedUrl },
    ];
    for (const [iso, up] of [
      ['2026-11-21T11:00:05Z', true],
      ['2026-11-21T11:01:05Z', false],
      ['2026-11-21T11:02:05Z', true],
      ['2026-11-21T11:15:05Z', true],
    ] as const) {
      probeUp = up;
      const out = await recordServiceProbes(t.db, targets, at(iso));
      expect(out).toEqual({ api: up, web: false });
    }
    probeUp = true;
    now = at('2026-11-21T12:36:00Z');
    const service = (await status()).service;
    expect(service.api).toEqual({
      [unix('2026-11-21T11:00:00Z')]: { ok: 2, total: 3, availability: '66.67', latency_ms: expect.any(Number) },
      [unix('2026-11-21T11:15:00Z')]: { ok: 1, total: 1, availability: '100.00', latency_ms: expect.any(Number) },
    });
    expect(service.web[unix('2026-11-21T11:00:00Z')]).toMatchObject({ ok: 0, total: 3, availability: '0.00' });
    expect(service.api_cn).toEqual({});
    expect(service.monitor).toEqual({});
  });

  it('datasource: quotes received per market, per minute (realtime, last 10 minutes) and per hour (result, 24 hours)', async () => {
    now = at('2026-11-21T12:36:00Z');
    await ingestQuotes(
      t.db,
      [
        obs('DS A', { marketCode: 'BUFF163', observedAt: at('2026-11-21T12:35:10Z') }),
        obs('DS B', { marketCode: 'BUFF163', observedAt: at('2026-11-21T12:35:50Z') }),
        obs('DS C', { marketCode: 'BUFF163', observedAt: at('2026-11-21T12:31:00Z') }),
        obs('DS A', { marketCode: 'YOUPIN', providerCode: 'YOUPIN', observedAt: at('2026-11-21T07:10:00Z') }),
        obs('DS A', { marketCode: 'SKINPORT', providerCode: 'SKINPORT', currencyCode: 'EUR', observedAt: at('2026-11-19T07:10:00Z') }),
      ],
      { now },
    );
    const ds = (await status()).datasource;
    expect(ds.realtime).toEqual({ BUFF163: { [unix('2026-11-21T12:31:00Z')]: 1, [unix('2026-11-21T12:35:00Z')]: 2 } });
    expect(ds.result).toEqual({
      BUFF163: { [unix('2026-11-21T12:00:00Z')]: 4 },
      YOUPIN: { [unix('2026-11-21T07:00:00Z')]: 1 },
    });
  });

  it('summary: hourly scores of the last 24 completed UTC hours from the recorded areas, absent where nothing was recorded', async () => {
    // Hour 10:00: database passes all 12 buckets, flaky fails 3 of them.
    for (let i = 0; i < 12; i += 1) {
      flakyOk = i >= 3;
      const minute = String(i * 5).padStart(2, '0');
      await recordInfrastructure(t.db, [defaultChecks(t.db, { exportIntervalSeconds: 300, ingestionMaxAgeSeconds: 900 })[0]!, flaky], at(`2026-11-21T10:${minute}:30Z`));
    }
    flakyOk = true;
    // Hour 10:00: api up 3 of 4 then 4 of 4 probes, web always down.
    for (const [iso, up] of [
      ['2026-11-21T10:00:05Z', true],
      ['2026-11-21T10:01:05Z', true],
      ['2026-11-21T10:02:05Z', false],
      ['2026-11-21T10:03:05Z', true],
      ['2026-11-21T10:20:05Z', true],
      ['2026-11-21T10:21:05Z', true],
      ['2026-11-21T10:22:05Z', true],
      ['2026-11-21T10:23:05Z', true],
    ] as const) {
      probeUp = up;
      await recordServiceProbes(t.db, [{ component: 'api', url: probeUrl }, { component: 'web', url: closedUrl }], at(iso));
    }
    probeUp = true;
    now = at('2026-11-21T12:36:00Z');
    await ingestQuotes(t.db, [obs('DS D', { marketCode: 'BUFF163', observedAt: at('2026-11-21T10:30:00Z') })], { now });
    const scores = await recordSummary(t.db, now);
    const summary = (await status()).summary;
    expect(summary).toEqual(scores);
    const h10 = unix('2026-11-21T10:00:00Z');
    expect(summary.infrastructure[h10]).toBe('87.50'); // (12 + 9) / 24
    expect(summary.service[h10]).toBe('43.75'); // mean(7/8, 0/8)
    expect(summary.service[unix('2026-11-21T11:00:00Z')]).toBe('37.50'); // mean(3/4, 0/4)
    // Datasource: BUFF163 (10:30) and YOUPIN (07:10) received quotes in the 24 h scored, one each hour.
    expect(summary.datasource[unix('2026-11-21T07:00:00Z')]).toBe('50.00');
    expect(summary.datasource[h10]).toBe('50.00');
    expect(summary.datasource[unix('2026-11-21T08:00:00Z')]).toBe('0.00');
    expect(Object.keys(summary.datasource)).toHaveLength(24);
    // The hour in progress (12:00) is not scored; an hour with no checks has no infrastructure score.
    expect(summary.infrastructure[unix('2026-11-21T12:00:00Z')]).toBeUndefined();
    expect(summary.infrastructure[unix('2026-11-21T09:00:00Z')]).toBeUndefined();
    expect(summary.service[unix('2026-11-21T09:00:00Z')]).toBeUndefined();
  });

  it('GraphQL statusHistory is the same history as GET /status, as typed lists', async () => {
    const rest = (await t.get('/status')).body.data;
    const g = await t.gql(`{ statusHistory {
      summary { area bucketStart score }
      service { component bucketStart ok total availability latencyMs }
      datasourceRealtime { marketCode bucketStart observations }
      datasourceHourly { marketCode bucketStart observations }
      infrastructure { component bucketStart latencyMs }
      distribution { latitude longitude nodeCount datacenterCount } } }`);
    expect(g.body.errors).toBeUndefined();
    const h = g.body.data.statusHistory;
    const iso = (unix: string) => new Date(Number(unix) * 1000).toISOString();
    const entries = <V>(m: Record<string, Record<string, V>>) => Object.entries(m).flatMap(([k, b]) => Object.entries(b).map(([u, v]) => [k, iso(u), v] as const));
    expect(h.summary).toEqual(entries<string>(rest.summary).map(([area, bucketStart, score]) => ({ area, bucketStart, score })));
    expect(h.service).toEqual(
      entries<any>(rest.service).map(([component, bucketStart, v]) => ({ component, bucketStart, ok: v.ok, total: v.total, availability: v.availability, latencyMs: v.latency_ms })),
    );
    expect(h.datasourceRealtime).toEqual(entries<number>(rest.datasource.realtime).map(([marketCode, bucketStart, observations]) => ({ marketCode, bucketStart, observations })));
    expect(h.datasourceHourly).toEqual(entries<number>(rest.datasource.result).map(([marketCode, bucketStart, observations]) => ({ marketCode, bucketStart, observations })));
    expect(h.infrastructure).toEqual(entries<any>(rest.infrastructure).map(([component, bucketStart, v]) => ({ component, bucketStart, latencyMs: v.latency_ms })));
    expect(h.distribution.length).toBe(Object.keys(rest.distribution).length);
    // The history is not empty here (earlier tests recorded it), so the comparison says something.
    expect(h.service.length + h.infrastructure.length + h.datasourceHourly.length).toBeGreaterThan(0);
  });

  it('the recorder job: the infrastructure work runs once per 5-minute bucket, the probes every tick', async () => {
    const opts = {
      checks: [flaky],
      targets: [{ component: 'monitor' as const, url: probeUrl }],
      intervalSeconds: 60,
      clock: () => now,
    };
    now = at('2026-11-21T12:40:10Z');
    let last = await statusTick(t.db, opts, null);
    flakyOk = false;
    now = at('2026-11-21T12:41:10Z');
    last = await statusTick(t.db, opts, last);
    flakyOk = true;
    const data = await status();
    expect(data.infrastructure.flaky[unix('2026-11-21T12:40:00Z')]).toEqual({ latency_ms: expect.any(Number) }); // not re-run at 12:41
    expect(data.service.monitor[unix('2026-11-21T12:30:00Z')]).toMatchObject({ ok: 2, total: 2 });
    expect(last).toBe(Date.parse('2026-11-21T12:40:00Z'));
  });

  it('prunes rows older than 25 hours, and never shows anything older than 24 hours', async () => {
    now = at('2026-11-22T12:20:00Z');
    let data = await status();
    // 12:02 yesterday is 24 h 17 min ago: out of the window though not yet pruned.
    expect(data.infrastructure.database[unix('2026-11-21T12:00:00Z')]).toBeUndefined();
    expect(data.infrastructure.database[unix('2026-11-21T12:35:00Z')]).toBeDefined();
    expect(data.datasource.result.YOUPIN).toBeUndefined();
    const before = await t.db.prisma.statusInfrastructure.count();
    now = at('2026-11-22T13:20:00Z');
    const pruned = await pruneStatus(t.db, now);
    expect(pruned.infrastructure).toBeGreaterThan(0);
    expect(pruned.summary).toBeGreaterThan(0);
    expect(pruned.activity).toBe(3); // YOUPIN 07:10, BUFF163 10:30 and 12:00; BUFF163 12:31 and 12:35 are kept
    const oldest = await t.db.prisma.statusInfrastructure.findFirst({ orderBy: { bucketStart: 'asc' } });
    expect(oldest!.bucketStart.getTime()).toBeGreaterThanOrEqual(Date.parse('2026-11-21T12:20:00Z'));
    expect(await t.db.prisma.statusInfrastructure.count()).toBeLessThan(before);
    data = await status();
    expect(Object.keys(data.infrastructure.database)).toEqual([]);
  });

  it('answers 503 with the error envelope when the recorded data cannot be read, on REST and GraphQL', async () => {
    await t.db.prisma.$executeRawUnsafe('ALTER TABLE status_service RENAME TO status_service_away');
    try {
      const res = await t.get('/status');
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('30');
      expect(res.body.error.code).toBe('dependency_unavailable');
      expect(res.body.data).toBeUndefined();
      expect(res.body.meta.request_id).toBe(res.headers.get('x-request-id'));
      const g = await t.gql('{ status }');
      expect(g.body.data).toBeNull();
      expect(g.body.errors[0].extensions.code).toBe('dependency_unavailable');
    } finally {
      await t.db.prisma.$executeRawUnsafe('ALTER TABLE status_service_away RENAME TO status_service');
    }
    expect((await t.get('/status')).status).toBe(200);
  });
});

describe('the recorder in a running service', () => {
  it('probes its own /health for `api`, checks the database, and /status shows them; unconfigured parts stay empty', async () => {
    const server = await startServerProcess({
      PGLITE_DIR: 'memory://',
      EXPORT_INTERVAL_SECONDS: '0',
      STATUS_PROBE_INTERVAL_SECONDS: '1',
      STATUS_DISTRIBUTION: '{"1.29,103.85": {"node_count": 2, "datacenter_count": 1}}',
      LOG_LEVEL: 'warn',
    });
    try {
      let data: any;
      for (let i = 0; i < 50; i += 1) {
        data = (await (await fetch(`${server.url}/status`)).json()).data;
        const api = Object.values(data.service.api) as { ok: number }[];
        if (api.some((b) => b.ok >= 2) && Object.keys(data.infrastructure.database).length > 0) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      const api = Object.values(data.service.api) as { ok: number; total: number; availability: string }[];
      expect(api.reduce((n, b) => n + b.ok, 0)).toBeGreaterThanOrEqual(2);
      expect(api.every((b) => b.availability === '100.00')).toBe(true);
      expect(Object.keys(data.infrastructure.database)).toHaveLength(1);
      expect(data.service.web).toEqual({});
      expect(data.infrastructure.export).toEqual({}); // the export job is off: skipped, not failed
      expect(data.infrastructure.ingestion).toEqual({}); // no collector sent anything: failed
      expect(data.infrastructure.redis).toBeUndefined();
      expect(data.distribution).toEqual({ '1.29,103.85': { node_count: 2, datacenter_count: 1 } });
    } finally {
      await server.stop();
    }
  });
});
