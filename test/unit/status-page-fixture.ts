/**
 * A StatusData fixture for the status page renderer: recorded data with gaps, a degraded and a down
 * service bucket, a component never probed, an infrastructure check that never passed, scores with
 * missing hours, two markets' collection counts and one proxy location.
 */
import type { StatusData } from '../../src/status/status.js';

/** The fixture's clock: 12:07:30 UTC. */
export const FIXTURE_NOW = new Date('2026-11-21T12:07:30Z');
const nowS = FIXTURE_NOW.getTime() / 1000;
const floor = (s: number, step: number) => Math.floor(s / step) * step;

/** Service bucket starts of the fixture's api component with no data (a two-hour gap, 04:00-06:00). */
export const API_GAP = Array.from({ length: 8 }, (_, i) => Date.parse('2026-11-21T04:00:00Z') / 1000 + i * 900);
/** The degraded (14 of 15 up) and down (0 of 3) api buckets. */
export const API_DEGRADED = Date.parse('2026-11-21T09:15:00Z') / 1000;
export const API_DOWN = Date.parse('2026-11-21T09:30:00Z') / 1000;
/** Infrastructure bucket starts where the database check did not pass (08:00-08:30). */
export const DB_GAP = Array.from({ length: 6 }, (_, i) => Date.parse('2026-11-21T08:00:00Z') / 1000 + i * 300);
/** Hours without a service score. */
export const SCORE_GAP = [Date.parse('2026-11-21T04:00:00Z') / 1000, Date.parse('2026-11-21T05:00:00Z') / 1000];

/** Builds the fixture (fresh objects each call). */
export function statusFixture(): StatusData {
  const api: StatusData['service'][string] = {};
  const lastService = floor(nowS, 900);
  for (let i = 0; i < 97; i++) {
    const start = lastService - i * 900;
    if (API_GAP.includes(start)) continue;
    if (start === API_DEGRADED) api[String(start)] = { ok: 14, total: 15, availability: '93.33', latency_ms: 41 };
    else if (start === API_DOWN) api[String(start)] = { ok: 0, total: 3, availability: '0.00', latency_ms: 5000 };
    else api[String(start)] = { ok: 15, total: 15, availability: '100.00', latency_ms: 12 };
  }
  const lastInfra = floor(nowS, 300);
  const database: Record<string, { latency_ms: number }> = {};
  const exportJob: Record<string, { latency_ms: number }> = {};
  const ingestion: Record<string, { latency_ms: number }> = {};
  for (let i = 0; i < 289; i++) {
    const start = lastInfra - i * 300;
    if (!DB_GAP.includes(start)) database[String(start)] = { latency_ms: 2 };
    exportJob[String(start)] = { latency_ms: 4 };
    if (i < 120) ingestion[String(start)] = { latency_ms: 3 };
  }
  const hourEnd = floor(nowS, 3600);
  const service: Record<string, string> = {};
  const infrastructure: Record<string, string> = {};
  const datasource: Record<string, string> = {};
  for (let i = 1; i <= 24; i++) {
    const h = hourEnd - i * 3600;
    if (!SCORE_GAP.includes(h)) service[String(h)] = h === Date.parse('2026-11-21T09:00:00Z') / 1000 ? '79.17' : '100.00';
    infrastructure[String(h)] = h === Date.parse('2026-11-21T08:00:00Z') / 1000 ? '87.50' : '100.00';
    datasource[String(h)] = i > 10 ? '50.00' : '100.00';
  }
  const buff: Record<string, number> = {};
  const youpin: Record<string, number> = {};
  for (let h = floor(nowS - 86_400, 3600); h <= hourEnd; h += 3600) {
    const k = (h - floor(nowS - 86_400, 3600)) / 3600;
    buff[String(h)] = 1200 + ((k * 317) % 900);
    if (k >= 14) youpin[String(h)] = 300 + ((k * 97) % 400);
  }
  const minute = floor(nowS, 60);
  return {
    summary: { service, infrastructure, datasource },
    service: { web: {}, api, api_cn: {}, monitor: {} },
    datasource: {
      realtime: { BUFF163: { [String(minute - 120)]: 14, [String(minute - 60)]: 22, [String(minute)]: 9 } },
      result: { BUFF163: buff, YOUPIN: youpin },
    },
    infrastructure: { database, export: exportJob, valuation: {}, ingestion },
    distribution: { '52.52,13.40': { node_count: 3, datacenter_count: 1 }, '1.35,103.82': { node_count: 5, datacenter_count: 2 } },
  };
}
