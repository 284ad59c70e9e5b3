/**
 * Money and rates: decimal.js from the first byte read to the last byte written.
 * Wire format (spec, general conventions 5 and MarketQuoteOut): a decimal string in plain
 * notation, trailing zeros trimmed, never scientific.
 */
import { Decimal } from 'decimal.js';

/** decimal.js configured for money: 40 significant digits, half-even rounding, no exponent output. */
export const Money = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_EVEN, toExpNeg: -100, toExpPos: 100 });
/** A decimal value of the `Money` configuration. */
export type Money = Decimal;

/** Parses a decimal string (or a Prisma/decimal.js Decimal via its string form); throws on NaN/Infinity. */
export function toMoney(value: string | { toString(): string }): Money {
  const d = new Money(typeof value === 'string' ? value : value.toString());
  if (!d.isFinite()) throw new RangeError(`not a finite decimal: ${String(value)}`);
  return d;
}

/** Formats a decimal for the wire: plain notation, trailing zeros trimmed ("29.5", "0.00001", "-3"). */
export function formatDecimal(value: Decimal | string): string {
  const d = typeof value === 'string' ? new Money(value) : value;
  // decimal.js keeps no trailing zeros in its digits; toFixed() without arguments never uses an exponent.
  const s = d.toFixed();
  return s === '-0' ? '0' : s;
}
