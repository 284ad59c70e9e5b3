/**
 * The compact month encoding of daily candles (src/history/candle-codec.ts): exact decimals through scaled
 * integers, appended blocks where a later record of a day wins, and refusals of what cannot be stored.
 */
import fc from 'fast-check';
import { Decimal } from 'decimal.js';
import { describe, expect, it } from 'vitest';
import { decodeMonth, encodeMonth, type StoredCandle } from '../../src/history/candle-codec.js';
import { compareDecimal } from '../../src/history/candles.js';

const c = (day: number, over: Partial<StoredCandle> = {}): StoredCandle => ({ day, open: '10', high: '10', low: '10', close: '10', observations: 1, quantity: 5, delisted: false, ...over });
const concat = (...parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));

describe('candle month encoding', () => {
  it('round-trips exact decimals of mixed scales, ranges, nulls, delisting and large values', () => {
    const month = [
      c(1, { open: '0.03', high: '0.05', low: '0.01', close: '0.02', observations: 17, quantity: 123456 }),
      c(2, { open: '87.5', high: '87.5', low: '87.5', close: '87.5' }),
      c(3, { open: null, high: null, low: null, close: null, quantity: null, observations: 0 }),
      c(15, { open: '123456789012345678.1234567891', high: '123456789012345678.1234567891', low: '1', close: '2', delisted: true, quantity: 0 }),
      c(31, { open: '-1.5', high: '3', low: '-2', close: '0' }),
    ];
    expect(decodeMonth(encodeMonth(month))).toEqual(month);
  });

  it('sorts days and keeps a day whose open equals its close but whose range does not', () => {
    const month = [c(9, { open: '5', high: '6', low: '4', close: '5' }), c(2)];
    expect(decodeMonth(encodeMonth(month)).map((x) => [x.day, x.open, x.high, x.low, x.close])).toEqual([
      [2, '10', '10', '10', '10'],
      [9, '5', '6', '4', '5'],
    ]);
  });

  it('costs a few bytes a candle for a flat day', () => {
    const month = Array.from({ length: 30 }, (_, i) => c(i + 1, { open: '201.85', high: '201.85', low: '201.85', close: '201.85', quantity: 1500 }));
    expect(encodeMonth(month).length / 30).toBeLessThanOrEqual(5.2);
  });

  it('reads appended blocks in order: a later record of the same day replaces the earlier one', () => {
    const first = encodeMonth([c(1), c(2, { close: '11', high: '11' })]);
    const second = encodeMonth([c(2, { open: '10.25', high: '12.125', low: '9', close: '12', observations: 4 }), c(3)]);
    expect(decodeMonth(concat(first, second))).toEqual([c(1), c(2, { open: '10.25', high: '12.125', low: '9', close: '12', observations: 4 }), c(3)]);
  });

  it('refuses what it cannot store exactly', () => {
    expect(() => encodeMonth([c(0)])).toThrow(/day of month/);
    expect(() => encodeMonth([c(32)])).toThrow(/day of month/);
    expect(() => encodeMonth([c(1, { close: '1e5' })])).toThrow(/plain decimal/);
    expect(() => encodeMonth([c(1, { close: '0.12345678901' })])).toThrow(/10 decimal places/);
    expect(() => encodeMonth([c(1, { high: '9', close: '10' })])).toThrow(/inconsistent/);
    expect(() => encodeMonth([c(1, { quantity: -1 })])).toThrow(/negative quantity/);
    expect(() => decodeMonth(Uint8Array.from([5, 2]))).toThrow(/corrupt/);
  });

  it('decodes exactly on both sides of the safe-integer range (the number decoder hands over to BigInt)', () => {
    // 900719.9254740991 x 10^10 = 2^53 - 1: the largest value the number decoder holds; one more digit needs BigInt.
    const edge = [c(1, { open: '900719.9254740991', high: '900719.9254740991', low: '0.0000000001', close: '900719.925474099', quantity: 2 ** 31 })];
    expect(decodeMonth(encodeMonth(edge))).toEqual(edge);
    const past = [c(1, { open: '900719.9254740993', high: '900719.9254740993', low: '900719.9254740992', close: '900719.9254740992' })];
    expect(decodeMonth(encodeMonth(past))).toEqual(past);
  });

  it('round-trips any month of candles exactly (property)', () => {
    const amount = fc
      .tuple(fc.bigInt({ min: -(10n ** 14n), max: 10n ** 18n }), fc.integer({ min: 0, max: 10 }))
      .map(([v, places]) => new Decimal(v.toString()).div(new Decimal(10).pow(places)).toFixed());
    const candle = fc.record({
      day: fc.integer({ min: 1, max: 31 }),
      prices: fc.option(fc.array(amount, { minLength: 4, maxLength: 4 }), { nil: null }),
      observations: fc.integer({ min: 0, max: 1_000_000 }),
      quantity: fc.option(fc.integer({ min: 0, max: 2 ** 40 }), { nil: null }),
      delisted: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.uniqueArray(candle, { selector: (x) => x.day, maxLength: 31 }), (drawn) => {
        const month: StoredCandle[] = drawn.map((d) => {
          if (d.prices === null) return { day: d.day, open: null, high: null, low: null, close: null, observations: d.observations, quantity: d.quantity, delisted: d.delisted };
          const sorted = [...d.prices].sort((a, b) => new Decimal(a).comparedTo(new Decimal(b)));
          return { day: d.day, open: d.prices[0]!, high: sorted[3]!, low: sorted[0]!, close: d.prices[1]!, observations: d.observations, quantity: d.quantity, delisted: d.delisted };
        });
        const norm = (x: string | null) => (x === null ? null : new Decimal(x).toFixed());
        const want = [...month].sort((a, b) => a.day - b.day).map((m) => ({ ...m, open: norm(m.open), high: norm(m.high), low: norm(m.low), close: norm(m.close) }));
        expect(decodeMonth(encodeMonth(month))).toEqual(want);
      }),
      { numRuns: 300 },
    );
  });
});

describe('exact decimal comparison of the history aggregation', () => {
  it('agrees with decimal.js on any pair of plain decimals', () => {
    const plain = fc.tuple(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 3 })).map(([v, places, zeros]) => {
      const s = new Decimal(v.toString()).div(new Decimal(10).pow(places)).toFixed(places);
      return s.includes('.') ? s + '0'.repeat(zeros) : s;
    });
    fc.assert(
      fc.property(plain, plain, (a, b) => {
        expect(compareDecimal(a, b)).toBe(new Decimal(a).comparedTo(new Decimal(b)));
      }),
      { numRuns: 2000 },
    );
    expect(compareDecimal('1.50', '1.5')).toBe(0);
    expect(compareDecimal('-0', '0.00')).toBe(0);
    expect(compareDecimal('-2', '-10')).toBe(1);
    expect(compareDecimal('9.99', '10')).toBe(-1);
  });
});
