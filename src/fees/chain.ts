/**
 * Calculation chains (spec: PublicCalculationChainOut) and their arithmetic, shared by the fees applied
 * (fees/applied.ts), the trade routes (fees/routes.ts) and the valuation's fee paths (valuation/fee-path.ts).
 *
 * A chain is read as a function of one amount: `start_currency` is the currency the amount must be in, steps
 * apply in order, the result is in the currency the last convert step produced. Every official purpose is read
 * the same way, "money in -> money out after the fee" (`deposit`: cash paid in -> balance credited; `sale`: sale
 * price -> proceeds credited; `withdraw`: balance withdrawn -> cash received). Every step is affine in the
 * amount (fee add/sub: x +- v; mul/div: x * v, x / v; convert: x * rate; a convert group: x * (min | max | avg
 * of its members' rates)), so a chain is `a * amount + b` with decimal `a`, `b` (decimal.js, never floats).
 * `min`/`max` pick the member rate as for a positive amount (prices are positive). Between chains, and into a
 * chain's `start_currency`, amounts are converted at the official USD rates (`auto`: amount x usd_rate(from) /
 * usd_rate(to)), the same rule as an `auto` convert step.
 */
import { Money } from '../lib/money.js';
import type { ExactRule } from './exact-rules.js';

/** A fee step (spec: PublicFeeOperatorOut). `currencyCode`: currency of `value` for add/sub. */
export interface FeeStep {
  kind: 'fee';
  operator: 'add' | 'sub' | 'mul' | 'div';
  value: Money;
  currencyCode: string | null;
}
/** A conversion (spec: PublicConvertOperatorOut); `rate` = target units per source unit (fixed mode). */
export interface Conversion {
  from: string;
  to: string;
  mode: 'auto' | 'fixed';
  rate: Money | null;
}
/** A convert step. */
export interface ConvertStep {
  kind: 'convert';
  convert: Conversion;
}
/** A convert group step (spec: PublicConvertOperatorGroupOut): members that apply to the amount's currency. */
export interface GroupStep {
  kind: 'convert_operator_group';
  rule: 'min' | 'max' | 'avg';
  members: Conversion[];
}
export type Step = FeeStep | ConvertStep | GroupStep;

/**
 * A calculation chain: `startCurrency` null = any currency. `exactRule`: the marketplace's exact rule
 * where the steps approximate it (src/fees/exact-rules.ts); valuations use the steps (an affine path),
 * GraphQL `afterFees` the rule.
 */
export interface Chain {
  id: number;
  name: string | null;
  startCurrency: string | null;
  steps: Step[];
  exactRule?: ExactRule | null;
}

/** A market's official fee schedule: a chain per purpose, null = unknown / not offered. */
export interface MarketFees {
  deposit: Chain | null;
  sale: Chain | null;
  withdraw: Chain | null;
}

/** Official USD value of one unit of each currency (spec: CurrencyOut.usd_rate), by code. */
export type UsdRates = ReadonlyMap<string, Money>;

/** Thrown when a chain cannot be applied (unknown currency, convert from another currency, zero factor). */
export class ChainError extends Error {}

/** An affine map of amounts `x -> a*x + b` whose result is in `currency`. */
export interface Affine {
  a: Money;
  b: Money;
  currency: string;
}

function usd(rates: UsdRates, code: string): Money {
  const r = rates.get(code);
  if (!r || !r.gt(0)) throw new ChainError(`no USD rate for ${code}`);
  return r;
}

/** Units of `to` per unit of `from` at the official USD rates (an `auto` conversion). Throws ChainError without a rate. */
export function officialRate(rates: UsdRates, from: string, to: string): Money {
  if (from === to) return new Money(1);
  return usd(rates, from).div(usd(rates, to));
}

