/**
 * `/status/page`: the status history of `GET /status` (the same `StatusData`), drawn on the server as
 * plain HTML and inline SVG, readable without JavaScript:
 * - an overall banner from the most recent buckets;
 * - per component a row of bars over the last 24 hours: 15-minute buckets for the public components
 *   (`web`, `api`, `api_cn`, `monitor`), 5-minute buckets for the infrastructure checks;
 * - the hourly scores of the last 24 completed hours per area;
 * - price collection per market (a chart of the hourly totals, and a row per market), and each market's newest
 *   quote with its age, marked stale when its source has not confirmed it for more than 3 of its collection
 *   intervals (collectors/freshness.ts; not part of `GET /status`, whose shape is the spec's);
 * - the proxy-node footprint when there is one.
 * Missing data is drawn as missing: a bucket without data is a grey "no data" bar, a component without
 * any data says so, and neither is ever counted as 0 % or as up.
 */
import { INFRASTRUCTURE_BUCKET_SECONDS, SERVICE_BUCKET_SECONDS, SERVICE_COMPONENTS, type StatusData } from '../status/status.js';
import { escapeHtml, renderPage } from './layout.js';
import { formatAge, type MarketFreshness } from '../collectors/freshness.js';

/** How a bucket, a component or the whole service is drawn. */
export type Level = 'up' | 'degraded' | 'down' | 'nodata';

const DAY = 86_400;
const HOUR = 3600;

/** Display names of the known components (others are shown by their key). */
const NAMES: Record<string, string> = {
  web: 'Website',
  api: 'API',
  api_cn: 'API (China)',
  monitor: 'Monitor',
  database: 'Database',
  redis: 'Redis (shared rate limits)',
  export: 'Export snapshots',
  valuation: 'CSCP valuation job',
  ingestion: 'Quote ingestion',
};

const displayName = (key: string) => NAMES[key] ?? key;

const floorTo = (seconds: number, step: number) => Math.floor(seconds / step) * step;

/** `HH:MM` in UTC. */
function hhmm(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(11, 16);
}

/** `YYYY-MM-DD HH:MM` in UTC. */
function dateTime(seconds: number): string {
  const iso = new Date(seconds * 1000).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
}

/**
 * Starts (Unix seconds) of the buckets overlapping the 24 hours up to `nowSeconds`, oldest first, as
 * `GET /status` keys them: the first one began up to a bucket before the window, the last one is in
 * progress (so one more than fit in 24 hours).
 */
export function bucketStarts(nowSeconds: number, bucketSeconds: number): number[] {
  const first = floorTo(nowSeconds - DAY, bucketSeconds);
  const last = floorTo(nowSeconds, bucketSeconds);
  const starts: number[] = [];
  for (let s = first; s <= last; s += bucketSeconds) starts.push(s);
  return starts;
}

/** A number with thousands separators. */
const count = (n: number) => n.toLocaleString('en-US');

/** A bar row: one rect per bucket, each with its own tooltip (`<title>`). */
function barRow(cells: Array<{ level: Level; title: string }>, label: string): string {
  const w = 10;
  const gap = cells.length > 100 ? 3 : 2;
  const rects = cells
    .map((c, i) => `<rect class="${c.level}" x="${i * w}" y="0" width="${w - gap}" height="34" rx="1"><title>${escapeHtml(c.title)}</title></rect>`)
    .join('');
  return `<svg class="bars" viewBox="0 0 ${cells.length * w} 34" preserveAspectRatio="none" role="img" aria-label="${escapeHtml(label)}">${rects}</svg>`;
}

function axis(left: string, right: string): string {
  return `<div class="axis" aria-hidden="true"><span>${escapeHtml(left)}</span><span></span><span>${escapeHtml(right)}</span></div>`;
}

/** The state of one component row. */
interface ComponentView {
  key: string;
  level: Level;
  stateText: string;
  /** True when the component has no data at all in the window. */
  empty: boolean;
  /** Problems earlier in the window, for the banner (e.g. "failed probes in 2 intervals"). */
  earlier: string | null;
  html: string;
}

/** Level of a service bucket from its probe counts. */
function serviceLevel(ok: number, total: number): Level {
  if (!(total > 0)) return 'nodata';
  if (ok >= total) return 'up';
  if (ok <= 0) return 'down';
  return 'degraded';
}

function percent(ok: number, total: number): string {
  return ((ok / total) * 100).toFixed(2);
}

