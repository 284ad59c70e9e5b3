/**
 * The item pages' HTML: the item page (quotes, CSCP valuation, the history chart as inline SVG with its legend,
 * the candle tables), the search page, and the 404, 422 and 503 pages. Pure functions of what `data.ts` and the
 * services read (an `ItemView`); the chart's arithmetic is `chart.ts`'s. Money stays decimal.js to the text; only
 * the chart's pixel coordinates are JS numbers. The pages' inline stylesheet is ITEM_CSS (src/pages/styles.ts),
 * allowed by its hash in ITEM_PAGE_CSP.
 */
import crypto from 'node:crypto';
import { convertAmount } from '../../fees/applied.js';
import { Money, formatDecimal, toMoney } from '../../lib/money.js';
import { byCodePoint } from '../../lib/order.js';
import { addDays, formatDate } from '../../lib/time.js';
import { ageSeconds, formatAge, isStale, staleAfterSeconds } from '../../collectors/freshness.js';
import { bucketOf, type CscpPoint, type HistoryInterval, type HistorySeriesOut, type ItemHistory } from '../../history/candles.js';
import { CS2_APP_ID } from '../../collectors/importers.js';
import { valuationBand, VALUATION_CURRENCY, VALUATION_MARKET, type MarketQuote } from '../../quotes/quotes.js';
import { escapeHtml, PAGE_CSP, renderPage } from '../layout.js';
import { ITEM_CSS } from '../styles.js';
import { bandPath, CHART_BOX, chartScale, gapDays, linePath, px, timeTicks, type BandPoint, type Point } from './chart.js';
import { SEARCH_LIMIT, type RateTable } from './data.js';
import { DEFAULT_CURRENCY, INTERVALS, MAX_QUERY_LENGTH, type QueryProblem, type ResolvedRange } from './params.js';

/** Candles per series listed in the "all candles" tables (the newest ones). */
const CANDLE_ROWS = 60;

const STYLE_HASH = `'sha256-${crypto.createHash('sha256').update(ITEM_CSS, 'utf8').digest('base64')}'`;
/** The pages' CSP plus the item pages' inline stylesheet (ITEM_CSS, by hash). */
export const ITEM_PAGE_CSP = PAGE_CSP.replace("style-src 'self'", `style-src 'self' ${STYLE_HASH}`);
const HEAD = `<style>${ITEM_CSS}</style>\n`;

/** The URL path of an item's page. */
export function itemPath(marketHashName: string): string {
  return `/items/${encodeURIComponent(marketHashName)}`;
}

// ---------------------------------------------------------------------------------------------------------
// Formatting

/** `YYYY-MM-DD HH:MM` UTC. */
function dateTime(d: Date): string {
  const iso = d.toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
}

/**
 * An amount for reading (converted amounts, chart labels): two decimals (half-even) from 1 up, four
 * significant digits below 1 (a crypto currency or a cheap sticker), never scientific notation.
 */
export function displayAmount(value: Money): string {
  if (value.isZero()) return '0.00';
  if (value.abs().gte(1)) return value.toFixed(2);
  return formatDecimal(value.toSignificantDigits(4));
}

/** A rate for reading: six significant digits. */
function displayRate(value: Money): string {
  return formatDecimal(value.toSignificantDigits(6));
}

const SERIES_NAMES: Record<HistorySeriesOut['series'], string> = { ask: 'ask', bid: 'bid', listing_minimum: 'listing minimum', sales: 'daily sales (median)' };

/** `amount` in `from` as the chosen currency at official rates, or null when either has no rate. */
function convert(table: RateTable, amount: Money, from: string, to: string): Money | null {
  if (!table.rates.has(from) || !table.rates.has(to)) return null;
  return convertAmount(table, amount, from, to).amount;
}

// ---------------------------------------------------------------------------------------------------------
// The chart

/** Line colours per market (by the market's position in the chart), dash patterns per series kind. */
const PALETTE = ['#2356c5', '#d2433f', '#2e9d63', '#c77c02', '#8e44ad', '#0f8a9d', '#c2185b', '#6d4c41', '#5c6bc0', '#7a8c00'];
const DASH: Record<HistorySeriesOut['series'], string | null> = { ask: null, bid: '7 4', listing_minimum: '12 3', sales: '2 3' };
const WIDTH: Record<HistorySeriesOut['series'], number> = { ask: 2, bid: 2, listing_minimum: 1.6, sales: 2.2 };
const CSCP_COLOR = '#5b6472';

