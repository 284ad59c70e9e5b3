/**
 * The valuation's published accuracy (issue: a valuation that earns trust, point 1) as clients see it: a
 * passed valuation day scored against that day's closes per segment (errors, 90th percentile, calibration,
 * items), a day before any publication recomputed as the job would have valued it, each day scored once,
 * and both faces: GET /valuation/accuracy (public and free, checked against /openapi.json by the test app;
 * 422 details for bad ranges) and GraphQL `valuationAccuracy`, equal to each other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope, expectError } from '../helpers/shapes.js';
import { itemIdOf } from '../../src/history/candles.js';
import { computeValuations, loadFeeBook, parseDate } from '../../src/valuation/daily.js';
import { pendingAccuracyDays, runValuationAccuracy } from '../../src/valuation/accuracy.js';
import { BIWEIGHT_CANDIDATES, runBacktest, runWalkForward } from '../../src/valuation/backtest.js';
import { dayTargets } from '../../src/valuation/day-targets.js';
import { ValuationAccuracyOut } from '../../src/shapes/valuation-accuracy.js';
import { toMoney } from '../../src/lib/money.js';
import { learnFrom } from '../../src/valuation/learning.js';

let t: TestApp;
const day = (d: number) => new Date(Date.UTC(2026, 6, d));
const close = (name: string, side: 'ask' | 'bid', price: string, d: number, marketCode = 'BUFF163') =>
  obs(name, { marketCode, providerCode: 'CSGOTRADER', side, price, observedAt: day(d), quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null });

const WEAPON = 'AK-47 | Accuracy (Field-Tested)';
const STICKER = 'Sticker | Accuracy';
const KNIFE = '★ Karambit | Accuracy (Field-Tested)';

/**
 * The published valuations of 2026-07-20: mid, ask, bid, u, two-sided, and the sources of each side (ask, bid).
 * The sticker's ask had one source, BUFF163's close of 07-19: its BUFF163 target of 07-20 is scored against its
 * only input. The weapon's bid had one source too, YOUPIN's bid of 07-19: its BUFF163 bid target is another market,
 * a real test of the consensus.
 */
const PUBLISHED: Record<string, [string, string, string | null, number, boolean, number, number]> = {
  [WEAPON]: ['50', '52', '48', 0.05, true, 2, 1],
  [STICKER]: ['0.5', '0.52', null, 0.1, false, 1, 0],
  [KNIFE]: ['2000', '2000', null, 0.02, false, 2, 0],
};
/** The closes of 2026-07-20 (the targets): item, side, price. */
const TARGETS: [string, 'ask' | 'bid', string][] = [
  [WEAPON, 'ask', '53'],
  [WEAPON, 'bid', '47'],
  [STICKER, 'ask', '0.6'],
  [KNIFE, 'ask', '2100'],
];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

beforeAll(async () => {
  t = await testApp();
  // 07-19: closes (the window of 07-20 and 07-21); 07-20: the published day's targets; 07-21: closes of a day
  // that was never published (recomputed from 07-19 and 07-20).
  await ingestQuotes(t.db, [
    ...Object.keys(PUBLISHED).map((name) => close(name, 'ask', PUBLISHED[name]![1], 19)),
    // Second sources in the windows: YOUPIN's asks of the weapon and the knife, the weapon's only bid.
    close(WEAPON, 'ask', '52.5', 19, 'YOUPIN'),
    close(KNIFE, 'ask', '2010', 19, 'YOUPIN'),
    close(WEAPON, 'bid', '47.5', 19, 'YOUPIN'),
    ...TARGETS.map(([name, side, price]) => close(name, side, price, 20)),
    ...TARGETS.map(([name, side, price]) => close(name, side, String(Number(price) * 1.01), 21)),
  ]);
  for (const [name, [mid, ask, bid, u, two, asks, bids]] of Object.entries(PUBLISHED)) {
    const id = await itemIdOf(t.db, '730', name);
    await t.db.query(
      `INSERT INTO valuation (item_id, valuation_date, mid_amount, ask_amount, bid_amount, uncertainty, is_two_sided, ask_quote_count, bid_quote_count, computed_at)
       VALUES ($1, '2026-07-20', $2, $3, $4, $5, $6, $7, $8, '2026-07-20T00:05:00Z')`,
      [id, mid, ask, bid, u, two, asks, bids],
    );
  }
});
afterAll(async () => {
  await t?.close();
});