/** The rate of one conversion for an amount in `currency`, or null when it does not apply (other source currency, no rate). */
export function conversionRate(c: Conversion, currency: string, rates: UsdRates): Money | null {
  if (c.from !== currency) return null;
  if (c.mode === 'fixed') return c.rate && c.rate.gt(0) ? c.rate : null;
  const from = rates.get(c.from);
  const to = rates.get(c.to);
  return from && to && from.gt(0) && to.gt(0) ? from.div(to) : null;
}

/**
 * The conversion a group step applies to an amount in `currency`: the members that apply (their source is
 * `currency` and they have a rate), combined by the group's rule (min, max or average of their rates), and
 * the currency they convert into. Throws ChainError when none applies or they disagree on the target.
 */
export function groupConversion(step: GroupStep, currency: string, rates: UsdRates): { rate: Money; to: string; members: Conversion[] } {
  const results = step.members
    .map((c) => ({ c, r: conversionRate(c, currency, rates) }))
    .filter((x): x is { c: Conversion; r: Money } => x.r !== null);
  if (results.length === 0) throw new ChainError(`no member of the convert group applies to ${currency}`);
  const to = results[0]!.c.to;
  if (results.some((x) => x.c.to !== to)) throw new ChainError('convert group members convert into different currencies');
  const rs = results.map((x) => x.r);
  const rate = step.rule === 'min' ? Money.min(...rs) : step.rule === 'max' ? Money.max(...rs) : rs.reduce((sum, x) => sum.plus(x), new Money(0)).div(rs.length);
  return { rate, to, members: results.map((x) => x.c) };
}

/**
 * One step applied to an affine map (the amount so far). Throws ChainError when it cannot apply.
 * Worked examples (amount 100 CNY): fee add 2 CNY -> 102; fee sub 2 CNY -> 98; fee mul 0.975 -> 97.5;
 * fee div 1.15 -> 86.9565...; convert CNY->USD auto with usd rates 0.14 and 1 -> 14; convert fixed 0.15 -> 15;
 * a group of rates 0.14 / 0.15: min -> 14, max -> 15, avg -> 14.5.
 */
export function applyStep(m: Affine, step: Step, rates: UsdRates): Affine {
  if (step.kind === 'fee') {
    switch (step.operator) {
      case 'mul':
        return { a: m.a.times(step.value), b: m.b.times(step.value), currency: m.currency };
      case 'div':
        if (step.value.isZero()) throw new ChainError('fee div by 0');
        return { a: m.a.div(step.value), b: m.b.div(step.value), currency: m.currency };
      case 'add':
      case 'sub': {
        // The operand is in its own currency: converted into the amount's currency at official rates.
        const v = step.value.times(officialRate(rates, step.currencyCode ?? m.currency, m.currency));
        return { a: m.a, b: step.operator === 'add' ? m.b.plus(v) : m.b.minus(v), currency: m.currency };
      }
    }
  }
  if (step.kind === 'convert') {
    const r = conversionRate(step.convert, m.currency, rates);
    if (r === null) throw new ChainError(`convert ${step.convert.from}->${step.convert.to} does not apply to ${m.currency}`);
    return { a: m.a.times(r), b: m.b.times(r), currency: step.convert.to };
  }
  const { rate: r, to: target } = groupConversion(step, m.currency, rates);
  return { a: m.a.times(r), b: m.b.times(r), currency: target };
}

/**
 * A chain as an affine map of an amount in `currency` (converted into the chain's start currency at
 * official rates first when it has one). Throws ChainError when a step cannot apply.
 */
export function chainAffine(chain: Chain, currency: string, rates: UsdRates): Affine {
  const start = chain.startCurrency ?? currency;
  let m: Affine = { a: officialRate(rates, currency, start), b: new Money(0), currency: start };
  for (const step of chain.steps) m = applyStep(m, step, rates);
  return m;
}

/** Applies a chain to a concrete amount (forward): `{amount, currency}` after every step. */
export function runChain(chain: Chain, amount: Money, currency: string, rates: UsdRates): { amount: Money; currency: string } {
  const m = chainAffine(chain, currency, rates);
  return { amount: m.a.times(amount).plus(m.b), currency: m.currency };
}