/** A series as the chart draws it: its points converted into the chart currency. */
interface ChartSeries {
  series: HistorySeriesOut;
  color: string;
  points: Point[];
}

function strokeAttrs(s: HistorySeriesOut, color: string): string {
  const dash = DASH[s.series];
  return `stroke="${color}" stroke-width="${WIDTH[s.series]}"${dash ? ` stroke-dasharray="${dash}"` : ''}`;
}

/** The chart's legend sample of one series (a short line in its colour and dash). */
function lineSample(s: HistorySeriesOut, color: string): string {
  return `<svg width="28" height="10" viewBox="0 0 28 10" aria-hidden="true"><line x1="1" y1="5" x2="27" y2="5" fill="none" stroke-linecap="round" ${strokeAttrs(s, color)}/></svg>`;
}

const CSCP_SAMPLE = `<svg width="28" height="12" viewBox="0 0 28 12" aria-hidden="true"><rect x="1" y="1" width="26" height="10" fill="${CSCP_COLOR}" fill-opacity="0.16" stroke="${CSCP_COLOR}" stroke-opacity="0.5"/><line x1="1" y1="6" x2="27" y2="6" stroke="${CSCP_COLOR}" stroke-width="1.5" stroke-dasharray="4 3"/></svg>`;

/**
 * The history chart as inline SVG: one `<path class="series">` per series with prices (close of each candle
 * in `currency`; a gap longer than gapDays breaks the line, a lone point is a dot), the CSCP band as a
 * shaded `<path class="cscp-band">` with its mid as `<path class="cscp-mid">`, gridlines, labelled axes.
 * `domain` is the x range (bucket start days). Returns '' when nothing can be drawn.
 */
function historyChart(series: ChartSeries[], band: BandPoint[], domain: { from: string; to: string }, interval: HistoryInterval, currency: string, label: string): string {
  const values = [...series.flatMap((s) => s.points.map((p) => p.value)), ...band.flatMap((b) => [b.low, b.high])];
  if (values.length === 0) return '';
  const { width, height, left, right, top } = CHART_BOX;
  const scale = chartScale(values, domain);
  const { plotW, plotH, y, yOf } = scale;
  const gap = gapDays(interval);

  const grid = y.ticks
    .map((t) => {
      const yy = px(yOf(t));
      return `<line class="gridline" x1="${left}" x2="${width - right}" y1="${yy}" y2="${yy}"/><text x="${left - 8}" y="${(yOf(t) + 4).toFixed(1)}" text-anchor="end">${escapeHtml(t.toFixed(y.step.decimalPlaces()))}</text>`;
    })
    .join('');
  const xTicks = timeTicks(scale.t0, scale.t1)
    .map(({ t, label: l }) => {
      const xx = scale.xOfMs(t);
      return `<line class="gridline" x1="${px(xx)}" x2="${px(xx)}" y1="${top}" y2="${top + plotH}"/><text x="${px(xx)}" y="${top + plotH + 18}" text-anchor="middle">${escapeHtml(l)}</text>`;
    })
    .join('');

  const bandPaths = (() => {
    if (band.length === 0) return '';
    const { area, mid } = bandPath(band, scale, gap);
    const first = band[0]!.date;
    const last = band[band.length - 1]!.date;
    return `<path class="cscp-band" d="${area}" fill="${CSCP_COLOR}" fill-opacity="0.16" stroke="${CSCP_COLOR}" stroke-opacity="0.45" stroke-width="1"><title>CSCP band (mid × e^±u), ${escapeHtml(first)} – ${escapeHtml(last)}, in ${escapeHtml(currency)}</title></path><path class="cscp-mid" d="${mid}" fill="none" stroke="${CSCP_COLOR}" stroke-width="1.5" stroke-dasharray="4 3"><title>CSCP mid</title></path>`;
  })();

  const lines = series
    .filter((s) => s.points.length > 0)
    .map((s) => {
      const d = linePath(s.points, scale, gap);
      const last = s.points[s.points.length - 1]!;
      const title = `${s.series.marketCode} ${SERIES_NAMES[s.series.series]} (${s.series.currencyCode}), ${s.points[0]!.date} – ${last.date}; last close ${displayAmount(last.value)} ${currency}`;
      return `<path class="series" data-market="${escapeHtml(s.series.marketCode)}" data-series="${escapeHtml(s.series.series)}" d="${d}" fill="none" stroke-linecap="round" stroke-linejoin="round" ${strokeAttrs(s.series, s.color)}><title>${escapeHtml(title)}</title></path>`;
    })
    .join('');

  const axes = `<line class="axis-line" x1="${left}" x2="${left}" y1="${top}" y2="${top + plotH}"/><line class="axis-line" x1="${left}" x2="${width - right}" y1="${top + plotH}" y2="${top + plotH}"/>`;
  const titles =
    `<text class="axis-title" x="${left + plotW / 2}" y="${height - 10}" text-anchor="middle">Date (UTC; each point is the ${interval === 'day' ? 'day' : interval === 'week' ? 'ISO week, at its Monday' : 'month, at its first day'})</text>` +
    `<text class="axis-title" transform="translate(16 ${top + plotH / 2}) rotate(-90)" text-anchor="middle">Price in ${escapeHtml(currency)}</text>`;
  return `<svg class="history-chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(label)}">${grid}${xTicks}${axes}${bandPaths}${lines}${titles}</svg>`;
}

