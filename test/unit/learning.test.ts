/**
 * The learning rules of src/valuation/learning.ts (docs/valuation.md section 11): a day's calibration ratio
 * makes exactly about 68 % of that day's targets fall inside, days pool by their counts, thin segments and
 * thin markets learn nothing, factors are bounded, and a market's measured accuracy raises or lowers its sigma.
 */
import { describe, expect, it } from 'vitest';
import { DayLearner, FACTOR_MAX, FACTOR_MIN, learnFrom, marketTerm, MIN_CALIBRATION_TARGETS, MIN_MARKET_ITEMS, NOTHING_LEARNED } from '../../src/valuation/learning.js';

/** A deterministic stream of numbers in [0, 1). */
function stream(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

describe('DayLearner and learnFrom', () => {
  it('the learned factor puts about 68.27 % of the day\'s targets inside raw u x factor', () => {
    const next = stream(7);
    const learner = new DayLearner('2026-07-12');
    const targets: { error: number; raw: number }[] = [];
    for (let i = 0; i < 5000; i++) {
      const raw = 0.02 + next() * 0.1;
      const error = Math.abs(Math.log(1 + (next() - 0.5) * 0.4));
      targets.push({ error, raw });
      learner.addRatio('ask', error, raw);
    }
    const day = learner.result();
    expect(day.calibration.ask!.n).toBe(5000);
    const k = learnFrom([day]).factors.ask;
    const inside = targets.filter((t) => t.error <= t.raw * k).length / targets.length;
    expect(Math.abs(inside - 0.6827)).toBeLessThan(0.002);
  });

  it('pools the days by their counts; a segment with too few targets keeps factor 1; factors are bounded', () => {
    const day = (date: string, q: number, n: number) => ({ date, calibration: { two_sided: { q, n }, bid: { q: 0.001, n: 500 }, ask: { q: 50, n: 500 }, one_sided: { q: 2, n: MIN_CALIBRATION_TARGETS - 1 } }, markets: {} });
    const l = learnFrom([day('2026-07-13', 1.2, 300), day('2026-07-12', 0.8, 100)]);
    expect(l.factors.two_sided).toBe(1.1); // (1.2 x 300 + 0.8 x 100) / 400
    expect(l.factors.one_sided).toBe(2); // 199 targets each day, 398 pooled: enough
    expect(l.factors.bid).toBe(FACTOR_MIN);
    expect(l.factors.ask).toBe(FACTOR_MAX);
    expect(l.days).toEqual(['2026-07-12', '2026-07-13']);
    expect(learnFrom([day('2026-07-12', 0.8, 100)]).factors.one_sided).toBe(1); // 199 targets: too few
    expect(learnFrom([])).toEqual(NOTHING_LEARNED);
  });

  it('a market needs enough items over the window before its accuracy is used', () => {
    const d = (date: string, n: number) => ({ date, calibration: {}, markets: { 'YOUPIN/ask': { q: 0.2, n }, 'BUFF163/ask': { q: 0.05, n: 100 } } });
    expect(learnFrom([d('2026-07-12', MIN_MARKET_ITEMS - 1)]).markets).toEqual({ 'BUFF163/ask': { accuracy: 0.05, n: 100 } });
    expect(learnFrom([d('2026-07-12', MIN_MARKET_ITEMS - 1), d('2026-07-13', 1)]).markets['YOUPIN/ask']).toEqual({ accuracy: 0.2, n: MIN_MARKET_ITEMS });
  });
});

describe('marketTerm', () => {
  it('is the dispersion alone without a measured accuracy, and moves towards the accuracy with one', () => {
    expect(marketTerm(0.05, undefined)).toBe(0.05);
    expect(marketTerm(0.05, 0.05)).toBeCloseTo(0.05, 12);
    expect(marketTerm(0.05, 0.2)).toBeGreaterThan(0.05); // predicted poorly: larger sigma, smaller weight
    expect(marketTerm(0.05, 0.01)).toBeLessThan(0.05); // predicted well: a larger weight
    expect(marketTerm(0.03, 0.04)).toBeCloseTo(Math.sqrt((0.03 ** 2 + 0.04 ** 2) / 2), 12);
  });
});
