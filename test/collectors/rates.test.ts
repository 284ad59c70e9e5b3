/**
 * Exchange rates (src/collectors/rates.ts) from a real recorded ECB daily file and a csgotrader exchange_rates.json
 * sample (fixtures/*, PROVENANCE beside them), served by a local upstream at the upstreams' own paths: the catalogue's
 * usd_rate and rate_date as GET /currencies shows them.
 */
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CollectorRuntime } from '../../src/collectors/runner.js';
import { CSGOTRADER_RATES, ECB_RATES, parseEcbDaily, runRates } from '../../src/collectors/rates.js';
import { loadCollectorSourceEnv } from '../../src/env.js';
import { Money } from '../../src/lib/money.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { startUpstream, type LocalUpstream } from './upstream.js';

const fixtures = path.join(import.meta.dirname, 'fixtures');
const ECB_FILE = path.join(fixtures, 'ecb', 'eurofxref-daily-2025-05-09.xml');
const CSGOTRADER_FILE = path.join(fixtures, 'csgotrader', 'exchange_rates_2026-07-16.json');

let t: TestApp;
let ecb: LocalUpstream;
let csgotrader: LocalUpstream;
let rt: CollectorRuntime;

async function currencies(): Promise<Map<string, { usd_rate: string; rate_date: string | null }>> {
  const rows = await t.db.query<{ code: string; usd_rate: string; rate_date: string | null }>(
    `SELECT code, trim_scale(usd_rate)::text AS usd_rate, to_char(rate_date, 'YYYY-MM-DD') AS rate_date FROM currency`,
  );
  return new Map(rows.map((r) => [r.code, { usd_rate: r.usd_rate, rate_date: r.rate_date }]));
}

const round18 = (d: InstanceType<typeof Money>) => d.toDecimalPlaces(18, Money.ROUND_HALF_EVEN).toFixed();

beforeAll(async () => {
  t = await testApp();
  ecb = await startUpstream([{ path: ECB_RATES.path, file: ECB_FILE, contentType: 'text/xml' }]);
  csgotrader = await startUpstream([{ path: CSGOTRADER_RATES.path, file: CSGOTRADER_FILE, headers: { 'Last-Modified': 'Thu, 16 Jul 2026 06:00:00 GMT' } }]);
  rt = new CollectorRuntime({
    db: t.db,
    logger: pino({ level: 'silent' }),
    sourceEnv: (s) => loadCollectorSourceEnv(s, [], { COLLECTOR_ECB_URL: ecb.url, COLLECTOR_CSGOTRADER_URL: csgotrader.url }),
    retryBaseMs: 10,
  });
});
afterAll(async () => {
  await rt.close();
  await ecb.close();
  await csgotrader.close();
  await t.close();
});
beforeEach(() => {
  ecb.play(ECB_RATES.path, null);
  csgotrader.play(CSGOTRADER_RATES.path, null);
});

describe('the ECB daily file', () => {
  it('parses the recorded file: its day and every rate as published', () => {
    const { date, unitsPerEur } = parseEcbDaily(fs.readFileSync(ECB_FILE, 'utf8'));
    expect(date).toBe('2025-05-09');
    expect(unitsPerEur.size).toBe(30);
    expect(unitsPerEur.get('USD')).toBe('1.1252');
    expect(unitsPerEur.get('GBP')).toBe('0.84770');
    expect(unitsPerEur.get('IDR')).toBe('18606.59');
  });

  it('refuses a page that is not the ECB envelope', () => {
    expect(() => parseEcbDaily('<!DOCTYPE html><html><body>Maintenance</body></html>')).toThrow(/format|eurofxref/i);
    expect(() => parseEcbDaily(fs.readFileSync(ECB_FILE, 'utf8').replace("currency='USD'", "currency='XXX'"))).toThrow(/no USD/);
  });
});

describe('runRates', () => {
  it('never goes back to an older day: the bundled 2026 rates stay when the ECB file is of 2025', async () => {
    const before = await currencies();
    const r = await runRates(rt);
    expect(r.outcome).toBe('ok');
    const after = await currencies();
    for (const code of ['EUR', 'CNY', 'GBP', 'JPY']) expect(after.get(code)).toEqual(before.get(code));
    expect(r.skips.older).toBeGreaterThan(20);
  });

  it('writes USD per unit from the ECB (by division, 18 places) and the alternate for the rest', async () => {
    await t.db.query(`UPDATE currency SET rate_date = '2025-01-01'`);
    const r = await runRates(rt);
    expect(r.outcome).toBe('ok');
    const after = await currencies();
    const usdPerEur = new Money('1.1252');
    expect(after.get('EUR')).toEqual({ usd_rate: '1.1252', rate_date: '2025-05-09' });
    expect(after.get('CNY')).toEqual({ usd_rate: round18(usdPerEur.div('8.1470')), rate_date: '2025-05-09' });
    expect(after.get('JPY')).toEqual({ usd_rate: round18(usdPerEur.div('163.36')), rate_date: '2025-05-09' });
    expect(after.get('USD')!.usd_rate).toBe('1');
    // RUB is not an ECB currency: csgotrader's 1 / units per USD, dated by its Last-Modified day.
    expect(after.get('RUB')).toEqual({ usd_rate: round18(new Money(1).div('78.09728753334981')), rate_date: '2026-07-16' });
    // The API serves them.
    const res = await t.get('/currencies?search=CNY');
    expect(res.status).toBe(200);
    expect(res.body.data.find((c: any) => c.code === 'CNY').usd_rate).toBe(after.get('CNY')!.usd_rate);
  });

  it('the ECB failing: csgotrader gives every rate; both failing: nothing changes and the run failed', async () => {
    await t.db.query(`UPDATE currency SET rate_date = '2025-01-01'`);
    ecb.play(ECB_RATES.path, 'html');
    const r = await runRates(rt);
    expect(r.outcome).toBe('ok');
    expect(r.errorMessage).toMatch(/^ecb: /);
    const after = await currencies();
    expect(after.get('EUR')).toEqual({ usd_rate: round18(new Money(1).div('0.8738898322044133')), rate_date: '2026-07-16' });

    await t.db.query(`UPDATE currency SET rate_date = '2025-01-01'`);
    const before = await currencies();
    ecb.play(ECB_RATES.path, '503');
    csgotrader.play(CSGOTRADER_RATES.path, 'truncated');
    const failed = await runRates(rt);
    expect(failed.outcome).toBe('failed');
    expect(await currencies()).toEqual(before);
    const [row] = await t.db.query<{ outcome: string; error_message: string }>(`SELECT outcome, error_message FROM collector_run WHERE source_id = 'rates' ORDER BY id DESC LIMIT 1`);
    expect(row!.outcome).toBe('failed');
    expect(row!.error_message).toMatch(/ecb: 503.*csgotrader:/);
  });
});
