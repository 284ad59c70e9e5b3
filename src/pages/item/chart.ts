/**
 * The arithmetic of the item page's history chart (`view.ts` draws it as inline SVG): axis ticks, the plot's
 * scale from days and decimal amounts to pixels, the runs a gap breaks a line into, and the SVG path data of the
 * lines and of the CSCP band. Pure functions: no I/O, no HTML. Amounts stay decimal.js (`Money`) through every
 * step; only the pixel coordinates become JS numbers, in `chartScale`'s `yOf`, and are written with one decimal.
 */
import type { HistoryInterval } from '../../history/candles.js';
import { Money } from '../../lib/money.js';
import { formatDate } from '../../lib/time.js';

/** Milliseconds of one UTC day. */
export const DAY_MS = 86_400_000;

/** Milliseconds since the epoch of `d` (YYYY-MM-DD) at 00:00 UTC. */
export function dayMs(d: string): number {
  return Date.parse(`${d}T00:00:00Z`);
}

/** One plotted point: a day (bucket start, YYYY-MM-DD) and an amount in the chart's currency. */
export interface Point {
  date: string;
  value: Money;
}

/** One CSCP valuation as the chart draws it: its day and its band low, mid and band high in the chart's currency. */
export interface BandPoint {
  date: string;
  low: Money;
  mid: Money;
  high: Money;
}

/**
 * "Nice" axis ticks over [min, max]: a step of 1, 2, 2.5 or 5 x 10^k giving about `target` intervals, the axis
 * widened to whole steps (`lo` <= min, `hi` >= max) and every tick from `lo` to `hi`. An empty range (max <= min)
 * is first padded by 10 % of |min| on each side (by 1 when min is 0). Exact decimals: no float in the result.
 */
export function niceTicks(min: Money, max: Money, target = 5): { lo: Money; hi: Money; step: Money; ticks: Money[] } {
  let lo = min;
  let hi = max;
  if (hi.lte(lo)) {
    const pad = lo.abs().gt(0) ? lo.abs().times('0.1') : new Money(1);
    lo = lo.minus(pad);
    hi = hi.plus(pad);
  }
  const rough = hi.minus(lo).div(target);
  const mag = new Money(10).pow(Money.log10(rough).floor());
  const f = rough.div(mag);
  const nice = f.lte(1) ? 1 : f.lte(2) ? 2 : f.lte('2.5') ? '2.5' : f.lte(5) ? 5 : 10;
  const step = mag.times(nice);
  const start = lo.div(step).floor().times(step);
  const end = hi.div(step).ceil().times(step);
  const ticks: Money[] = [];
  for (let t = start; t.lte(end); t = t.plus(step)) ticks.push(t);
  return { lo: start, hi: end, step, ticks };
}

/**
 * Date ticks between two days (ms since the epoch, UTC midnights): the smallest calendar step (1, 2, 7 or 14 days;
 * 1, 2, 3 or 6 months; 1, 2, 5 or 10 years) giving at most `maxTicks` labels. Steps of a week or more start on
 * Mondays, month steps on the 1st (labelled YYYY-MM), year steps on 1 January (labelled YYYY); days are labelled
 * YYYY-MM-DD. When even 10 years give too many, the 10-year ticks.
 */
export function timeTicks(t0: number, t1: number, maxTicks = 9): Array<{ t: number; label: string }> {
  const steps: Array<{ kind: 'day' | 'month' | 'year'; n: number }> = [
    { kind: 'day', n: 1 },
    { kind: 'day', n: 2 },
    { kind: 'day', n: 7 },
    { kind: 'day', n: 14 },
    { kind: 'month', n: 1 },
    { kind: 'month', n: 2 },
    { kind: 'month', n: 3 },
    { kind: 'month', n: 6 },
    { kind: 'year', n: 1 },
    { kind: 'year', n: 2 },
    { kind: 'year', n: 5 },
    { kind: 'year', n: 10 },
  ];
  let out: Array<{ t: number; label: string }> = [];
  for (const s of steps) {
    out = [];
    const d0 = new Date(t0);
    if (s.kind === 'day') {
      // Steps of a week or more start on Mondays (the weekly candles' first days).
      let t = t0;
      if (s.n >= 7) t += ((8 - d0.getUTCDay()) % 7) * DAY_MS;
      for (; t <= t1; t += s.n * DAY_MS) out.push({ t, label: formatDate(new Date(t)) });
    } else if (s.kind === 'month') {
      const y = d0.getUTCFullYear();
      let m = d0.getUTCMonth() + (d0.getUTCDate() === 1 ? 0 : 1);
      while (m % s.n !== 0) m += 1;
      for (let t = Date.UTC(y, m, 1); t <= t1; m += s.n, t = Date.UTC(y, m, 1)) out.push({ t, label: formatDate(new Date(t)).slice(0, 7) });
    } else {
      let y = d0.getUTCFullYear() + (d0.getUTCMonth() === 0 && d0.getUTCDate() === 1 ? 0 : 1);
      while (y % s.n !== 0) y += 1;
      for (let t = Date.UTC(y, 0, 1); t <= t1; y += s.n, t = Date.UTC(y, 0, 1)) out.push({ t, label: String(y) });
    }
    if (out.length <= maxTicks) return out;
  }
  return out;
}

