/**
 * The valuation page `/valuation` (issue: a valuation that earns trust, point 1): the CSCP valuation's
 * published accuracy for people, server-rendered from the same series as GET /valuation/accuracy
 * (valuation/accuracy.ts), readable without JavaScript: a chart of the median error per day (all
 * targets, asks, bids), a chart of the calibration share per day (all, one-sided and two-sided items) against
 * the 68 % the uncertainty promises, the latest day by segment, and every day's overall figures. A form
 * chooses the range (`from`, `to`: the API's rules, a 422 page otherwise); without one the page opens on the
 * latest scored days (the 90 days ending at the last scored day), and a range without a scored day says which
 * days are scored (issue 44, point 7). Targets scored against their side's only input are their own labelled rows,
 * in no other figure (valuation/accuracy.ts).
 */
import type { Database } from '../db/client.js';
import { ServiceError } from '../lib/errors.js';
import { accuracyRange, DEFAULT_ACCURACY_DAYS, readValuationAccuracy, scoredDayBounds, type AccuracyDay, type AccuracySegment } from '../valuation/accuracy.js';
import { DAY_MESSAGE, day as dayRule } from '../validation/params.js';
import { escapeHtml, htmlResponse, renderPage } from './layout.js';

/** One sigma: the share inside e^(+-u) the uncertainty promises (as `calibration_target` of the API). */
const PROMISED = 0.6827;

const SEGMENT_NAMES: Record<string, string> = {
  'all/all': 'All targets',
  'target/ask': 'Ask targets',
  'target/bid': 'Bid targets',
  'target/ask_only_input': 'Ask targets scored against their only input (left out of the other rows)',
  'target/bid_only_input': 'Bid targets scored against their only input (left out of the other rows)',
  'sides/one_sided': 'One-sided items (asks only)',
  'sides/two_sided': 'Two-sided items',
  'band/under_1': 'Mid under 1 CNY',
  'band/1_10': 'Mid 1-10 CNY',
  'band/10_100': 'Mid 10-100 CNY',
  'band/over_100': 'Mid over 100 CNY',
};
const segmentName = (s: Pick<AccuracySegment, 'segment' | 'value'>) => SEGMENT_NAMES[`${s.segment}/${s.value}`] ?? (s.segment === 'type' ? `Item type: ${s.value.replace('_', ' ')}` : `${s.segment}: ${s.value}`);
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const err = (x: number) => x.toFixed(4);

interface Line {
  label: string;
  color: string;
  dashed?: boolean;
  /** One value per day of the chart, or null where the day has no such segment. */
  values: (number | null)[];
}

/** A line chart of one value per scored day (evenly spaced: a day without a score is no point), y from 0 to `yMax`. */
function lineChart(title: string, dates: string[], lines: Line[], yMax: number, format: (y: number) => string): string {
  const width = 760;
  const height = 260;
  const left = 56;
  const right = 16;
  const top = 16;
  const bottom = 40;
  const x = (i: number) => left + (dates.length <= 1 ? (width - left - right) / 2 : (i * (width - left - right)) / (dates.length - 1));
  const y = (v: number) => top + (1 - Math.min(v, yMax) / yMax) * (height - top - bottom);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * yMax);
  const grid = ticks
    .map((v) => `<line x1="${left}" x2="${width - right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#d0d7de" stroke-width="1"/><text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" font-size="11" fill="#57606a">${escapeHtml(format(v))}</text>`)
    .join('');
  const every = Math.max(1, Math.ceil(dates.length / 8));
  const xTicks = dates
    .map((d, i) => {
      if (i % every !== 0 && i !== dates.length - 1) return '';
      // The last label ends at its point, so it stays inside the chart.
      const anchor = i === dates.length - 1 && dates.length > 1 ? 'end' : 'middle';
      return `<text x="${x(i).toFixed(1)}" y="${height - bottom + 16}" text-anchor="${anchor}" font-size="11" fill="#57606a">${escapeHtml(d)}</text>`;
    })
    .join('');
  const paths = lines
    .map((l) => {
      let d = '';
      let pen = false;
      l.values.forEach((v, i) => {
        if (v === null) {
          pen = false;
          return;
        }
        d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
        pen = true;
      });
      const dots = l.values.map((v, i) => (v === null ? '' : `<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3" fill="${l.color}"><title>${escapeHtml(`${l.label}, ${dates[i]}: ${format(v)}`)}</title></circle>`)).join('');
      return `<path d="${d}" fill="none" stroke="${l.color}" stroke-width="2"${l.dashed ? ' stroke-dasharray="6 4"' : ''}/>${dots}`;
    })
    .join('');
  const legend = lines
    .map((l) => `<li><svg width="28" height="10" viewBox="0 0 28 10" aria-hidden="true"><line x1="1" y1="5" x2="27" y2="5" stroke="${l.color}" stroke-width="2"${l.dashed ? ' stroke-dasharray="6 4"' : ''}/></svg> ${escapeHtml(l.label)}</li>`)
    .join('');
  return `<figure class="chart"><svg viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="${escapeHtml(title)}">${grid}<line x1="${left}" x2="${left}" y1="${top}" y2="${height - bottom}" stroke="#57606a"/>${xTicks}${paths}</svg><figcaption>${escapeHtml(title)}<ul class="legend">${legend}</ul></figcaption></figure>`;
}