function componentHtml(name: string, level: Level, stateText: string, bars: string, axisHtml: string, note: string): string {
  return `<div class="component" data-component="${escapeHtml(name)}">
<div class="component-head"><span class="component-name">${escapeHtml(displayName(name))}</span><span class="state ${level}">${escapeHtml(stateText)}</span></div>
${bars}
${axisHtml}
<div class="small muted">${note}</div>
</div>`;
}

function serviceComponent(name: string, buckets: Record<string, { ok: number; total: number; availability?: string; latency_ms?: number }>, nowSeconds: number): ComponentView {
  const starts = bucketStarts(nowSeconds, SERVICE_BUCKET_SECONDS);
  let ok = 0;
  let total = 0;
  let withData = 0;
  const cells = starts.map((start) => {
    const b = buckets[String(start)];
    const span = `${dateTime(start)}–${hhmm(start + SERVICE_BUCKET_SECONDS)} UTC`;
    const level = b ? serviceLevel(b.ok, b.total) : 'nodata';
    if (!b || level === 'nodata') return { level: 'nodata' as Level, title: `${span}: no data` };
    ok += b.ok;
    total += b.total;
    withData += 1;
    const latency = typeof b.latency_ms === 'number' ? `, ${b.latency_ms} ms average` : '';
    return { level, title: `${span}: ${b.ok} of ${b.total} probes up (${b.availability ?? percent(b.ok, b.total)} %)${latency}` };
  });
  const recent = [cells[cells.length - 1]!, cells[cells.length - 2]!].find((c) => c.level !== 'nodata');
  let level: Level;
  let stateText: string;
  if (withData === 0) {
    level = 'nodata';
    stateText = 'No data';
  } else if (!recent) {
    level = 'degraded';
    let lastIndex = 0;
    cells.forEach((c, i) => {
      if (c.level !== 'nodata') lastIndex = i;
    });
    stateText = `Not reporting since ${hhmm(starts[lastIndex]! + SERVICE_BUCKET_SECONDS)} UTC`;
  } else {
    level = recent.level;
    stateText = level === 'up' ? 'Operational' : level === 'down' ? 'Down' : 'Degraded';
  }
  const note =
    withData === 0
      ? 'No data in the last 24 hours: this component was not probed.'
      : `${escapeHtml(percent(ok, total))} % of ${count(total)} probes up · data for ${withData} of ${starts.length} fifteen-minute intervals`;
  const html = componentHtml(name, level, stateText, barRow(cells, `${displayName(name)}: availability per 15 minutes over the last 24 hours`), axis('24 h ago', 'now'), note);
  const failing = cells.filter((c) => c.level === 'degraded' || c.level === 'down').length;
  const earlier = failing > 0 ? `failed probes in ${failing} of ${withData} intervals` : null;
  return { key: name, level, stateText, empty: withData === 0, earlier, html };
}

function infrastructureComponent(name: string, buckets: Record<string, { latency_ms?: number }>, nowSeconds: number): ComponentView {
  const starts = bucketStarts(nowSeconds, INFRASTRUCTURE_BUCKET_SECONDS);
  let passed = 0;
  let lastPassed: number | null = null;
  const cells = starts.map((start) => {
    const b = buckets[String(start)];
    const span = `${dateTime(start)}–${hhmm(start + INFRASTRUCTURE_BUCKET_SECONDS)} UTC`;
    if (!b) return { level: 'nodata' as Level, title: `${span}: no data (the check failed or did not run)` };
    passed += 1;
    lastPassed = start;
    const latency = typeof b.latency_ms === 'number' ? ` in ${b.latency_ms} ms` : '';
    return { level: 'up' as Level, title: `${span}: check passed${latency}` };
  });
  const recentPassed = cells[cells.length - 1]!.level === 'up' || cells[cells.length - 2]!.level === 'up';
  let level: Level;
  let stateText: string;
  if (passed === 0) {
    level = 'nodata';
    stateText = 'No data';
  } else if (recentPassed) {
    level = 'up';
    stateText = 'Check passing';
  } else {
    level = 'degraded';
    stateText = `No passed check since ${hhmm(lastPassed! + INFRASTRUCTURE_BUCKET_SECONDS)} UTC`;
  }
  const note =
    passed === 0
      ? 'No data in the last 24 hours: no check of this component passed or ran.'
      : `Passed in ${passed} of ${starts.length} five-minute intervals; the other ${starts.length - passed} have no passed check (failed or not run).`;
  const html = componentHtml(name, level, stateText, barRow(cells, `${displayName(name)}: health check per 5 minutes over the last 24 hours`), axis('24 h ago', 'now'), note);
  // Gaps between the first and the last passed check: the check failed or was not run while the service was up.
  const firstIndex = cells.findIndex((c) => c.level === 'up');
  const lastIndex = cells.map((c) => c.level).lastIndexOf('up');
  const gaps = firstIndex < 0 ? 0 : cells.slice(firstIndex, lastIndex + 1).filter((c) => c.level === 'nodata').length;
  const earlier = gaps > 0 ? `no passed check in ${gaps} intervals` : null;
  return { key: name, level, stateText, empty: passed === 0, earlier, html };
}

