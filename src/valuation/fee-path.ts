/**
 * Fee paths: the cash a source quote stands for, in CNY, fees included (spec: ValuationOut.ask_amount
 * "cash cost of buying in CNY (fees included)", bid_amount "cash received in CNY after fees").
 *
 * Chains (spec: PublicCalculationChainOut) are read as functions of one amount: `start_currency` is the
 * currency the amount must be in, steps apply in order, the result is in the currency the last convert
 * step produced. Every official purpose is read the same way, "money in -> money out after the fee":
 * - `deposit`: cash paid into the market -> balance credited;
 * - `sale`: sale price -> proceeds credited to the seller;
 * - `withdraw`: balance withdrawn -> cash received.
 *
 * The money paths (all amounts decimal.js, never floats):
 * - ask (a sell listing at price P in the market currency): the buyer's cash D such that
 *   deposit(D) = P, i.e. the deposit chain inverted, then D converted into CNY;
 * - bid (a buy order at price P): withdraw(sale(P)) converted into CNY.
 * Between chains, and into a chain's `start_currency`, amounts are converted at the official USD rates
 * (`auto`: amount x usd_rate(from) / usd_rate(to)), the same rule as an `auto` convert step.
 *
 * Every step is affine in the amount (fee add/sub: x +- v; mul/div: x * v, x / v; convert: x * rate;
 * a convert group: x * (min | max | avg of its members' rates)), so each path is `cash = a * price + b`
 * with decimal `a`, `b` worked out once per market, side and currency, and the inverse of a deposit chain
 * is exact. `min`/`max` pick the member rate as for a positive amount (prices are positive).
 *
 * A null slot (spec: "never means free") is replaced by the documented allowance of its purpose
 * (UNKNOWN_FEE_ALLOWANCE): the amount is multiplied by the midpoint factor 1 - max/2, and the source's
 * log-scale standard uncertainty gains ln(1/(1 - max))/sqrt(12) (a fee uniformly anywhere between 0 and
 * `max`). Whether such a source is used at all is decided by the consensus (see consensus.ts).
 */
import { Money } from '../lib/money.js';
import type { ExactRule } from '../fees/exact-rules.js';

/** The currency valuations are expressed in (spec: CSCP quote, CNY). */
export const VALUATION_CURRENCY = 'CNY';

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

/**
 * The largest plausible fee of an unknown (null) slot, as a fraction of the amount, per purpose.
 * Sources: data/fees.json. Sale fees published there range from 2 % (CSFloat) to 13 % (Steam, 1/1.15)
 * and 10 % (BitSkins public listing): 15 % covers them all. Withdraw: BUFF 1 %, CSFloat's processor
 * ~0; 5 % covers card and e-wallet pay-outs. Deposit: no marketplace states one; card top-ups cost
 * 0-3.5 %, so 4 %.
 */
export const UNKNOWN_FEE_ALLOWANCE = { deposit: new Money('0.04'), sale: new Money('0.15'), withdraw: new Money('0.05') } as const;

/** Midpoint factor of an unknown fee of purpose `p`: 1 - max/2 (e.g. deposit: 0.98). */
export function allowanceFactor(p: keyof typeof UNKNOWN_FEE_ALLOWANCE): Money {
  return new Money(1).minus(UNKNOWN_FEE_ALLOWANCE[p].div(2));
}

/** Standard uncertainty (log scale) of an unknown fee of purpose `p`: ln(1/(1-max))/sqrt(12). */
export function allowanceSigma(p: keyof typeof UNKNOWN_FEE_ALLOWANCE): number {
  return -Math.log(1 - UNKNOWN_FEE_ALLOWANCE[p].toNumber()) / Math.sqrt(12);
}

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

/** Composition: first `f`, then `g` (g's input currency must be f's output currency). */
function then(f: Affine, g: Affine): Affine {
  return { a: g.a.times(f.a), b: g.a.times(f.b).plus(g.b), currency: g.currency };
}

/** A conversion at official rates as an affine map. */
function convertAt(rates: UsdRates, from: string, to: string): Affine {
  return { a: officialRate(rates, from, to), b: new Money(0), currency: to };
}

/** A fee path of one market, side and quote currency: `cash CNY = a * price + b`. */
export interface FeePath {
  a: Money;
  b: Money;
  /** Purposes on the path whose slot is null (replaced by their allowance). */
  unknown: ('deposit' | 'sale' | 'withdraw')[];
  /** Log-scale standard uncertainty added by the allowances (0 when every fee is known). */
  allowanceSigma: number;
}

/**
 * The ask path: cash (CNY) to buy at `price` in `currency`: the deposit chain inverted at the price,
 * converted into CNY. Unknown deposit: price / allowanceFactor('deposit') in CNY.
 * Throws ChainError when the chain cannot apply or cannot be inverted.
 */
export function askPath(fees: MarketFees, currency: string, rates: UsdRates): FeePath {
  if (fees.deposit === null) {
    const k = officialRate(rates, currency, VALUATION_CURRENCY).div(allowanceFactor('deposit'));
    return { a: tidy(k), b: new Money(0), unknown: ['deposit'], allowanceSigma: allowanceSigma('deposit') };
  }
  const cash = fees.deposit.startCurrency ?? VALUATION_CURRENCY;
  const d = chainAffine(fees.deposit, cash, rates); // cash -> credited, in d.currency
  if (!d.a.gt(0)) throw new ChainError('deposit chain cannot be inverted');
  // Credited amount needed = price in d.currency; cash = (needed - b) / a; then into CNY.
  const needed = officialRate(rates, currency, d.currency);
  const toCny = officialRate(rates, cash, VALUATION_CURRENCY);
  return { a: tidy(needed.div(d.a).times(toCny)), b: tidy(d.b.negated().div(d.a).times(toCny)), unknown: [], allowanceSigma: 0 };
}

/**
 * The bid path: cash (CNY) received for selling into a buy order at `price` in `currency`:
 * withdraw(sale(price)) converted into CNY; an unknown slot uses its allowance factor.
 * Throws ChainError when a chain cannot apply.
 */
export function bidPath(fees: MarketFees, currency: string, rates: UsdRates): FeePath {
  const unknown: FeePath['unknown'] = [];
  let sigma2 = 0;
  let m: Affine = { a: new Money(1), b: new Money(0), currency };
  for (const purpose of ['sale', 'withdraw'] as const) {
    const chain = fees[purpose];
    if (chain === null) {
      unknown.push(purpose);
      sigma2 += allowanceSigma(purpose) ** 2;
      m = { a: m.a.times(allowanceFactor(purpose)), b: m.b.times(allowanceFactor(purpose)), currency: m.currency };
    } else {
      m = then(m, chainAffine(chain, m.currency, rates));
    }
  }
  m = then(m, convertAt(rates, m.currency, VALUATION_CURRENCY));
  return { a: tidy(m.a), b: tidy(m.b), unknown, allowanceSigma: Math.sqrt(sigma2) };
}

/**
 * Path coefficients to 24 significant digits: a round trip through a currency (CNY -> USD -> CNY at
 * 40-digit precision) leaves 0.99999...9 instead of 1; 24 digits keep every real fee and rate exact.
 */
function tidy(x: Money): Money {
  return x.toSignificantDigits(24);
}

/** The cash amount of a price on a path: a * price + b. */
export function pathAmount(path: FeePath, price: Money): Money {
  return path.a.times(price).plus(path.b);
}