// ---------------------------------------------------------------------------------------------------------
// Page parts

/** The item-name search form (GET /items, parameter `q`), for the landing, search and 404 pages. */
export function searchForm(q = '', id = 'item-search'): string {
  return `<form class="search-form" action="/items" method="get" role="search" aria-label="Item search">
<label for="${id}">Item name (or part of it)</label>
<input id="${id}" name="q" type="search" value="${escapeHtml(q)}" size="40" maxlength="${MAX_QUERY_LENGTH}" placeholder="e.g. Redline (Field-Tested)" required>
<button type="submit">Search items</button>
</form>`;
}

function itemHref(name: string, params: Record<string, string | null | undefined>): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) qs.set(k, v);
  const s = qs.toString();
  return `${itemPath(name)}${s ? `?${s}` : ''}`;
}

function controlsForm(name: string, choices: readonly string[], values: { currency: string; interval: string; from: string; to: string }): string {
  const options = (list: readonly string[], selected: string) => list.map((c) => `<option value="${escapeHtml(c)}"${c === selected ? ' selected' : ''}>${escapeHtml(c)}</option>`).join('');
  const currencies = choices.includes(values.currency) ? choices : [values.currency, ...choices];
  return `<form class="controls" action="${escapeHtml(itemPath(name))}" method="get" aria-label="Currency and range">
<label for="currency">Currency<select id="currency" name="currency">${options(currencies, values.currency)}</select></label>
<label for="interval">Interval<select id="interval" name="interval">${options(INTERVALS, values.interval)}</select></label>
<label for="from">From<input id="from" name="from" type="date" value="${escapeHtml(values.from)}"></label>
<label for="to">To<input id="to" name="to" type="date" value="${escapeHtml(values.to)}"></label>
<button type="submit">Show</button>
</form>`;
}

function problemBox(title: string, problems: readonly QueryProblem[], extra = ''): string {
  const items = problems.map((p) => `<li data-parameter="${escapeHtml(p.parameter)}"><code>${escapeHtml(p.parameter)}</code>: ${escapeHtml(p.message)}</li>`).join('');
  return `<div class="unavailable" role="alert">
<h1>${escapeHtml(title)}</h1>
<ul>${items}</ul>
${extra}
</div>`;
}

/** What the item page shows: everything read for one request. */
export interface ItemView {
  name: string;
  currency: string;
  rates: RateTable;
  quotes: readonly MarketQuote[];
  /** Display names of the markets, by code. */
  marketNames: ReadonlyMap<string, string>;
  range: ResolvedRange;
  history: Pick<ItemHistory, 'series' | 'cscp'>;
  /** The item's whole history extent (for the range links), or null without history. */
  extent: { first: string; last: string } | null;
  /** The page's clock: quotes are aged and judged stale at this instant (collectors/freshness.ts). */
  now: Date;
}

function marketCell(code: string, names: ReadonlyMap<string, string>): string {
  const name = names.get(code);
  return name && name !== code ? `${escapeHtml(name)} <code>${escapeHtml(code)}</code>` : `<code>${escapeHtml(code)}</code>`;
}

