/**
 * What a valuation learns from the scored days before it (issue: a valuation that earns trust, point 3;
 * docs/valuation.md section 11), on a synthetic market where BUFF163's sell listings are steady and YOUPIN's
 * jump by up to +-8 % a day: scoring each passed day stores its learning; the next run calibrates its
 * uncertainties with the pooled factors (published on both faces: `uncertainty` everywhere, each side's own on
 * GraphQL only) and weighs the market that predicted the consensus target poorly less.
 */
import { Decimal } from 'decimal.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runValuationJob } from '../../src/jobs/valuation.js';
import { computeValuations, loadFeeBook, loadLearned, parseDate } from '../../src/valuation/daily.js';
import { runValuationAccuracy } from '../../src/valuation/accuracy.js';
import { q68 } from '../../src/valuation/robust.js';
import { learnFrom, type DayLearning } from '../../src/valuation/learning.js';
import { ingestQuotes, obs, testApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope, VALUATION_KEYS } from '../helpers/shapes.js';

let t: TestApp;
const ITEMS = 80;
const name = (i: number) => `M4A4 | Learning ${i} (Field-Tested)`;
const day = (d: number) => new Date(Date.UTC(2026, 6, d));
/** A deterministic jump in [-0.08, 0.08] per item and day. */
const jump = (i: number, d: number) => ((((i * 7919 + d * 104729) % 1601) + 1601) % 1601) / 10_000 - 0.08;
const close = (i: number, market: 'BUFF163' | 'YOUPIN', side: 'ask' | 'bid', price: number, d: number) =>
  obs(name(i), { marketCode: market, providerCode: 'CSGOTRADER', side, price: price.toFixed(2), observedAt: day(d), quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null });
const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

beforeAll(async () => {
  t = await testApp();
  const rows = [];
  for (let d = 10; d <= 16; d++) {
    for (let i = 0; i < ITEMS; i++) {
      const base = 20 + i; // CNY
      rows.push(close(i, 'BUFF163', 'ask', base, d), close(i, 'BUFF163', 'bid', base * 0.95, d), close(i, 'YOUPIN', 'ask', base * (1 + jump(i, d)), d));
    }
  }
  await ingestQuotes(t.db, rows);
  // The run of 07-17 first scores every passed day that is not yet scored (07-11 … 07-16), then values.
  expect((await runValuationJob(t.db, parseDate('2026-07-17'), { now: () => new Date('2026-07-17T00:05:00Z') })).status).toBe('done');
}, 120_000);
afterAll(async () => {
  await t?.close();
});

