/**
 * The item page chart's arithmetic (src/pages/item/chart.ts): exact decimal axis ticks, the scale from days and
 * amounts to the SVG's units, the runs a gap breaks a line into, and the path data of a line and of the CSCP band,
 * as the page writes them into its SVG (one decimal per coordinate).
 */
import { describe, expect, it } from 'vitest';
import { bandPath, chartScale, linePath, niceTicks, runsOf, timeTicks } from '../../src/pages/item/chart.js';
import { formatDecimal, toMoney } from '../../src/lib/money.js';

const m = toMoney;
const labels = (a: string, b: string) => timeTicks(Date.parse(`${a}T00:00:00Z`), Date.parse(`${b}T00:00:00Z`)).map((t) => t.label);

describe('axis ticks', () => {
  it('steps of 1, 2, 2.5 or 5 x 10^k, exact in decimals (no 0.15000000000000002)', () => {
    const y = niceTicks(m('0.1'), m('0.3'));
    expect(y.step.toFixed()).toBe('0.05');
    expect(y.ticks.map((t) => t.toFixed())).toEqual(['0.1', '0.15', '0.2', '0.25', '0.3']);
    expect(niceTicks(m('8.73'), m('43.84'), 6).ticks.map((t) => t.toFixed())).toEqual(['0', '10', '20', '30', '40', '50']);
    expect(niceTicks(m('0.0012'), m('0.0031')).step.toFixed()).toBe('0.0005');
  });

  it('an empty range is padded by 10 % (by 1 around zero) before the ticks are chosen', () => {
    expect(niceTicks(m('7'), m('7')).ticks.map((t) => t.toFixed())).toEqual(['6', '6.5', '7', '7.5', '8']);
    expect(niceTicks(m('0'), m('0')).ticks.map((t) => formatDecimal(t))).toEqual(['-1', '-0.5', '0', '0.5', '1']);
  });

  it('date ticks: the smallest calendar step with at most 9 labels; week steps on Mondays', () => {
    // 2026-07-01 is a Wednesday: weekly ticks start on Monday 2026-07-06.
    expect(labels('2026-07-01', '2026-09-01')).toEqual(['2026-07-06', '2026-07-13', '2026-07-20', '2026-07-27', '2026-08-03', '2026-08-10', '2026-08-17', '2026-08-24', '2026-08-31']);
    expect(labels('2026-07-01', '2026-07-17')).toEqual(['2026-07-01', '2026-07-03', '2026-07-05', '2026-07-07', '2026-07-09', '2026-07-11', '2026-07-13', '2026-07-15', '2026-07-17']);
    expect(labels('2025-07-14', '2026-07-13')).toEqual(['2025-09', '2025-11', '2026-01', '2026-03', '2026-05', '2026-07']);
    expect(labels('2021-08-02', '2026-07-13')).toEqual(['2022', '2023', '2024', '2025', '2026']);
  });
});

describe('runs', () => {
  it('a gap of more than `gap` days starts a new run; exactly `gap` days does not', () => {
    const p = (date: string) => ({ date });
    expect(runsOf([p('2026-01-01'), p('2026-02-01')], 31)).toEqual([[p('2026-01-01'), p('2026-02-01')]]);
    expect(runsOf([p('2026-01-01'), p('2026-02-02'), p('2026-02-03')], 31)).toEqual([[p('2026-01-01')], [p('2026-02-02'), p('2026-02-03')]]);
    expect(runsOf([], 31)).toEqual([]);
  });
});

describe('scale and paths', () => {
  // Plot area: x from 78 to 960 (882 units), y from 14 (top) to 382 (bottom, 368 units).
  const domain = { from: '2026-01-01', to: '2026-04-11' }; // 100 days: 8.82 units a day
  const scale = chartScale([m('10'), m('50')], domain);

  it('maps the y axis ends and days linearly; the amount is a decimal until the pixel', () => {
    expect(scale.y.ticks.map((t) => t.toFixed())).toEqual(['10', '20', '30', '40', '50']);
    expect([scale.yOf(m('10')), scale.yOf(m('30')), scale.yOf(m('50'))]).toEqual([382, 198, 14]);
    expect([scale.xOf('2026-01-01'), scale.xOf('2026-04-11')]).toEqual([78, 960]);
    expect(scale.xOf('2026-01-02')).toBeCloseTo(86.82, 10);
    // (0.2 - 0.1) / (0.3 - 0.1) is 0.5000000000000001 in floats; in decimals the middle of the axis is exact.
    expect(chartScale([m('0.1'), m('0.3')], domain).yOf(m('0.2'))).toBe(198);
  });

  it('a one-day domain still spans one day of width', () => {
    const one = chartScale([m('1')], { from: '2026-01-01', to: '2026-01-01' });
    expect([one.xOf('2026-01-01'), one.xOf('2026-01-02')]).toEqual([78, 960]);
  });

  it('a line: one subpath per run, a lone point as a dot (h0), one decimal per coordinate', () => {
    const points = [
      { date: '2026-01-01', value: m('10') },
      { date: '2026-01-02', value: m('50') },
      { date: '2026-04-11', value: m('30') },
    ];
    expect(linePath(points, scale, 31)).toBe('M78.0 382.0L86.8 14.0M960.0 198.0h0');
    expect(linePath([], scale, 31)).toBe('');
  });

  it('the CSCP band: along the highs and back along the lows; a lone valuation is a bar with a tick at its mid', () => {
    const v = (date: string) => ({ date, low: m('10'), mid: m('30'), high: m('50') });
    expect(bandPath([v('2026-01-01'), v('2026-01-02'), v('2026-04-11')], scale, 31)).toEqual({
      area: 'M78.0 14.0L86.8 14.0L86.8 382.0L78.0 382.0ZM956.0 14.0H964.0V382.0H956.0Z',
      mid: 'M78.0 198.0L86.8 198.0M954.0 198.0H966.0',
    });
    expect(bandPath([], scale, 31)).toEqual({ area: '', mid: '' });
  });
});