function convertedCell(table: RateTable, amount: Money | null, from: string, to: string): string {
  if (amount === null) return '<td class="num converted muted">—</td>';
  const c = convert(table, amount, from, to);
  if (c === null) return `<td class="num converted muted" title="no official rate for ${escapeHtml(from)}">no rate</td>`;
  return `<td class="num converted" data-amount="${escapeHtml(formatDecimal(c.toDecimalPlaces(10)))}">${escapeHtml(displayAmount(c))}</td>`;
}

function quotesSection(v: ItemView): string {
  if (v.quotes.length === 0) return `<p class="muted" data-empty="quotes">No current quotes: no market reports this item now.</p>`;
  const rows = v.quotes
    .map((q) => {
      const isValuation = q.marketCode === VALUATION_MARKET;
      const price = q.price === null ? '<td class="num muted">delisted</td>' : `<td class="num price" data-amount="${escapeHtml(formatDecimal(q.price))}">${escapeHtml(formatDecimal(q.price))}</td>`;
      const qty = q.quantity === null ? '<span class="muted">—</span>' : `${q.isQuantityMinimum ? '≥ ' : ''}${escapeHtml(q.quantity.toLocaleString('en-US'))}`;
      const age = ageSeconds(q.freshAt, v.now);
      const after = staleAfterSeconds(q.marketCode, q.providerCode);
      const stale = age > after;
      const classes = [isValuation ? 'valuation' : '', stale ? 'stale' : ''].filter(Boolean).join(' ');
      const ageCell = `<td class="small age${stale ? ' stale' : ''}" data-age-seconds="${age}" title="stale after ${escapeHtml(formatAge(after))} without a confirmation">${escapeHtml(formatAge(age))}${stale ? ' <strong class="stale-mark">stale</strong>' : ''}</td>`;
      return `<tr data-market="${escapeHtml(q.marketCode)}" data-side="${escapeHtml(q.side)}" data-stale="${stale}"${classes ? ` class="${classes}"` : ''}>
<td>${isValuation ? '<strong>CSCP</strong> <span class="muted small">consensus valuation</span>' : marketCell(q.marketCode, v.marketNames)}</td><td>${escapeHtml(q.side)}</td><td class="small">${escapeHtml(q.providerCode)}</td>${price}<td class="currency"><code>${escapeHtml(q.currencyCode)}</code></td>${convertedCell(v.rates, q.price, q.currencyCode, v.currency)}<td class="num">${qty}</td><td class="small date">${escapeHtml(dateTime(q.freshAt))}</td>${ageCell}</tr>`;
    })
    .join('\n');
  const codes = [...new Set(v.quotes.map((q) => q.currencyCode))].filter((c) => c !== v.currency).sort(byCodePoint);
  const rateLines = codes
    .map((c) => {
      const r = convert(v.rates, new Money(1), c, v.currency);
      if (r === null) return `${escapeHtml(c)}: no official rate`;
      const dates = [v.rates.rateDates.get(c), v.rates.rateDates.get(v.currency)].filter(Boolean);
      return `1 ${escapeHtml(c)} = ${escapeHtml(displayRate(r))} ${escapeHtml(v.currency)}${dates.length ? ` <span class="muted">(rates of ${escapeHtml([...new Set(dates)].join(', '))})</span>` : ''}`;
    })
    .join(' · ');
  return `<div class="scroll"><table class="quotes" id="quotes-table">
<caption class="small muted">One quote per market and side (listed before delisted, the market's own feed before aggregators, then the freshest). Prices in the market's own currency, as published.</caption>
<thead><tr><th>Market</th><th>Side</th><th>Provider</th><th class="num">Price</th><th>Currency</th><th class="num">In ${escapeHtml(v.currency)}</th><th class="num">Listings</th><th>Confirmed (UTC)</th><th>Age</th></tr></thead>
<tbody>
${rows}
</tbody></table></div>
<p class="small muted" data-rates>Converted at the official USD rates of the currency table${rateLines ? `: ${rateLines}` : ''}.</p>
${staleNote(v)}`;
}

/**
 * The stale quotes named under the table: a quote is stale when its source has not confirmed it for more than
 * 3 of its collection intervals (24 hours when no collector source reports its market and provider).
 */
