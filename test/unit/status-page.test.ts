/**
 * The status page renderer over a StatusData fixture: bars per bucket, missing buckets drawn as
 * "no data" (never up, never 0 %), components without data saying so, hourly scores with gaps, the
 * collection chart, the proxy table, and the "status data unavailable" page.
 */
import { describe, expect, it } from 'vitest';
import { renderStatusPage, bucketStarts } from '../../src/pages/status-page.js';
import type { StatusData } from '../../src/status/status.js';
import { API_DEGRADED, API_DOWN, API_GAP, DB_GAP, FIXTURE_NOW, SCORE_GAP, statusFixture } from './status-page-fixture.js';

/** The HTML of one component row. */
function component(html: string, key: string): string {
  const start = html.indexOf(`<div class="component" data-component="${key}">`);
  expect(start, `component ${key} is on the page`).toBeGreaterThanOrEqual(0);
  const end = html.indexOf('<div class="component"', start + 10);
  const panelEnd = html.indexOf('</div>\n<h2', start);
  return html.slice(start, end > 0 && (panelEnd < 0 || end < panelEnd) ? end : panelEnd);
}

/** The bars of a row: class and tooltip of each rect, in order. */
function bars(row: string): Array<{ level: string; title: string }> {
  return [...row.matchAll(/<rect class="(\w+)"[^>]*><title>([^<]*)<\/title><\/rect>/g)].map((m) => ({ level: m[1]!, title: m[2]! }));
}

const hm = (s: number) => new Date(s * 1000).toISOString().slice(11, 16);