/**
 * The page for a range: charts, the latest day by segment, and every day's overall figures. `scored` (the first and
 * last scored days, null when none is) makes the hint of a range without a scored day.
 */
function renderValuationPage(days: AccuracyDay[], range: { from: string; to: string }, scored: { first: string; last: string } | null = null): string {
  const form = `<form class="range" method="get" action="/valuation">
<label>From <input type="date" name="from" value="${escapeHtml(range.from)}"></label>
<label>To <input type="date" name="to" value="${escapeHtml(range.to)}"></label>
<button type="submit">Show</button></form>`;
  const intro = `<h1>How accurate is the CSCP valuation?</h1>
<p class="lead">Every day, once it has passed, the day's CSCP valuations are scored against what the markets then showed: each
market's close of that day, on the same cash scale (fees included). The error of a target is |ln(target / valuation)|
(0.05 is about 5 %); the calibration is the share of targets inside valuation × e<sup>±u</sup>, which the published
uncertainty u promises for about ${pct(PROMISED)} of them (ask and bid targets: inside that side's amount × e<sup>±u</sup> with the
side's own uncertainty, GraphQL <code>askUncertainty</code> and <code>bidUncertainty</code>). A side valued from one market only is no
test of the consensus against that market's own close (the score is just that market's move over a day): such targets are
shown on their own rows, labelled “scored against their only input”, and left out of every other figure. Each scored day also calibrates the
uncertainties and weighs the markets of the days after it. The same figures: <a href="/valuation/accuracy">GET /valuation/accuracy</a>
and GraphQL <code>valuationAccuracy</code>; the method is in the repository's docs/valuation.md, sections 8, 10 and 11.</p>
${form}`;
  if (days.length === 0) {
    const hint =
      scored === null
        ? 'No day has been scored yet: a valuation day is scored once it has passed, against the closes of that day.'
        : `Scored days run from ${escapeHtml(scored.first)} to ${escapeHtml(scored.last)}: <a href="/valuation">show the latest ${DEFAULT_ACCURACY_DAYS} days</a> or choose a range within them.`;
    return renderPage({
      title: 'Valuation accuracy',
      path: '/valuation',
      body: `${intro}<p class="empty">No valuation day in ${escapeHtml(range.from)} – ${escapeHtml(range.to)} has been scored yet.</p><p class="hint">${hint}</p>`,
      description: 'How accurate the CSCP consensus valuation of CS2 items is, day by day.',
    });
  }
  const dates = days.map((d) => d.date);
  const series = (key: string, pick: (s: AccuracySegment) => number) => days.map((d) => {
    const s = d.segments.find((x) => `${x.segment}/${x.value}` === key);
    return s ? pick(s) : null;
  });
  const maxError = Math.max(0.02, ...days.flatMap((d) => d.segments.filter((s) => s.segment !== 'type' && s.segment !== 'band').map((s) => s.medianError)));
  const errorChart = lineChart(
    'Median error per day',
    dates,
    [
      { label: 'All targets', color: '#0969da', values: series('all/all', (s) => s.medianError) },
      { label: 'Ask targets', color: '#bf3989', values: series('target/ask', (s) => s.medianError) },
      { label: 'Bid targets', color: '#1a7f37', values: series('target/bid', (s) => s.medianError) },
    ],
    Math.ceil(maxError * 1.2 * 100) / 100,
    (v) => v.toFixed(3),
  );
  const calibrationChart = lineChart(
    'Calibration per day: share of targets inside valuation × e^(±u)',
    dates,
    [
      { label: 'All targets', color: '#0969da', values: series('all/all', (s) => s.calibration) },
      { label: 'One-sided items', color: '#bc4c00', values: series('sides/one_sided', (s) => s.calibration) },
      { label: 'Two-sided items', color: '#8250df', values: series('sides/two_sided', (s) => s.calibration) },
      { label: `Promised: ${pct(PROMISED)}`, color: '#57606a', dashed: true, values: dates.map(() => PROMISED) },
    ],
    1,
    (v) => `${Math.round(v * 100)} %`,
  );
  const latest = days[days.length - 1]!;
  const segmentRows = latest.segments
    .map((s) => `<tr><th scope="row">${escapeHtml(segmentName(s))}</th><td class="num">${s.items}</td><td class="num">${s.targets}</td><td class="num">${err(s.medianError)}</td><td class="num">${err(s.p90Error)}</td><td class="num">${pct(s.calibration)}</td></tr>`)
    .join('');
  const dayRows = [...days]
    .reverse()
    .map((d) => {
      const all = d.segments.find((s) => s.segment === 'all');
      return `<tr><th scope="row">${escapeHtml(d.date)}</th><td>${escapeHtml(d.source)}</td><td class="num">${all?.items ?? 0}</td><td class="num">${all?.targets ?? 0}</td><td class="num">${all ? err(all.medianError) : '—'}</td><td class="num">${all ? err(all.p90Error) : '—'}</td><td class="num">${all ? pct(all.calibration) : '—'}</td></tr>`;
    })
    .join('');
  const body = `${intro}
<h2>Over time</h2>
${errorChart}
${calibrationChart}
<h2 id="latest">${escapeHtml(latest.date)} by segment</h2>
<p>${latest.source === 'published' ? 'The valuations the service published that day.' : 'A day before the service published valuations: valued as the job would have, from the closes before it only.'}</p>
<table class="data"><thead><tr><th scope="col">Segment</th><th scope="col">Items</th><th scope="col">Targets</th><th scope="col">Median error</th><th scope="col">90th percentile</th><th scope="col">Calibration</th></tr></thead><tbody>${segmentRows}</tbody></table>
<h2 id="days">Every day</h2>
<table class="data"><thead><tr><th scope="col">Day</th><th scope="col">Valuations</th><th scope="col">Items</th><th scope="col">Targets</th><th scope="col">Median error</th><th scope="col">90th percentile</th><th scope="col">Calibration</th></tr></thead><tbody>${dayRows}</tbody></table>`;
  return renderPage({ title: 'Valuation accuracy', path: '/valuation', body, description: 'How accurate the CSCP consensus valuation of CS2 items is, day by day.' });
}