function banner(views: ComponentView[], nowSeconds: number): string {
  const withData = views.filter((v) => !v.empty);
  const names = (vs: ComponentView[]) => vs.map((v) => displayName(v.key)).join(', ');
  const noData = views.filter((v) => v.empty);
  const noDataLine = noData.length > 0 ? `<p>No data for: ${escapeHtml(names(noData))}.</p>` : '';
  const earlier = withData.filter((v) => v.earlier && v.level === 'up');
  const earlierLine =
    earlier.length > 0 ? `<p>Earlier in the last 24 hours: ${escapeHtml(earlier.map((v) => `${displayName(v.key)}, ${v.earlier}`).join('; '))}.</p>` : '';
  if (withData.length === 0) {
    return `<div class="banner nodata" role="status">No status data recorded in the last 24 hours<p>Nothing has been probed or checked yet, so there is nothing to report; this is not a sign that the service is up.</p></div>`;
  }
  const down = withData.filter((v) => v.level === 'down');
  const degraded = withData.filter((v) => v.level === 'degraded');
  if (down.length > 0) {
    return `<div class="banner down" role="status">Outage: ${escapeHtml(names(down))}${degraded.length ? `<p>Also degraded: ${escapeHtml(names(degraded))}.</p>` : ''}${earlierLine}${noDataLine}</div>`;
  }
  if (degraded.length > 0) {
    return `<div class="banner degraded" role="status">Degraded: ${escapeHtml(degraded.map((v) => `${displayName(v.key)} (${v.stateText.charAt(0).toLowerCase()}${v.stateText.slice(1)})`).join(', '))}${earlierLine}${noDataLine}</div>`;
  }
  return `<div class="banner up" role="status">All monitored components operational<p>Based on the checks and probes recorded up to ${escapeHtml(hhmm(nowSeconds))} UTC.</p>${earlierLine}${noDataLine}</div>`;
}

function scoreLevel(score: number): Level {
  if (score >= 99) return 'up';
  if (score >= 90) return 'degraded';
  return 'down';
}

const AREA_NAMES: Record<string, string> = { service: 'Service', infrastructure: 'Infrastructure', datasource: 'Data sources' };

function summaryTable(summary: StatusData['summary'], nowSeconds: number): string {
  const end = floorTo(nowSeconds, HOUR);
  const hours = Array.from({ length: 24 }, (_, i) => end - (24 - i) * HOUR);
  const areas = [...new Set(['service', 'infrastructure', 'datasource', ...Object.keys(summary)])];
  const head = hours.map((h) => `<th scope="col" title="${escapeHtml(dateTime(h))} UTC">${escapeHtml(hhmm(h).slice(0, 2))}</th>`).join('');
  const rows = areas
    .map((area) => {
      const scores = summary[area] ?? {};
      const values: number[] = [];
      const cells = hours
        .map((h) => {
          const raw = scores[String(h)];
          const hourText = `${dateTime(h)}–${hhmm(h + HOUR)} UTC`;
          if (raw === undefined) return `<td class="cell nodata" title="${escapeHtml(hourText)}: no score (no data)">–</td>`;
          const value = Number(raw);
          values.push(value);
          return `<td class="cell ${scoreLevel(value)}" title="${escapeHtml(hourText)}: ${escapeHtml(raw)}">${escapeHtml(Number.isFinite(value) ? value.toFixed(value >= 99.95 ? 0 : 1) : raw)}</td>`;
        })
        .join('');
      const mean =
        values.length > 0
          ? `<td class="mean num" title="mean of the ${values.length} hours with a score">${(values.reduce((a, b) => a + b, 0) / values.length).toFixed(2)}</td>`
          : '<td class="mean num muted" title="no hour has a score">no data</td>';
      return `<tr data-area="${escapeHtml(area)}"><th scope="row" class="area">${escapeHtml(AREA_NAMES[area] ?? area)}</th>${cells}${mean}</tr>`;
    })
    .join('\n');
  return `<div class="scores"><table>
<caption class="small muted">Scores from 0 to 100 per completed UTC hour (hover a cell for the exact value); “–” means no data that hour, not 0.</caption>
<thead><tr><th scope="col" class="area">Area</th>${head}<th scope="col" class="mean num">Mean</th></tr></thead>
<tbody>
${rows}
</tbody></table></div>`;
}

