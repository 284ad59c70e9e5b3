/**
 * Fee paths: the cash a source quote stands for, in CNY, fees included (spec: ValuationOut.ask_amount
 * "cash cost of buying in CNY (fees included)", bid_amount "cash received in CNY after fees").
 *
 * Chains (spec: PublicCalculationChainOut) and their arithmetic, affine in the amount, are src/fees/chain.ts.
 *
 * The money paths (all amounts decimal.js, never floats):
 * - ask (a sell listing at price P in the market currency): the buyer's cash D such that
 *   deposit(D) = P, i.e. the deposit chain inverted, then D converted into CNY;
 * - bid (a buy order at price P): withdraw(sale(P)) converted into CNY.
 * Between chains, and into a chain's `start_currency`, amounts are converted at the official USD rates
 * (`auto`: amount x usd_rate(from) / usd_rate(to)), the same rule as an `auto` convert step.
 *
 * Every step is affine in the amount (fees/chain.ts), so each path is `cash = a * price + b` with decimal `a`, `b`
 * worked out once per market, side and currency, and the inverse of a deposit chain is exact.
 *
 * A null slot (spec: "never means free") is replaced by the documented allowance of its purpose
 * (UNKNOWN_FEE_ALLOWANCE): the amount is multiplied by the midpoint factor 1 - max/2, and the source's
 * log-scale standard uncertainty gains ln(1/(1 - max))/sqrt(12) (a fee uniformly anywhere between 0 and
 * `max`). Whether such a source is used at all is decided by the consensus (see consensus.ts).
 */
import { Money } from '../lib/money.js';
import { ChainError, chainAffine, officialRate, type Affine, type MarketFees, type UsdRates } from '../fees/chain.js';

/** The currency valuations are expressed in (spec: CSCP quote, CNY). */
export const VALUATION_CURRENCY = 'CNY';

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