/** Longest gap (days) a line is drawn across at `interval`; a longer one breaks it (no data there). */
export function gapDays(interval: HistoryInterval): number {
  return interval === 'month' ? 93 : 31;
}

/**
 * `points` (in date order) cut into runs wherever two neighbours are more than `gap` days apart; each point in
 * exactly one run, order kept.
 */
export function runsOf<T extends { date: string }>(points: readonly T[], gap: number): T[][] {
  const runs: T[][] = [];
  for (const p of points) {
    const run = runs[runs.length - 1];
    if (run && (dayMs(p.date) - dayMs(run[run.length - 1]!.date)) / DAY_MS <= gap) run.push(p);
    else runs.push([p]);
  }
  return runs;
}

/** The chart's size and margins, in SVG user units (pixels of the viewBox). */
export const CHART_BOX = { width: 1000, height: 440, left: 78, right: 40, top: 14, bottom: 58 } as const;

/** Where amounts and days land on the chart (see `chartScale`). */
export interface ChartScale {
  /** Width and height of the plot area inside the margins. */
  plotW: number;
  plotH: number;
  /** The y axis: its ends, step and ticks (`niceTicks` over the values, about 6 intervals). */
  y: { lo: Money; hi: Money; step: Money; ticks: Money[] };
  /** The x domain in ms: the first day's midnight and the last's, at least one day later. */
  t0: number;
  t1: number;
  /** x of a time in ms (left margin at t0, right end of the plot at t1). */
  xOfMs(t: number): number;
  /** x of a day (YYYY-MM-DD). */
  xOf(date: string): number;
  /** y of an amount (top of the plot at y.hi, bottom at y.lo): the decimal becomes a float only here. */
  yOf(v: Money): number;
}

/**
 * The scale of a chart of `values` (at least one) over the days `domain.from` to `domain.to` in CHART_BOX: the
 * y axis from `niceTicks(min, max, 6)`, the x axis linear in time.
 */
export function chartScale(values: readonly Money[], domain: { from: string; to: string }): ChartScale {
  const { width, height, left, right, top, bottom } = CHART_BOX;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const y = niceTicks(Money.min(...values), Money.max(...values), 6);
  const span = y.hi.minus(y.lo);
  const t0 = dayMs(domain.from);
  const t1 = Math.max(dayMs(domain.to), t0 + DAY_MS);
  // The last step: decimal amounts and days to pixel coordinates (floats only here).
  const xOfMs = (t: number) => left + (plotW * (t - t0)) / (t1 - t0);
  return {
    plotW,
    plotH,
    y,
    t0,
    t1,
    xOfMs,
    xOf: (date) => xOfMs(dayMs(date)),
    yOf: (v) => top + v.minus(y.lo).div(span).times(plotH).negated().plus(plotH).toNumber(),
  };
}

/** A pixel coordinate as the SVG writes it: one decimal. */
export function px(n: number): string {
  return n.toFixed(1);
}

/**
 * The SVG path data of one series' line: a subpath per run (`runsOf` at `gap` days), a lone point drawn as a
 * zero-length segment (`h0`, a dot with round caps). '' when there are no points.
 */
export function linePath(points: readonly Point[], scale: Pick<ChartScale, 'xOf' | 'yOf'>, gap: number): string {
  return runsOf(points, gap)
    .map((run) => `M${run.map((p) => `${px(scale.xOf(p.date))} ${px(scale.yOf(p.value))}`).join('L')}${run.length === 1 ? 'h0' : ''}`)
    .join('');
}

/**
 * The SVG path data of the CSCP band: `area`, per run a closed shape along the band highs and back along the lows
 * (a lone valuation: a bar 8 units wide from low to high); `mid`, per run a line through the mids (a lone
 * valuation: a 12-unit tick). Both '' when `band` is empty.
 */
export function bandPath(band: readonly BandPoint[], scale: Pick<ChartScale, 'xOf' | 'yOf'>, gap: number): { area: string; mid: string } {
  const { xOf, yOf } = scale;
  let area = '';
  let mid = '';
  for (const run of runsOf(band, gap)) {
    if (run.length === 1) {
      // One valuation in a run: a narrow bar from band low to band high.
      const b = run[0]!;
      const x = xOf(b.date);
      area += `M${px(x - 4)} ${px(yOf(b.high))}H${px(x + 4)}V${px(yOf(b.low))}H${px(x - 4)}Z`;
      mid += `M${px(x - 6)} ${px(yOf(b.mid))}H${px(x + 6)}`;
      continue;
    }
    area += `M${run.map((b) => `${px(xOf(b.date))} ${px(yOf(b.high))}`).join('L')}L${[...run].reverse().map((b) => `${px(xOf(b.date))} ${px(yOf(b.low))}`).join('L')}Z`;
    mid += `M${run.map((b) => `${px(xOf(b.date))} ${px(yOf(b.mid))}`).join('L')}`;
  }
  return { area, mid };
}