/** Hourly bar chart of the quotes collected across all markets (inline SVG). */
function activityChart(hours: number[], totals: Array<number | null>): string {
  const width = 1000;
  const height = 200;
  const left = 56;
  const bottom = 24;
  const top = 10;
  const plotW = width - left - 8;
  const plotH = height - top - bottom;
  const max = Math.max(1, ...totals.map((t) => t ?? 0));
  const slot = plotW / hours.length;
  const bars = hours
    .map((h, i) => {
      const t = totals[i];
      const x = left + i * slot + 1.5;
      const label = `${dateTime(h)}–${hhmm(h + HOUR)} UTC`;
      if (t === null || t === undefined) {
        return `<rect class="nodata-mark" x="${x.toFixed(1)}" y="${top + plotH - 3}" width="${(slot - 3).toFixed(1)}" height="3"><title>${escapeHtml(label)}: no data</title></rect>`;
      }
      const hgt = Math.max(1, (t / max) * plotH);
      return `<rect class="bar" x="${x.toFixed(1)}" y="${(top + plotH - hgt).toFixed(1)}" width="${(slot - 3).toFixed(1)}" height="${hgt.toFixed(1)}"><title>${escapeHtml(label)}: ${count(t)} quotes</title></rect>`;
    })
    .join('');
  const grid = [0, 0.5, 1]
    .map((f) => {
      const y = top + plotH - f * plotH;
      return `<line class="gridline" x1="${left}" x2="${width - 8}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}"/><text x="${left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end">${count(Math.round(f * max))}</text>`;
    })
    .join('');
  const labels = hours
    .map((h, i) => (i % 3 === 0 ? `<text x="${(left + i * slot + slot / 2).toFixed(1)}" y="${height - 6}" text-anchor="middle">${escapeHtml(hhmm(h))}</text>` : ''))
    .join('');
  return `<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="Quotes collected per hour across all markets, last 24 hours">${grid}${bars}${labels}</svg>`;
}

/** A small per-market bar row: heights relative to the market's own busiest hour. */
function sparkline(hours: number[], counts: Record<string, number>, market: string): string {
  const w = 10;
  const values = hours.map((h) => counts[String(h)]);
  const max = Math.max(1, ...values.map((v) => v ?? 0));
  const rects = values
    .map((v, i) => {
      const label = `${dateTime(hours[i]!)} UTC`;
      if (v === undefined) return `<rect class="nodata-mark" x="${i * w}" y="24" width="${w - 2}" height="2"><title>${escapeHtml(label)}: no data</title></rect>`;
      const hgt = Math.max(2, (v / max) * 26);
      return `<rect class="bar" x="${i * w}" y="${(26 - hgt).toFixed(1)}" width="${w - 2}" height="${hgt.toFixed(1)}"><title>${escapeHtml(label)}: ${count(v)} quotes</title></rect>`;
    })
    .join('');
  return `<svg class="spark" viewBox="0 0 ${hours.length * w} 26" preserveAspectRatio="none" role="img" aria-label="${escapeHtml(market)}: quotes per hour">${rects}</svg>`;
}