function staleNote(v: ItemView): string {
  const stale = v.quotes.filter((q) => isStale(q.marketCode, q.providerCode, q.freshAt, v.now));
  if (stale.length === 0) return `<p class="small muted" data-stale-markets="">Every quote was confirmed within 3 collection intervals of its source.</p>`;
  const names = [...new Set(stale.map((q) => `${q.marketCode} ${q.side}`))];
  return `<p class="small stale-note" data-stale-markets="${escapeHtml(names.join(','))}"><strong>Stale:</strong> ${escapeHtml(names.join(', '))}: not confirmed by their source for more than 3 of its collection intervals (24 hours where no collector reports the market), so the price may have moved since.</p>`;
}

/** The CSCP band of a valuation: mid x e^(-u) and mid x e^(+u), 4 decimals (quotes/quotes.ts valuationBand). */
const cscpBand = valuationBand;

function cscpSection(v: ItemView): string {
  const q = v.quotes.find((x) => x.marketCode === VALUATION_MARKET && x.valuation);
  if (!q || !q.valuation || q.price === null) {
    return `<p class="muted" data-empty="cscp">No CSCP valuation for this item yet (it is computed daily from the markets' closing quotes).</p>`;
  }
  const val = q.valuation;
  const { low, high } = cscpBand(q.price, val.uncertainty);
  const cur = q.currencyCode;
  const row = (label: string, key: string, amount: Money | null) =>
    `<tr data-cscp="${key}"><th scope="row">${escapeHtml(label)}</th>${amount === null ? '<td class="num muted">—</td>' : `<td class="num" data-amount="${escapeHtml(formatDecimal(amount))}">${escapeHtml(formatDecimal(amount))}</td>`}<td><code>${escapeHtml(cur)}</code></td>${convertedCell(v.rates, amount, cur, v.currency)}<td><code>${escapeHtml(v.currency)}</code></td></tr>`;
  return `<div class="cscp-box" id="cscp">
<p><span class="figure" data-cscp-mid>${escapeHtml(formatDecimal(q.price))} ${escapeHtml(cur)}</span>${
    cur === v.currency ? '' : ` <span class="muted">≈ ${escapeHtml(displayAmount(convert(v.rates, q.price, cur, v.currency) ?? q.price))} ${escapeHtml(v.currency)}</span>`
  }<br><span class="small muted">CSCP valuation of ${escapeHtml(formatDate(val.valuationDate))}: a consensus estimate across markets, not a tradable offer.</span></p>
<table class="cscp-table">
<thead><tr><th></th><th class="num">Amount</th><th></th><th class="num">In ${escapeHtml(v.currency)}</th><th></th></tr></thead>
<tbody>
${row('Band low (mid × e^−u)', 'band_low', low)}
${row('Mid', 'mid', q.price)}
${row('Band high (mid × e^+u)', 'band_high', high)}
${row('Ask side', 'ask', val.askAmount)}
${row('Bid side', 'bid', val.bidAmount)}
</tbody></table>
<p class="small muted">Uncertainty u = <span data-cscp-u>${escapeHtml(String(val.uncertainty))}</span> (credibility e^−u = ${escapeHtml(val.credibility.toFixed(3))}); ${
    val.isTwoSided ? 'two-sided' : 'one-sided (asks only)'
  }, from ${val.askQuoteCount} ask and ${val.bidQuoteCount} bid quote${val.bidQuoteCount === 1 ? '' : 's'}.</p>
</div>`;
}

/** The series of the chart in the page currency, coloured by market. */
function chartSeries(v: ItemView): { drawn: ChartSeries[]; unconvertible: string[] } {
  const markets = [...new Set(v.history.series.map((s) => s.marketCode))].sort(byCodePoint);
  const unconvertible: string[] = [];
  const drawn: ChartSeries[] = [];
  for (const s of v.history.series) {
    const color = PALETTE[markets.indexOf(s.marketCode) % PALETTE.length]!;
    if (!v.rates.rates.has(s.currencyCode) || !v.rates.rates.has(v.currency)) {
      unconvertible.push(`${s.marketCode} ${SERIES_NAMES[s.series]} (${s.currencyCode})`);
      continue;
    }
    const points: Point[] = [];
    for (const c of s.candles) if (c.close !== null) points.push({ date: c.date, value: convert(v.rates, toMoney(c.close), s.currencyCode, v.currency)! });
    drawn.push({ series: s, color, points });
  }
  return { drawn, unconvertible };
}

function cscpBandInCurrency(v: ItemView): BandPoint[] {
  if (!v.rates.rates.has(VALUATION_CURRENCY) || !v.rates.rates.has(v.currency)) return [];
  const c = (s: string) => convert(v.rates, toMoney(s), VALUATION_CURRENCY, v.currency)!;
  return v.history.cscp.map((p: CscpPoint) => ({ date: p.date, low: c(p.bandLow), mid: c(p.mid), high: c(p.bandHigh) }));
}