describe('learning from the scored days', () => {
  it('each scored day stores its learning; a run pools the days of its window before it', async () => {
    const rows = await t.db.query<{ day: string; stats: DayLearning }>(`SELECT valuation_date::text AS day, stats FROM valuation_learning ORDER BY 1`);
    expect(rows.map((r) => r.day)).toEqual(['2026-07-11', '2026-07-12', '2026-07-13', '2026-07-14', '2026-07-15', '2026-07-16']);
    const learned = await loadLearned(t.db, parseDate('2026-07-17'));
    expect(learned).toEqual(learnFrom(rows.map((r) => r.stats)));
    // The two-sided factor is the target-weighted mean of the days' 68.27th percentiles of error / raw u.
    const two = rows.map((r) => r.stats.calibration.two_sided!);
    expect(learned.factors.two_sided).toBe(r6(two.reduce((s, x) => s + x.q * x.n, 0) / two.reduce((s, x) => s + x.n, 0)));
    // No one-sided item: too few targets, the factor stays 1.
    expect(learned.factors.one_sided).toBe(1);
    // YOUPIN's jumping listings predicted the day's consensus target worse than BUFF163's steady ones.
    expect(learned.markets['YOUPIN/ask']!.accuracy).toBeGreaterThan(1.5 * learned.markets['BUFF163/ask']!.accuracy);
    // A day learns only from days before it.
    expect((await loadLearned(t.db, parseDate('2026-07-13'))).days).toEqual(['2026-07-11', '2026-07-12']);
    const run = await t.db.query<{ learned: unknown }>(`SELECT stats->'learned' AS learned FROM valuation_run WHERE valuation_date = '2026-07-17'`);
    expect(run[0]!.learned).toEqual(learned);
  });

  it('the published uncertainties are the raw ones times the factors; GraphQL also serves each side\'s own, REST keeps the spec shape', async () => {
    const learned = await loadLearned(t.db, parseDate('2026-07-17'));
    expect(learned.factors.two_sided).not.toBe(1);
    expect(learned.factors.ask).not.toBe(1);
    expect(learned.factors.bid).not.toBe(1);
    const c = await computeValuations(t.db, parseDate('2026-07-17'), { learned });
    const v = c.items.find((x) => x.marketHashName === name(3))!;
    expect(v.uncertainty).toBe(r6(v.raw.uncertainty * learned.factors.two_sided));
    expect(v.askUncertainty).toBe(r6(v.raw.ask * learned.factors.ask));
    expect(v.bidUncertainty).toBe(r6(v.raw.bid! * learned.factors.bid));
    const rest = expectEnvelope(await t.get(`/prices?market_hash_name=${encodeURIComponent(name(3))}&markets=CSCP&side=mid`, t.auth())).markets[0].valuation;
    expect(Object.keys(rest).sort()).toEqual([...VALUATION_KEYS].sort());
    expect(rest.uncertainty).toBe(v.uncertainty);
    const gql = await t.gql(
      `query($n: String!) { prices(marketHashName: $n, markets: ["CSCP"]) { markets { valuation { uncertainty askUncertainty bidUncertainty } } } }`,
      { n: name(3) },
      t.auth(),
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.prices.markets[0].valuation).toEqual({ uncertainty: v.uncertainty, askUncertainty: v.askUncertainty, bidUncertainty: v.bidUncertainty });
  });

  it('a market that predicted the consensus target poorly counts less: every consensus moves towards the steady market', async () => {
    const learned = await loadLearned(t.db, parseDate('2026-07-17'));
    const date = parseDate('2026-07-17');
    const names = Array.from({ length: ITEMS }, (_, i) => name(i));
    const withAccuracy = await computeValuations(t.db, date, { learned, explain: names });
    const without = new Map((await computeValuations(t.db, date, { learned: { ...learned, markets: {} } })).items.map((v) => [v.marketHashName, v]));
    let moved = 0;
    for (const e of withAccuracy.explained) {
      // Each market's ask on the common scale (cash cost CNY, its fee path).
      const cash = (market: string) => {
        const q = e.closes.find((c) => c.market === market && c.side === 'ask')!;
        return new Decimal(q.path!.a).times(q.price).plus(q.path!.b);
      };
      const buff = cash('BUFF163');
      const youpin = cash('YOUPIN');
      const learnedAsk = e.valuation!.askAmount;
      const plainAsk = without.get(e.marketHashName)!.askAmount;
      if (buff.eq(youpin) || learnedAsk.eq(plainAsk)) continue;
      // Moved towards BUFF163's ask, whichever side of YOUPIN's it is on.
      expect(buff.gt(youpin) ? learnedAsk.gt(plainAsk) : learnedAsk.lt(plainAsk), e.marketHashName).toBe(true);
      moved += 1;
    }
    expect(moved).toBeGreaterThan(ITEMS / 2);
  });

  it('scoring a published day: target segments against each side\'s own uncertainty, learning against the raw ones', async () => {
    // The markets' closes of 07-17: the targets of the published valuations of 07-17.
    const rows = [];
    for (let i = 0; i < ITEMS; i++) rows.push(close(i, 'BUFF163', 'ask', (20 + i) * 1.01, 17), close(i, 'BUFF163', 'bid', (20 + i) * 0.95, 17), close(i, 'YOUPIN', 'ask', (20 + i) * (1 + jump(i, 17)), 17));
    await ingestQuotes(t.db, rows);
    const [scored] = await runValuationAccuracy(t.db, day(18));
    expect([scored!.date, scored!.source]).toEqual(['2026-07-17', 'published']);
    const factors = (await loadLearned(t.db, parseDate('2026-07-17'))).factors;
    const book = await loadFeeBook(t.db, parseDate('2026-07-17'));
    const published = await t.db.query<{ name: string; ask: string; bid: string; u: number; ua: number; ub: number }>(
      `SELECT i.market_hash_name AS name, v.ask_amount::text AS ask, v.bid_amount::text AS bid, v.uncertainty AS u, v.ask_uncertainty AS ua, v.bid_uncertainty AS ub
         FROM valuation v JOIN item i ON i.id = v.item_id WHERE v.valuation_date = '2026-07-17'`,
    );
    expect(published).toHaveLength(ITEMS);
    const inside: Record<'ask' | 'bid', [number, number]> = { ask: [0, 0], bid: [0, 0] };
    const ratios: number[] = [];
    for (const v of published) {
      const i = Number(/Learning (\d+)/.exec(v.name)![1]);
      const targets: ['ask' | 'bid', 'BUFF163' | 'YOUPIN', number][] = [
        ['ask', 'BUFF163', (20 + i) * 1.01],
        ['bid', 'BUFF163', (20 + i) * 0.95],
        ['ask', 'YOUPIN', (20 + i) * (1 + jump(i, 17))],
      ];
      for (const [side, market, price] of targets) {
        const p = book.path(market, side, 'CNY')!;
        const x = p.a.times(new Decimal(price.toFixed(2))).plus(p.b).toNumber();
        const error = Math.abs(Math.log(x) - Math.log(Number(side === 'ask' ? v.ask : v.bid)));
        inside[side][1] += 1;
        if (error <= (side === 'ask' ? v.ua : v.ub)) inside[side][0] += 1;
        ratios.push(error / (v.u / factors.two_sided));
      }
    }
    const seg = (value: string) => scored!.segments.find((x) => x.segment === 'target' && x.value === value)!;
    expect(seg('ask').calibration).toBe(r6(inside.ask[0] / inside.ask[1]));
    // The bids come from BUFF163 alone: each bid target is its consensus's only input, scored apart (issue 44, point 7).
    expect(seg('bid')).toBeUndefined();
    expect(seg('bid_only_input').calibration).toBe(r6(inside.bid[0] / inside.bid[1]));
    // Learned (from every target) against the raw u (published / the factor the day was valued with), so factors never compound.
    expect(scored!.learning.calibration.two_sided).toEqual({ q: r6(q68(ratios)), n: ratios.length });
  });
});