function datasourceSection(datasource: StatusData['datasource'], nowSeconds: number): string {
  const { result, realtime } = datasource;
  const first = floorTo(nowSeconds - DAY, HOUR);
  const last = floorTo(nowSeconds, HOUR);
  const hours: number[] = [];
  for (let h = first; h <= last; h += HOUR) hours.push(h);
  const markets = [...new Set([...Object.keys(result), ...Object.keys(realtime)])];
  if (markets.length === 0) {
    return `<p class="muted" data-empty="datasource">No quotes were collected in the last 24 hours (no data).</p>`;
  }
  const sum = (o: Record<string, number> | undefined) => Object.values(o ?? {}).reduce((a, b) => a + b, 0);
  markets.sort((a, b) => sum(result[b]) - sum(result[a]) || (a < b ? -1 : a > b ? 1 : 0));
  const totals = hours.map((h) => {
    let any = false;
    let total = 0;
    for (const m of markets) {
      const v = result[m]?.[String(h)];
      if (v !== undefined) {
        any = true;
        total += v;
      }
    }
    return any ? total : null;
  });
  const rows = markets
    .map((m) => {
      const counts = result[m] ?? {};
      const keys = Object.keys(counts).map(Number);
      const lastSeen = keys.length > 0 ? `${hhmm(Math.max(...keys))} UTC hour` : '<span class="muted">—</span>';
      const rt = realtime[m];
      const recent = rt && Object.keys(rt).length > 0 ? count(sum(rt)) : '<span class="muted">no data</span>';
      return `<tr data-market="${escapeHtml(m)}"><td><code>${escapeHtml(m)}</code></td><td>${sparkline(hours, counts, m)}</td><td class="num">${keys.length > 0 ? count(sum(counts)) : '<span class="muted">no data</span>'}</td><td class="num">${recent}</td><td class="num">${lastSeen}</td></tr>`;
    })
    .join('\n');
  return `${activityChart(hours, totals)}
${axis(`${dateTime(first)} UTC`, `${hhmm(last)} UTC (hour in progress)`)}
<ul class="legend"><li><span class="swatch activity"></span>quotes collected in the hour</li><li><span class="swatch nodata"></span>no data (nothing collected)</li></ul>
<table class="markets">
<thead><tr><th>Market</th><th>Per hour, last 24 h</th><th class="num">Quotes, 24 h</th><th class="num">Last few minutes</th><th class="num">Latest hour</th></tr></thead>
<tbody>
${rows}
</tbody></table>`;
}

/**
 * Each market's newest quote: when it was last confirmed, its age, and whether that is stale. `undefined`: not
 * shown (no database); null: the read failed (said so, the rest of the page stands).
 */
function freshnessSection(markets: readonly MarketFreshness[] | null | undefined): string {
  if (markets === undefined) return '';
  const head = `<h3 id="freshness">Freshness per market</h3>
<p class="muted small">The newest quote of each market (any item, side or provider): stale when its source has not confirmed it for more than 3 of its collection intervals (24 hours where no collector reports the market).</p>`;
  if (markets === null) return `${head}\n<p class="muted" data-empty="freshness">The quotes' freshness could not be read just now (no data).</p>`;
  if (markets.length === 0) return `${head}\n<p class="muted" data-empty="freshness">No market has quotes yet (no data).</p>`;
  const stale = markets.filter((m) => m.stale);
  const summary =
    stale.length === 0
      ? `<p data-stale-markets="">No market is stale.</p>`
      : `<p data-stale-markets="${escapeHtml(stale.map((m) => m.marketCode).join(','))}"><strong>${stale.length} of ${markets.length} markets stale:</strong> ${escapeHtml(stale.map((m) => m.marketCode).join(', '))}.</p>`;
  const rows = markets
    .map(
      (m) =>
        `<tr data-market="${escapeHtml(m.marketCode)}" data-stale="${m.stale}"${m.stale ? ' class="stale"' : ''}><td><code>${escapeHtml(m.marketCode)}</code></td><td class="small">${escapeHtml(m.providerCode)}</td><td class="num">${escapeHtml(dateTime(Math.floor(m.freshAt.getTime() / 1000)))}</td><td class="num" data-age-seconds="${m.ageSeconds}">${escapeHtml(formatAge(m.ageSeconds))}</td><td class="num">${escapeHtml(formatAge(m.staleAfterSeconds))}</td><td>${m.stale ? '<span class="state degraded">stale</span>' : '<span class="state up">fresh</span>'}</td></tr>`,
    )
    .join('\n');
  return `${head}
${summary}
<table class="freshness">
<thead><tr><th>Market</th><th>Provider</th><th class="num">Newest fresh_at (UTC)</th><th class="num">Age</th><th class="num">Stale after</th><th>Stale</th></tr></thead>
<tbody>
${rows}
</tbody></table>`;
}