function rangeLinks(v: ItemView): string {
  const links: Array<{ label: string; params: Record<string, string | null> }> = [{ label: 'All history', params: { currency: v.currency } }];
  if (v.extent) {
    const last = v.extent.last;
    links.push({ label: 'Last 12 months (weekly)', params: { currency: v.currency, interval: 'week', from: addDays(last, -364), to: last } });
    links.push({ label: 'Last 90 days (daily)', params: { currency: v.currency, interval: 'day', from: addDays(last, -89), to: last } });
    links.push({ label: 'Last 30 days (daily)', params: { currency: v.currency, interval: 'day', from: addDays(last, -29), to: last } });
  }
  return `<ul class="ranges" aria-label="Ranges">${links.map((l) => `<li><a href="${escapeHtml(itemHref(v.name, { ...l.params, currency: l.params.currency === DEFAULT_CURRENCY ? null : l.params.currency }))}">${escapeHtml(l.label)}</a></li>`).join('')}</ul>`;
}

function historySection(v: ItemView): string {
  const { drawn, unconvertible } = chartSeries(v);
  const band = cscpBandInCurrency(v);
  const withPoints = drawn.filter((s) => s.points.length > 0);
  // Fitted to the data when the reader gave no range; else the requested range.
  const dates = [...withPoints.flatMap((s) => s.points.map((p) => p.date)), ...band.map((b) => b.date)].sort();
  const domain = v.range.whole && dates.length > 0 ? { from: dates[0]!, to: dates[dates.length - 1]! } : { from: bucketOf(v.range.from, v.range.interval), to: bucketOf(v.range.to, v.range.interval) };
  const label = `Price history of ${v.name} per market and series in ${v.currency}, ${v.range.from} to ${v.range.to}, ${v.range.interval}ly closes${band.length ? ', with the CSCP band' : ''}`;
  const chart = historyChart(drawn, band, domain, v.range.interval, v.currency, label);
  const note = v.range.note ? `<p class="small muted">${escapeHtml(v.range.note)}</p>` : '';
  if (!chart) {
    return `${note}<p class="muted" data-empty="history">No history recorded for this item between ${escapeHtml(v.range.from)} and ${escapeHtml(v.range.to)}.</p>`;
  }
  const legendItems = drawn.map(
    (s) =>
      `<li data-market="${escapeHtml(s.series.marketCode)}" data-series="${escapeHtml(s.series.series)}">${lineSample(s.series, s.color)}${marketCell(s.series.marketCode, v.marketNames)} ${escapeHtml(SERIES_NAMES[s.series.series])} <span class="muted">(${escapeHtml(s.series.currencyCode)}, ${s.points.length} ${v.range.interval === 'day' ? 'days' : `${v.range.interval}s`}${s.points.length === 0 ? ': no prices in range' : ''})</span></li>`,
  );
  legendItems.push(
    band.length > 0
      ? `<li data-cscp>${CSCP_SAMPLE}CSCP band (mid × e^±u) and mid <span class="muted">(CNY, ${band.length} valuation${band.length === 1 ? '' : 's'})</span></li>`
      : `<li data-cscp class="muted">${CSCP_SAMPLE}CSCP band: no valuation in this range</li>`,
  );
  const converted = drawn.some((s) => s.series.currencyCode !== v.currency) || (band.length > 0 && v.currency !== VALUATION_CURRENCY);
  const conv = converted ? ` Amounts in other currencies are converted into ${escapeHtml(v.currency)} at today's official rates (not at each day's rate).` : '';
  return `${note}<p class="small muted">Close of each ${escapeHtml(v.range.interval)}, ${escapeHtml(v.range.from)} – ${escapeHtml(v.range.to)}; a gap of more than ${gapDays(v.range.interval)} days without data breaks a line.${conv}</p>
<figure class="chart-figure" id="history-chart">
${chart}
<figcaption><ul class="legend" aria-label="Legend">${legendItems.join('')}</ul></figcaption>
</figure>
${unconvertible.length ? `<p class="small muted">Not drawn (no official rate for their currency): ${escapeHtml(unconvertible.join(', '))}.</p>` : ''}
${candleTables(v)}`;
}