describe('renderStatusPage', () => {
  const html = renderStatusPage(statusFixture(), FIXTURE_NOW);

  it('draws one bar per 15-minute bucket overlapping the last 24 hours for each service component, the last one in progress', () => {
    for (const key of ['web', 'api', 'api_cn', 'monitor']) expect(bars(component(html, key))).toHaveLength(97);
    const starts = bucketStarts(FIXTURE_NOW.getTime() / 1000, 900);
    expect(hm(starts.at(-1)!)).toBe('12:00');
    expect(starts[0]).toBe(starts.at(-1)! - 96 * 900);
    expect(hm(starts[0]!)).toBe('12:00'); // began before the window (12:07:30 yesterday), as GET /status keys it
  });

  it('draws missing service buckets as no data, and failed probes as degraded or down with their counts', () => {
    const api = bars(component(html, 'api'));
    const starts = bucketStarts(FIXTURE_NOW.getTime() / 1000, 900);
    const at = (s: number) => api[starts.indexOf(s)]!;
    for (const s of API_GAP) {
      expect(at(s).level).toBe('nodata');
      expect(at(s).title).toContain('no data');
    }
    expect(at(API_DEGRADED)).toEqual({ level: 'degraded', title: expect.stringContaining('14 of 15 probes up (93.33 %)') });
    expect(at(API_DOWN)).toEqual({ level: 'down', title: expect.stringContaining('0 of 3 probes up (0.00 %)') });
    expect(api.filter((b) => b.level === 'up')).toHaveLength(97 - API_GAP.length - 2);
    expect(component(html, 'api')).toContain('data for 89 of 97 fifteen-minute intervals');
    expect(component(html, 'api')).toContain('Operational');
  });

  it('says so when a component has no data, without drawing it as up or as 0 %', () => {
    for (const key of ['web', 'api_cn', 'monitor']) {
      const row = component(html, key);
      expect(row).toContain('No data');
      expect(row).toContain('not probed');
      expect(bars(row).every((b) => b.level === 'nodata')).toBe(true);
      expect(row).not.toMatch(/\b0(\.00)? ?%/);
    }
    const valuation = component(html, 'valuation');
    expect(valuation).toContain('No data');
    expect(bars(valuation)).toHaveLength(289);
    expect(bars(valuation).every((b) => b.level === 'nodata')).toBe(true);
  });

  it('draws 5-minute infrastructure buckets, a missing one as "failed or did not run"', () => {
    const db = bars(component(html, 'database'));
    expect(db).toHaveLength(289);
    const starts = bucketStarts(FIXTURE_NOW.getTime() / 1000, 300);
    for (const s of DB_GAP) expect(db[starts.indexOf(s)]).toEqual({ level: 'nodata', title: expect.stringContaining('no data (the check failed or did not run)') });
    expect(db.filter((b) => b.level === 'up')).toHaveLength(289 - DB_GAP.length);
    expect(component(html, 'database')).toContain('Passed in 283 of 289 five-minute intervals');
    // Redis is not configured in the fixture: no row.
    expect(html).not.toContain('data-component="redis"');
  });

  it('shows the banner from the latest buckets, with earlier problems and the components without data', () => {
    const banner = /<div class="banner (\w+)"[^>]*>(.*?)<\/div>/s.exec(html)!;
    expect(banner[1]).toBe('up');
    expect(banner[2]).toContain('All monitored components operational');
    expect(banner[2]).toContain('API, failed probes in 2 of 89 intervals');
    expect(banner[2]).toContain('Database, no passed check in 6 intervals');
    expect(banner[2]).toContain('No data for: Website, API (China), Monitor, CSCP valuation job');
  });

  it('is degraded or down when the latest buckets say so', () => {
    const data = statusFixture();
    const last = String(Math.floor(FIXTURE_NOW.getTime() / 1000 / 900) * 900);
    data.service.api![last] = { ok: 0, total: 2, availability: '0.00', latency_ms: 5000 };
    expect(renderStatusPage(data, FIXTURE_NOW)).toMatch(/<div class="banner down"[^>]*>Outage: API/);
    const stale = statusFixture();
    const infraLast = Math.floor(FIXTURE_NOW.getTime() / 1000 / 300) * 300;
    delete stale.infrastructure.database![String(infraLast)];
    delete stale.infrastructure.database![String(infraLast - 300)];
    const page = renderStatusPage(stale, FIXTURE_NOW);
    expect(page).toMatch(/<div class="banner degraded"[^>]*>Degraded: Database \(no passed check since 12:00 UTC\)/);
    expect(component(page, 'database')).toContain('No passed check since 12:00 UTC');
  });

  it('shows the hourly scores of the last 24 completed hours, a missing hour as "–"', () => {
    const row = /<tr data-area="service">(.*?)<\/tr>/s.exec(html)![1]!;
    const cells = [...row.matchAll(/<td class="cell (\w+)" title="([^"]*)">([^<]*)<\/td>/g)];
    expect(cells).toHaveLength(24);
    expect(cells[0]![2]).toContain('2026-11-20 12:00–13:00 UTC');
    expect(cells[23]![2]).toContain('2026-11-21 11:00–12:00 UTC');
    const gaps = cells.filter((c) => c[1] === 'nodata');
    expect(gaps.map((c) => c[2]!.slice(11, 16))).toEqual(SCORE_GAP.map(hm));
    expect(gaps.every((c) => c[3] === '–')).toBe(true);
    const low = cells.find((c) => c[2]!.includes('09:00–10:00'))!;
    expect(low[1]).toBe('down');
    expect(low[2]).toContain('79.17');
    expect(row).toMatch(/<td class="mean num" title="mean of the 22 hours with a score">\d+\.\d\d<\/td>/);
  });

  it('charts price collection per hour and lists each market', () => {
    expect(html).toContain('aria-label="Quotes collected per hour across all markets, last 24 hours"');
    expect(html).toMatch(/<tr data-market="BUFF163">.*40,500.*45/s);
    const youpin = /<tr data-market="YOUPIN">(.*?)<\/tr>/s.exec(html)![1]!;
    expect(youpin).toContain('no data'); // nothing in the last few minutes
    expect([...youpin.matchAll(/class="nodata-mark"/g)]).toHaveLength(14);
  });

  it('shows the proxy distribution when there is one, and leaves it out when empty', () => {
    expect(html).toMatch(/Proxy distribution.*52\.52,13\.40.*3.*1.*1\.35,103\.82.*5.*2.*Total.*8.*3/s);
    const none = statusFixture();
    none.distribution = {};
    expect(renderStatusPage(none, FIXTURE_NOW)).not.toContain('Proxy distribution');
  });

  it('with nothing recorded, says so and shows nothing as up', () => {
    const empty: StatusData = {
      summary: { service: {}, infrastructure: {}, datasource: {} },
      service: { web: {}, api: {}, api_cn: {}, monitor: {} },
      datasource: { realtime: {}, result: {} },
      infrastructure: { database: {}, export: {}, valuation: {}, ingestion: {} },
      distribution: {},
    };
    const page = renderStatusPage(empty, FIXTURE_NOW);
    expect(page).toContain('No status data recorded in the last 24 hours');
    expect(page).not.toContain('class="up"');
    expect(page).not.toContain('banner up');
    expect(page).not.toMatch(/\b0\.00\b/);
    expect(page).toContain('No quotes were collected in the last 24 hours (no data)');
    expect([...page.matchAll(/<td class="cell nodata"/g)]).toHaveLength(72);
  });

  it('without status data, shows "status data unavailable" and nothing else about the service', () => {
    const page = renderStatusPage(null, FIXTURE_NOW);
    expect(page).toContain('<h1>Status data unavailable</h1>');
    expect(page).toContain('not a report that the service is up or down');
    expect(page).not.toContain('class="bars"');
  });

  it('escapes keys it does not know', () => {
    const data = statusFixture();
    data.infrastructure['<script>x</script>'] = {};
    data.distribution['"><b>'] = { node_count: 1, datacenter_count: 1 };
    const page = renderStatusPage(data, FIXTURE_NOW);
    expect(page).not.toContain('<script>x');
    expect(page).not.toContain('"><b>');
  });
});
