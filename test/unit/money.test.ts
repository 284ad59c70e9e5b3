import { describe, expect, it } from 'vitest';
import { formatDecimal, toMoney } from '../../src/lib/money.js';

describe('decimal wire format', () => {
  it.each([
    ['10.50', '10.5'],
    ['10.00', '10'],
    ['0.0000001', '0.0000001'],
    ['1e-9', '0.000000001'],
    ['123456789012345678901234567890.12', '123456789012345678901234567890.12'],
    ['-0.0', '0'],
    ['2.5E+3', '2500'],
  ])('%s -> %s (plain, trailing zeros trimmed, never scientific)', (input, out) => {
    expect(formatDecimal(toMoney(input))).toBe(out);
  });

  it('keeps exact decimal arithmetic (no float drift)', () => {
    expect(formatDecimal(toMoney('0.1').plus('0.2'))).toBe('0.3');
    expect(formatDecimal(toMoney('29.82').times('6.768793219314014').toDecimalPlaces(2))).toBe('201.85');
  });

  it('rejects non-finite input', () => {
    expect(() => toMoney('NaN')).toThrow(RangeError);
    expect(() => toMoney('Infinity')).toThrow(RangeError);
  });
});