function candleTables(v: ItemView): string {
  if (v.history.series.length === 0) return '';
  const amount = (s: string | null) => (s === null ? '<span class="muted">—</span>' : escapeHtml(s));
  const extra = (s: HistorySeriesOut, c: HistorySeriesOut['candles'][number]) => (s.series === 'sales' ? (c.volume ?? 0).toLocaleString('en-US') + ' sold' : c.quantity === null ? '—' : `${c.quantity.toLocaleString('en-US')} listed`);
  const latest = v.history.series
    .map((s) => {
      const c = [...s.candles].reverse().find((x) => x.close !== null) ?? s.candles[s.candles.length - 1]!;
      return `<tr data-market="${escapeHtml(s.marketCode)}" data-series="${escapeHtml(s.series)}"><td>${marketCell(s.marketCode, v.marketNames)}</td><td>${escapeHtml(SERIES_NAMES[s.series])}</td><td class="date">${escapeHtml(c.date)}</td><td class="num">${amount(c.open)}</td><td class="num">${amount(c.high)}</td><td class="num">${amount(c.low)}</td><td class="num close">${amount(c.close)}</td><td><code>${escapeHtml(s.currencyCode)}</code></td>${convertedCell(v.rates, c.close === null ? null : toMoney(c.close), s.currencyCode, v.currency)}<td class="num">${escapeHtml(extra(s, c))}</td><td class="num">${c.days}</td></tr>`;
    })
    .join('\n');
  const head = `<tr><th>Date</th><th class="num">Open</th><th class="num">High</th><th class="num">Low</th><th class="num">Close</th><th class="num">Close in ${escapeHtml(v.currency)}</th><th class="num">Volume / listings</th><th class="num">Days with data</th></tr>`;
  const details = v.history.series
    .map((s) => {
      const shown = s.candles.slice(-CANDLE_ROWS).reverse();
      const rows = shown
        .map(
          (c) =>
            `<tr><td class="date">${escapeHtml(c.date)}</td><td class="num">${amount(c.open)}</td><td class="num">${amount(c.high)}</td><td class="num">${amount(c.low)}</td><td class="num">${amount(c.close)}</td>${convertedCell(v.rates, c.close === null ? null : toMoney(c.close), s.currencyCode, v.currency)}<td class="num">${escapeHtml(extra(s, c))}</td><td class="num">${c.days}</td></tr>`,
        )
        .join('');
      const more = s.candles.length > CANDLE_ROWS ? ` (the newest ${CANDLE_ROWS} of ${s.candles.length}; narrow the range to see older ones)` : '';
      return `<details data-market="${escapeHtml(s.marketCode)}" data-series="${escapeHtml(s.series)}"><summary>${escapeHtml(s.marketCode)} ${escapeHtml(SERIES_NAMES[s.series])}: ${s.candles.length} candle${s.candles.length === 1 ? '' : 's'} in ${escapeHtml(s.currencyCode)}${escapeHtml(more)}</summary>
<div class="scroll"><table class="candles"><thead>${head}</thead><tbody>${rows}</tbody></table></div></details>`;
    })
    .join('\n');
  return `<h3 id="latest-candles">Latest candles</h3>
<div class="scroll"><table class="latest-candles">
<caption class="small muted">The newest ${escapeHtml(v.range.interval)} with a price of each series in the range, in the series' currency (exact), and its close in ${escapeHtml(v.currency)}.</caption>
<thead><tr><th>Market</th><th>Series</th><th>${escapeHtml(v.range.interval === 'day' ? 'Day' : v.range.interval === 'week' ? 'Week of' : 'Month')}</th><th class="num">Open</th><th class="num">High</th><th class="num">Low</th><th class="num">Close</th><th>Currency</th><th class="num">Close in ${escapeHtml(v.currency)}</th><th class="num">Volume / listings</th><th class="num">Days with data</th></tr></thead>
<tbody>
${latest}
</tbody></table></div>
<h3>All candles per series</h3>
${details}`;
}

