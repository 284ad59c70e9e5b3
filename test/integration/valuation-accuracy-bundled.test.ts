/**
 * The published accuracy on the bundled data (issue 44, point 7), months after its last day as a fresh install
 * sees it: the page and the API open on the latest scored days (not an empty range ending yesterday), a range
 * without a scored day says which days are scored, and the targets scored against their side's only input (the
 * bundled bids: one market each) are their own labelled figures, left out of `all` and every other segment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataDir, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope } from '../helpers/shapes.js';
import { importPath } from '../../src/collectors/importers.js';
import { runValuationAccuracy } from '../../src/valuation/accuracy.js';

let t: TestApp;
const NOW = new Date('2026-11-27T12:00:00Z');
const BUNDLED_DAYS = ['2026-07-12', '2026-07-13', '2026-07-14', '2026-07-16'];

type Segment = { segment: string; value: string; items: number; targets: number; median_error: number; p90_error: number; calibration: number };

beforeAll(async () => {
  t = await testApp({ clock: () => NOW });
  await importPath(t.db, dataDir);
  // What the valuation job does at start: every passed day with closes is scored.
  const scored = await runValuationAccuracy(t.db, NOW);
  expect(scored.map((d) => d.date)).toEqual(BUNDLED_DAYS);
});
afterAll(async () => {
  await t?.close();
});

async function page(query = ''): Promise<{ status: number; html: string }> {
  const res = await t.app.fetch(new Request(`http://test/valuation${query}`));
  return { status: res.status, html: await res.text() };
}

describe('the accuracy of the bundled data', () => {
  it('GET /valuation/accuracy without a range serves the 90 days ending at the last scored day', async () => {
    const data = expectEnvelope(await t.get('/valuation/accuracy'));
    expect([data.from, data.to]).toEqual(['2026-04-18', '2026-07-16']);
    expect(data.days.map((d: { date: string }) => d.date)).toEqual(BUNDLED_DAYS);
    const gql = await t.gql(`{ valuationAccuracy { from to days { date } } }`);
    expect(gql.body.data.valuationAccuracy).toEqual({ from: '2026-04-18', to: '2026-07-16', days: BUNDLED_DAYS.map((date) => ({ date })) });
    // A range given in part keeps the former defaults: `to` yesterday.
    expect(expectEnvelope(await t.get('/valuation/accuracy?from=2026-11-01')).to).toBe('2026-11-26');
  });

  it('scores the bids against their only input apart: labelled segments, in no other figure', async () => {
    const data = expectEnvelope(await t.get('/valuation/accuracy'));
    for (const day of data.days as { date: string; segments: Segment[] }[]) {
      const seg = (key: string) => day.segments.find((s) => `${s.segment}/${s.value}` === key);
      const all = seg('all/all')!;
      const bidOnly = seg('target/bid_only_input')!;
      // The bundled bids come from one market: the consensus is that market's own close, scored against itself.
      expect(bidOnly.targets, day.date).toBeGreaterThan(0);
      expect(bidOnly.median_error, day.date).toBeLessThan(0.01);
      // `all` is exactly the ask and bid targets the consensus is tested on; so are the sides, and the bands.
      const tested = (seg('target/ask')?.targets ?? 0) + (seg('target/bid')?.targets ?? 0);
      expect(all.targets, day.date).toBe(tested);
      expect((seg('sides/one_sided')?.targets ?? 0) + (seg('sides/two_sided')?.targets ?? 0), day.date).toBe(tested);
      const bands = day.segments.filter((s) => s.segment === 'band').reduce((n, s) => n + s.targets, 0);
      expect(bands, day.date).toBe(tested);
      // No longer flattered by near-zero errors.
      expect(all.median_error, day.date).toBeGreaterThan(0.01);
    }
  });

  it('the page opens on the latest scored days with their figures, the only-input rows labelled', async () => {
    const { status, html } = await page();
    expect(status).toBe(200);
    expect(html).not.toContain('has been scored yet');
    expect(html).toContain('name="from" value="2026-04-18"');
    expect(html).toContain('name="to" value="2026-07-16"');
    expect(html).toContain('2026-07-16 by segment');
    expect(html).toContain('Bid targets scored against their only input (left out of the other rows)');
    expect((html.match(/<figure class="chart">/g) ?? []).length).toBe(2);
    // The page's figures are the API's: each day's `all` row.
    const data = expectEnvelope(await t.get('/valuation/accuracy'));
    for (const day of data.days as { date: string; segments: Segment[] }[]) {
      const all = day.segments.find((s) => s.segment === 'all')!;
      expect(html, day.date).toMatch(new RegExp(`<th scope="row">${day.date}</th><td>recomputed</td><td class="num">${all.items}</td><td class="num">${all.targets}</td><td class="num">${all.median_error.toFixed(4)}</td>`));
    }
  });

  it('a range without a scored day says which days are scored and links to the latest', async () => {
    const { status, html } = await page('?from=2026-08-29&to=2026-11-26');
    expect(status).toBe(200);
    expect(html).toContain('No valuation day in 2026-08-29 – 2026-11-26 has been scored yet.');
    expect(html).toContain('Scored days run from 2026-07-12 to 2026-07-16: <a href="/valuation">show the latest 90 days</a>');
  });
});