describe('scoring a passed valuation day', () => {
  it('only days that have passed, with closes and something to score, are pending', async () => {
    expect((await pendingAccuracyDays(t.db, day(21))).map((d) => d.toISOString().slice(0, 10))).toEqual(['2026-07-20']);
    expect((await pendingAccuracyDays(t.db, day(22))).map((d) => d.toISOString().slice(0, 10))).toEqual(['2026-07-20', '2026-07-21']);
  });

  it('scores the published valuations per segment: median and p90 error, calibration inside e^(+-u), items; a target of the side\'s only input apart', async () => {
    const stored = await runValuationAccuracy(t.db, day(21), { now: () => new Date('2026-07-21T00:05:00Z') });
    expect(stored.map((d) => [d.date, d.source])).toEqual([['2026-07-20', 'published']]);
    // The expected figures, from the same fee paths (cash scale) and the definitions of the module doc.
    const book = await loadFeeBook(t.db, parseDate('2026-07-20'));
    const scored = TARGETS.map(([name, side, price]) => {
      const [, ask, bid, u] = PUBLISHED[name]!;
      const p = book.path('BUFF163', side, 'CNY')!;
      const x = p.a.times(toMoney(price)).plus(p.b).toNumber();
      const error = Math.abs(Math.log(x) - Math.log(Number(side === 'ask' ? ask : bid)));
      return { name, side, error, inside: error <= u };
    });
    const figures = (rows: typeof scored) => ({
      items: new Set(rows.map((r) => r.name)).size,
      targets: rows.length,
      medianError: r6(median(rows.map((r) => r.error))),
      calibration: r6(rows.filter((r) => r.inside).length / rows.length),
    });
    // The sticker's ask target is the close of its ask's only input (BUFF163): its own row, in no other.
    const tested = scored.filter((s) => s.name !== STICKER);
    const got = Object.fromEntries(stored[0]!.segments.map((s) => [`${s.segment}/${s.value}`, { items: s.items, targets: s.targets, medianError: s.medianError, calibration: s.calibration }]));
    expect(got).toEqual({
      'all/all': figures(tested),
      'target/ask': figures(tested.filter((s) => s.side === 'ask')),
      'target/ask_only_input': figures(scored.filter((s) => s.name === STICKER)),
      'target/bid': figures(tested.filter((s) => s.side === 'bid')),
      'sides/one_sided': figures(tested.filter((s) => s.name !== WEAPON)),
      'sides/two_sided': figures(tested.filter((s) => s.name === WEAPON)),
      'band/10_100': figures(tested.filter((s) => s.name === WEAPON)),
      'band/over_100': figures(tested.filter((s) => s.name === KNIFE)),
      'type/knife': figures(tested.filter((s) => s.name === KNIFE)),
      'type/weapon': figures(tested.filter((s) => s.name === WEAPON)),
    });
    // Served in a fixed order: all, target, sides, band (by price), type.
    expect(stored[0]!.segments.map((s) => `${s.segment}/${s.value}`)).toEqual(Object.keys(got));
    // The sticker's 0.6 against 0.52 is outside e^(+-0.1); the knife's 2100 against 2000 outside e^(+-0.02).
    expect(got['target/ask_only_input']!.calibration).toBe(0);
    expect(got['type/knife']!.calibration).toBe(0);
    const all = stored[0]!.segments[0]!;
    const errors = tested.map((s) => s.error).sort((a, b) => a - b);
    expect(all.p90Error).toBe(r6(errors[1]! + (errors[2]! - errors[1]!) * 0.8)); // (3 - 1) x 0.9 = 1.8
  });

  it('a day never published is valued as the job would have (recomputed); each day is scored once', async () => {
    const stored = await runValuationAccuracy(t.db, day(22));
    expect(stored.map((d) => [d.date, d.source])).toEqual([['2026-07-21', 'recomputed']]);
    // The sticker's ask was valued from BUFF163's close alone: scored against its only input, apart.
    expect(stored[0]!.segments.filter((s) => s.value.endsWith('_only_input')).map((s) => [s.value, s.items, s.targets])).toEqual([['ask_only_input', 1, 1]]);
    const all = stored[0]!.segments.find((s) => s.segment === 'all')!;
    expect(all.items).toBe(2);
    // The valuations the job would have published and the day's targets: the figures of every target but the sticker's.
    const date = parseDate('2026-07-21');
    const book = await loadFeeBook(t.db, date);
    const targets = await dayTargets(t.db, date, book);
    const errors: number[] = [];
    let inside = 0;
    for (const v of (await computeValuations(t.db, date)).items) {
      if (v.marketHashName === STICKER) continue;
      for (const x of targets.get(v.itemId) ?? []) {
        const amount = x.side === 'ask' ? v.askAmount : v.bidAmount;
        if (amount === null) continue;
        const e = Math.abs(x.y - Math.log(amount.toNumber()));
        errors.push(e);
        if (e <= v.uncertainty) inside += 1;
      }
    }
    expect({ targets: all.targets, medianError: all.medianError, calibration: all.calibration }).toEqual({
      targets: errors.length,
      medianError: r6(median(errors)),
      calibration: r6(inside / errors.length),
    });
    // The same day by the backtest (docs/valuation.md section 8), which scores every target: the sticker's one more.
    const backtest = await runBacktest(t.db, [date]);
    expect(backtest.days[0]!.targets).toBe(all.targets + 1);
    expect(await runValuationAccuracy(t.db, day(23))).toEqual([]);
    expect(await pendingAccuracyDays(t.db, day(23))).toEqual([]);
  });
});