/** The item page (HTML document) for a view read by `createItemPages`. */
export function renderItemPage(v: ItemView): string {
  const body = `
<p class="small muted"><a href="/items">Item search</a> › CS2 item (app ${CS2_APP_ID})</p>
<h1 data-item>${escapeHtml(v.name)}</h1>
${controlsForm(v.name, v.rates.choices, { currency: v.currency, interval: v.range.interval, from: v.range.from, to: v.range.to })}
<h2 id="quotes">Current quotes</h2>
${quotesSection(v)}
<h2 id="cscp-valuation">CSCP valuation</h2>
${cscpSection(v)}
<h2 id="history">Price history</h2>
${rangeLinks(v)}
${historySection(v)}
<p class="small muted">The same data as JSON: <code>GET /prices?market_hash_name=${escapeHtml(encodeURIComponent(v.name))}</code> and <code>GET /prices/history</code> (an API key is needed; see the <a href="/docs">API reference</a>).</p>
`;
  return renderPage({ title: v.name, path: '/items', head: HEAD, body, description: `Quotes, CSCP valuation and price history of ${v.name} on CS2 marketplaces.` });
}

/** The 422 page: what was wrong with the query, and the form to fix it. */
export function renderProblemPage(name: string, problems: readonly QueryProblem[], choices: readonly string[]): string {
  const fix = `<p>Change the values below, or <a href="${escapeHtml(itemPath(name))}">show the item with the defaults</a> (${DEFAULT_CURRENCY}, the whole history).</p>`;
  const body = `
<p class="small muted"><a href="/items">Item search</a> › <a href="${escapeHtml(itemPath(name))}">${escapeHtml(name)}</a></p>
${problemBox('This page cannot be shown with these parameters', problems, fix)}
${choices.length ? `<p class="small muted">Currencies: ${escapeHtml(choices.join(', '))} (the list of <code>GET /currencies</code>).</p>` : ''}
${controlsForm(name, choices, { currency: choices.includes(DEFAULT_CURRENCY) ? DEFAULT_CURRENCY : (choices[0] ?? DEFAULT_CURRENCY), interval: 'week', from: '', to: '' })}
`;
  return renderPage({ title: `Invalid parameters · ${name}`, path: '/items', head: HEAD, body });
}

/** The 404 page: why, and the search form. */
export function renderNotFound(name: string, reason: string): string {
  const body = `
<div class="unavailable" role="alert">
<h1>No such item</h1>
<p>${escapeHtml(reason)}</p>
<p>Item pages are at <code>/items/{market_hash_name}</code> with the exact name, URL-encoded. Search by part of the name:</p>
</div>
${searchForm(name)}
`;
  return renderPage({ title: 'Item not found', path: '/items', head: HEAD, body });
}

/** The 503 page: the item data could not be read. */
export function renderUnavailable(): string {
  const body = `<div class="unavailable" role="alert"><h1>Item data unavailable</h1><p>The item data could not be read just now. Please try again in a moment; <a href="/status/page">the status page</a> says how the service is doing.</p></div>`;
  return renderPage({ title: 'Item data unavailable', path: '/items', head: HEAD, body });
}

/** The search page for `q` and its results (at most SEARCH_LIMIT shown; `names` may hold one more). */
export function renderSearchPage(q: string, names: readonly string[] | null, problem: string | null = null): string {
  let results: string;
  if (problem) results = problemBox('This search cannot be run', [{ parameter: 'q', message: problem }]);
  else if (names === null) results = `<p class="muted">Type part of an item's name, e.g. <a href="/items?q=${encodeURIComponent('Redline')}">Redline</a> or <a href="/items?q=${encodeURIComponent('Case')}">Case</a>.</p>`;
  else if (names.length === 0) results = `<p class="muted" data-results="0">No item name contains “${escapeHtml(q)}”.</p>`;
  else {
    const shown = names.slice(0, SEARCH_LIMIT);
    const more = names.length > SEARCH_LIMIT ? `the first ${SEARCH_LIMIT} (more match: refine the search)` : `${shown.length} item${shown.length === 1 ? '' : 's'}`;
    results = `<p class="muted" data-results="${shown.length}">Names containing “${escapeHtml(q)}”: ${more}.</p>
<ol class="results">${shown.map((n) => `<li><a href="${escapeHtml(itemPath(n))}">${escapeHtml(n)}</a></li>`).join('')}</ol>`;
  }
  const body = `
<h1>Items</h1>
<p class="lead">Current quotes per market, the CSCP valuation and the price history of one CS2 item.</p>
${searchForm(q)}
${results}
`;
  return renderPage({ title: q ? `Items matching “${q}”` : 'Item search', path: '/items', head: HEAD, body, description: 'Search CS2 items by name: quotes, CSCP valuation and price history.' });
}
