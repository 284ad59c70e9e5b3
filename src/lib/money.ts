/**
 * Money and rates: decimal.js from the first byte read to the last byte written.
 * Wire format (spec, general conventions 5 and MarketQuoteOut): a decimal string in plain
 * notation, trailing zeros trimmed, never scientific.
 */
import { Decimal } from 'decimal.js';
import { data as isoCurrencyList } from 'currency-codes';

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

/**
 * ISO 4217 minor units by currency code (the `currency-codes` package: ISO's list one, its publish date in
 * the package's `publishDate`), built once. ISO gives N.A. for a few codes (precious metals, testing codes); the package
 * reads them as 0.
 */
const MINOR_UNITS: ReadonlyMap<string, number> = new Map(isoCurrencyList.map((c) => [c.code, c.digits]));

/** Decimals shown when a currency is not in ISO 4217 (ECMA-402's CurrencyDigits fallback). */
const DEFAULT_CURRENCY_DECIMALS = 2;

/**
 * The decimals of an amount in currency `code` (ISO 4217 minor unit: 2 for CNY, USD, EUR; 0 for JPY, KRW; 3 for
 * KWD), or DEFAULT_CURRENCY_DECIMALS (2) for a code ISO 4217 does not list. Never throws.
 */
export function currencyDecimals(code: string): number {
  return MINOR_UNITS.get(code.toUpperCase()) ?? DEFAULT_CURRENCY_DECIMALS;
}

/**
 * `value` rounded to the decimals of currency `code` (`currencyDecimals`), half to even (the rounding of every
 * amount this service computes, `Money`). The exact value is not changed; a new Decimal is returned.
 */
export function roundToCurrency(value: Decimal, code: string): Money {
  return new Money(value).toDecimalPlaces(currencyDecimals(code), Decimal.ROUND_HALF_EVEN);
}