describe('GET /valuation/accuracy and GraphQL valuationAccuracy', () => {
  it('serves the stored days without a key, free, in the envelope; GraphQL answers the same', async () => {
    const res = await t.get('/valuation/accuracy?from=2026-07-19&to=2026-07-31');
    const data = expectEnvelope(res);
    expect(res.body.meta).toEqual({ request_id: res.body.meta.request_id });
    expect(Object.keys(data).sort()).toEqual(Object.keys(ValuationAccuracyOut.shape).sort());
    expect(data.from).toBe('2026-07-19');
    expect(data.to).toBe('2026-07-31');
    expect(data.calibration_target).toBe(0.6827);
    expect(data.days.map((d: { date: string; source: string }) => [d.date, d.source])).toEqual([
      ['2026-07-20', 'published'],
      ['2026-07-21', 'recomputed'],
    ]);
    const gql = await t.gql(
      `query($from: Date, $to: Date) { valuationAccuracy(from: $from, to: $to) { from to calibrationTarget
        days { date source segments { segment value items targets medianError p90Error calibration } } } }`,
      { from: '2026-07-19', to: '2026-07-31' },
    );
    expect(gql.body.errors).toBeUndefined();
    const g = gql.body.data.valuationAccuracy;
    expect(g.days).toEqual(
      data.days.map((d: any) => ({
        date: d.date,
        source: d.source,
        segments: d.segments.map((s: any) => ({ segment: s.segment, value: s.value, items: s.items, targets: s.targets, medianError: s.median_error, p90Error: s.p90_error, calibration: s.calibration })),
      })),
    );
  });

  it('refuses bad days, a reversed range and a range over 366 days with 422 details', async () => {
    const bad = expectError(await t.get('/valuation/accuracy?from=2026-02-30'), 422, 'validation_failed');
    expect(bad.details.errors).toEqual([expect.objectContaining({ location: 'query', field: 'from' })]);
    const reversed = expectError(await t.get('/valuation/accuracy?from=2026-07-21&to=2026-07-20'), 422, 'validation_failed');
    expect(reversed.details.errors).toEqual([expect.objectContaining({ location: 'query', field: 'from' })]);
    expectError(await t.get('/valuation/accuracy?from=2025-01-01&to=2026-07-20'), 422, 'validation_failed');
    const gql = await t.gql(`{ valuationAccuracy(from: "2026-07-21", to: "2026-07-20") { from } }`);
    expect(gql.body.errors[0].extensions.code).toBe('validation_failed');
  });

  it('has its catalogue row and its OpenAPI operation with x-quotegate', async () => {
    const rows = expectEnvelope(await t.get('/endpoints'));
    expect(rows.find((r: { path: string }) => r.path === '/valuation/accuracy')).toMatchObject({ method: 'GET', credit_cost: 0, roles: [], rate_limit: null });
    const doc = (await t.get('/openapi.json')).body;
    const op = doc.paths['/valuation/accuracy'].get;
    expect(op.operationId).toBe('getValuationAccuracy');
    expect(op['x-quotegate']).toMatchObject({ credit_cost: 0 });
  });
});

describe('walk-forward backtest (issue: a valuation that earns trust, point 2)', () => {
  it('chooses the biweight constant on earlier days only: the first day trains, each later day is scored with the choice', async () => {
    const w = await runWalkForward(t.db, [parseDate('2026-07-20'), parseDate('2026-07-21')]);
    expect(w.candidates).toEqual([...BIWEIGHT_CANDIDATES]);
    expect(w.days.map((d) => d.date)).toEqual(['2026-07-20', '2026-07-21']);
    expect(w.days[0]!.chosen_c).toBeNull();
    // The choice for 07-21 is the candidate with the lowest error on 07-20 (ties: the smaller constant).
    const first = w.days[0]!.by_c;
    const best = Math.min(...Object.values(first));
    expect(w.days[1]!.chosen_c).toBe(Math.min(...BIWEIGHT_CANDIDATES.filter((c) => first[String(c)] === best)));
    // Only 07-21 is scored, with that constant: the same figures as a backtest of that day with it.
    expect(w.scored.days.map((d) => d.date)).toEqual(['2026-07-21']);
    const direct = await runBacktest(t.db, [parseDate('2026-07-21')], undefined, { biweightC: w.days[1]!.chosen_c! });
    expect(w.scored.consensus_mdae).toBe(direct.consensus_mdae);
    expect(w.scored.calibration).toEqual(direct.calibration);
    // What 07-21 learned came from 07-20 alone (its run with the job's constant, nothing learned before it).
    expect(w.days[0]!.learned.days).toEqual([]);
    const trained = await runBacktest(t.db, [parseDate('2026-07-20')], undefined, { biweightC: 2 });
    const { days: _days, ...taught } = learnFrom(trained.learnings);
    expect(w.days[1]!.learned).toEqual({ ...taught, days: ['2026-07-20'] });
    // Each candidate's figure of a day is that day's backtest with it.
    expect(w.days[1]!.by_c['4.685']).toBe((await runBacktest(t.db, [parseDate('2026-07-21')], undefined, { biweightC: 4.685 })).consensus_mdae);
  });
});