/**
 * The `/valuation` page handler: reads `from`/`to` (the API's rules; a 422 page names the problem), the stored
 * series, and renders; 503 with a plain page when the series cannot be read.
 */
export function valuationPageHandler(deps: { db: Pick<Database, 'query'>; clock: () => Date }): (request: Request) => Promise<Response> {
  return async (request) => {
    const q = new URL(request.url).searchParams;
    const problems: string[] = [];
    const read = (name: string): string | null => {
      const v = q.get(name);
      if (v === null || v === '') return null;
      if (!dayRule.safeParse(v).success) problems.push(`${name}: ${DAY_MESSAGE} (given: “${v.length > 40 ? `${v.slice(0, 40)}…` : v}”)`.replaceAll('\u0000', ''));
      return v;
    };
    const from = read('from');
    const to = read('to');
    let range: { from: string; to: string } | null = null;
    let scored: { first: string; last: string } | null = null;
    if (problems.length === 0) {
      try {
        scored = await scoredDayBounds(deps.db);
      } catch {
        return unavailable(request);
      }
      try {
        range = accuracyRange(from, to, deps.clock(), scored?.last);
      } catch (e) {
        if (!(e instanceof ServiceError)) throw e;
        problems.push(`from: ${(e.details as { errors?: { message: string }[] })?.errors?.[0]?.message ?? e.message}`);
      }
    }
    if (!range) {
      const body = `<h1>Invalid range</h1><ul>${problems.map((p) => `<li>${escapeHtml(p)}</li>`).join('')}</ul><p><a href="/valuation">The latest scored days</a></p>`;
      return htmlResponse(renderPage({ title: 'Invalid range', path: '/valuation', body }), { status: 422, request });
    }
    let days: AccuracyDay[];
    try {
      days = await readValuationAccuracy(deps.db, range.from, range.to);
    } catch {
      return unavailable(request);
    }
    return htmlResponse(renderValuationPage(days, range, scored), { request });
  };
}

/** The 503 page when the accuracy series cannot be read. */
function unavailable(request: Request): Response {
  return htmlResponse(renderPage({ title: 'Accuracy unavailable', path: '/valuation', body: '<h1>Accuracy data unavailable</h1><p>Try again in a minute.</p>' }), {
    status: 503,
    request,
    headers: { 'Retry-After': '30' },
  });
}