function distributionSection(distribution: StatusData['distribution']): string {
  const entries = Object.entries(distribution);
  if (entries.length === 0) return '';
  const rows = entries
    .map(([where, e]) => `<tr><td>${escapeHtml(where)}</td><td class="num">${count(e.node_count)}</td><td class="num">${count(e.datacenter_count)}</td></tr>`)
    .join('\n');
  const nodes = entries.reduce((a, [, e]) => a + e.node_count, 0);
  const dcs = entries.reduce((a, [, e]) => a + e.datacenter_count, 0);
  return `<h2 id="distribution">Proxy distribution</h2>
<p class="muted small">Where the price collectors' proxy nodes run now (latitude, longitude).</p>
<table class="distribution">
<thead><tr><th>Location</th><th class="num">Proxy nodes</th><th class="num">Datacenters</th></tr></thead>
<tbody>
${rows}
</tbody>
<tfoot><tr><th>Total</th><th class="num">${count(nodes)}</th><th class="num">${count(dcs)}</th></tr></tfoot>
</table>`;
}

const LEGEND = `<ul class="legend" aria-label="Legend">
<li><span class="swatch up"></span>up / check passed</li>
<li><span class="swatch degraded"></span>some probes failed</li>
<li><span class="swatch down"></span>all probes failed</li>
<li><span class="swatch nodata"></span>no data</li>
</ul>`;

/** The page shown when the status history cannot be read (served with HTTP 503). */
function unavailable(nowSeconds: number): string {
  return renderPage({
    title: 'Status data unavailable',
    path: '/status/page',
    head: '<meta http-equiv="refresh" content="30">\n',
    body: `<div class="unavailable" role="alert">
<h1>Status data unavailable</h1>
<p>The recorded status history could not be read just now (${escapeHtml(dateTime(nowSeconds))} UTC), so this page cannot say
how the service is doing. This is not a report that the service is up or down.</p>
<p>The page reloads itself every 30 seconds. <a href="/health">/health</a> answers whether this server is running.</p>
</div>`,
  });
}

/**
 * The status page for `status` (the data `GET /status` returns) as of `now`; `null` (the history
 * could not be read) gives the "status data unavailable" page, which the caller serves with 503.
 * `freshness`: each market's newest quote (the freshness table), null when it could not be read, undefined to
 * leave the table out.
 */
export function renderStatusPage(status: StatusData | null, now: Date, freshness?: readonly MarketFreshness[] | null): string {
  const nowSeconds = Math.floor(now.getTime() / 1000);
  if (!status) return unavailable(nowSeconds);
  const serviceKeys = [...new Set([...SERVICE_COMPONENTS, ...Object.keys(status.service)])];
  const service = serviceKeys.map((k) => serviceComponent(k, status.service[k] ?? {}, nowSeconds));
  const infrastructure = Object.keys(status.infrastructure).map((k) => infrastructureComponent(k, status.infrastructure[k] ?? {}, nowSeconds));
  const body = `
<h1>Service status</h1>
<p class="muted">As of ${escapeHtml(dateTime(nowSeconds))} UTC · the last 24 hours · all times UTC · this page reloads every minute ·
machine-readable at <a href="/status">/status</a></p>
${banner([...service, ...infrastructure], nowSeconds)}
${LEGEND}
<h2 id="service">Service components <span class="muted small">15-minute intervals</span></h2>
<div class="panel">
${service.map((v) => v.html).join('\n')}
</div>
<h2 id="infrastructure">Infrastructure <span class="muted small">5-minute health checks</span></h2>
${
  infrastructure.length > 0
    ? `<div class="panel">\n${infrastructure.map((v) => v.html).join('\n')}\n</div>`
    : '<p class="muted">No infrastructure components are checked here (no data).</p>'
}
<h2 id="summary">Hourly scores</h2>
${summaryTable(status.summary, nowSeconds)}
<h2 id="datasource">Price collection</h2>
<p class="muted small">Quotes received per market and hour (the last hour is still in progress); “last few minutes” counts the most recent minutes.</p>
${datasourceSection(status.datasource, nowSeconds)}
${freshnessSection(freshness)}
${distributionSection(status.distribution)}
`;
  return renderPage({
    title: 'Service status',
    path: '/status/page',
    head: '<meta http-equiv="refresh" content="60">\n',
    body,
    description: 'Quotegate service status: availability, infrastructure checks and price collection over the last 24 hours.',
  });
}
