/**
 * Fees applied to one amount, step by step (issue: fees applied, points 1 and 5; docs/fees.md): what a
 * buyer pays to get an item onto a market, or what a seller receives after its sale and withdraw fees,
 * in a requested currency through the official USD rates, with every step, running amount and rate shown.
 *
 * Paths (the chains are read as in src/fees/chain.ts, "money in -> money out after the fee"):
 * - `deposit`: the cash D whose deposit credits exactly the price (the deposit chain inverted; the trace
 *   runs the chain forward from D and ends at the price);
 * - `sale`: the sale chain applied to the price (the seller's proceeds on the market);
 * - `withdraw`: the withdraw chain applied to the price (a balance of that size cashed out);
 * - `sale_then_withdraw`: the sale chain, then the withdraw chain (cash in the seller's hand).
 * A chain with a start currency first converts the running amount into it at official rates; the
 * result is converted into the requested currency (default: the amount's own) at official rates.
 *
 * Unknown is never free: a null slot on the path answers `priced: false`, no amount, and names the
 * purpose. Arithmetic is decimal.js throughout; the running amount is rounded only where the marketplace
 * rounds (an exact rule such as Steam's; every other step keeps full precision).
 */
import { Money } from '../lib/money.js';
import { ChainError, chainAffine, conversionRate, groupConversion, officialRate, type Chain, type MarketFees, type Step, type UsdRates } from './chain.js';
import { steamSale } from './exact-rules.js';

/** A path through a market's fee schedule (GraphQL enum FeePath). */
export type FeePathKind = 'deposit' | 'sale' | 'withdraw' | 'sale_then_withdraw';
type Purpose = 'deposit' | 'sale' | 'withdraw';

/** One step as applied: the running amount before and after, each with its currency. */
export interface AppliedStep {
  /** The slot the step belongs to; `conversion` for the conversions between chains and into the requested currency. */
  purpose: Purpose | 'conversion';
  /** `fee`, `convert`, `convert_operator_group` (chain steps), `steam_market_fee` (an exact rule) or `official_rate`. */
  kind: 'fee' | 'convert' | 'convert_operator_group' | 'steam_market_fee' | 'official_rate';
  /** The fee operator (`add`, `sub`, `mul`, `div`), the group rule (`min`, `max`, `avg`), or null. */
  operator: string | null;
  /** The operand: the fee value, the conversion rate (target units per source unit), or a rule's total fee. */
  value: Money | null;
  /** Currency of `value` for `add`/`sub` fees and exact rules; null otherwise. */
  valueCurrencyCode: string | null;
  amountBefore: Money;
  currencyBefore: string;
  amount: Money;
  currencyCode: string;
  /** A rounding or rule the step applied, in words (null when none). */
  note: string | null;
}

/** An official USD rate the answer used, with the day its source published it. */
export interface RateUsed {
  currencyCode: string;
  /** USD per unit (spec: CurrencyOut.usd_rate). */
  usdRate: Money;
  /** YYYY-MM-DD; null when the source gives none. */
  rateDate: string | null;
}

/** The answer of `afterFees`: an amount, or why there is none. */
export interface AfterFees {
  path: FeePathKind;
  /** False when a fee on the path is unknown or a step cannot apply: then `amount` is null. */
  priced: boolean;
  amount: Money | null;
  currencyCode: string;
  /** Purposes on the path whose slot is null (fee unknown: never treated as free). */
  unknownPurposes: Purpose[];
  /** Why the answer is unpriced; null when priced. */
  reason: string | null;
  steps: AppliedStep[];
  rates: RateUsed[];
}

/** What `afterFees` needs of the replica's fee book. */
export interface FeeContext {
  fees: MarketFees;
  rates: UsdRates;
  rateDates: ReadonlyMap<string, string>;
}

const PURPOSES: Record<FeePathKind, Purpose[]> = {
  deposit: ['deposit'],
  sale: ['sale'],
  withdraw: ['withdraw'],
  sale_then_withdraw: ['sale', 'withdraw'],
};

/**
 * `amount` in `from` as `to` at official rates: amount x usd(from) / usd(to), dividing last, so a round
 * trip (CNY -> USD -> CNY) gives the amount back exactly instead of 40 digits of 9s.
 */
function atOfficialRates(rates: UsdRates, amount: Money, from: string, to: string): Money {
  if (from === to) return amount;
  officialRate(rates, from, to); // throws ChainError without a rate
  return amount.times(rates.get(from)!).div(rates.get(to)!);
}

/** Collects the steps and rates of one answer. */
class Trace {
  readonly steps: AppliedStep[] = [];
  private readonly used = new Map<string, RateUsed>();
  constructor(private readonly ctx: FeeContext) {}

  rate(code: string): void {
    const usd = this.ctx.rates.get(code);
    if (usd && !this.used.has(code)) this.used.set(code, { currencyCode: code, usdRate: usd, rateDate: this.ctx.rateDates.get(code) ?? null });
  }

  /** Converts at official rates, as a step of `purpose` (no step when the currencies are equal). */
  convert(amount: Money, from: string, to: string, purpose: AppliedStep['purpose']): Money {
    if (from === to) return amount;
    const r = officialRate(this.ctx.rates, from, to);
    this.rate(from);
    this.rate(to);
    const out = atOfficialRates(this.ctx.rates, amount, from, to);
    this.steps.push({ purpose, kind: 'official_rate', operator: null, value: r, valueCurrencyCode: null, amountBefore: amount, currencyBefore: from, amount: out, currencyCode: to, note: `${from} to ${to} at the official USD rates` });
    return out;
  }

  get rates(): RateUsed[] {
    return [...this.used.values()];
  }
}

/** Applies one chain step to a running amount (the same arithmetic as chain.ts's affine maps). Throws ChainError. */
function applyStep(trace: Trace, ctx: FeeContext, purpose: Purpose, step: Step, amount: Money, currency: string): { amount: Money; currency: string } {
  const push = (s: Omit<AppliedStep, 'purpose' | 'amountBefore' | 'currencyBefore'>) => trace.steps.push({ purpose, amountBefore: amount, currencyBefore: currency, ...s });
  if (step.kind === 'fee') {
    let out: Money;
    let note: string | null = null;
    if (step.operator === 'mul') out = amount.times(step.value);
    else if (step.operator === 'div') {
      if (step.value.isZero()) throw new ChainError('fee div by 0');
      out = amount.div(step.value);
    } else {
      const valueCurrency = step.currencyCode ?? currency;
      let v = step.value;
      if (valueCurrency !== currency) {
        v = atOfficialRates(ctx.rates, v, valueCurrency, currency);
        trace.rate(valueCurrency);
        trace.rate(currency);
        note = `${step.value.toFixed()} ${valueCurrency} is ${v.toFixed()} ${currency} at the official USD rates`;
      }
      out = step.operator === 'add' ? amount.plus(v) : amount.minus(v);
    }
    push({ kind: 'fee', operator: step.operator, value: step.value, valueCurrencyCode: step.operator === 'add' || step.operator === 'sub' ? (step.currencyCode ?? currency) : null, amount: out, currencyCode: currency, note });
    return { amount: out, currency };
  }
  if (step.kind === 'convert') {
    const r = conversionRate(step.convert, currency, ctx.rates);
    if (r === null) throw new ChainError(`convert ${step.convert.from}->${step.convert.to} does not apply to ${currency}`);
    let out = amount.times(r);
    if (step.convert.mode === 'auto') {
      trace.rate(step.convert.from);
      trace.rate(step.convert.to);
      out = atOfficialRates(ctx.rates, amount, step.convert.from, step.convert.to);
    }
    push({ kind: 'convert', operator: step.convert.mode, value: r, valueCurrencyCode: null, amount: out, currencyCode: step.convert.to, note: null });
    return { amount: out, currency: step.convert.to };
  }
  const { rate: r, to, members } = groupConversion(step, currency, ctx.rates);
  for (const c of members) {
    if (c.mode === 'auto') {
      trace.rate(c.from);
      trace.rate(c.to);
    }
  }
  const out = amount.times(r);
  push({ kind: 'convert_operator_group', operator: step.rule, value: r, valueCurrencyCode: null, amount: out, currencyCode: to, note: null });
  return { amount: out, currency: to };
}

/**
 * Runs one chain forward from `amount` in `currency` (converted into its start currency first), its exact
 * rule in place of its fee steps when it has one. Throws ChainError when a step cannot apply.
 */
function runChain(trace: Trace, ctx: FeeContext, purpose: Purpose, chain: Chain, amount: Money, currency: string): { amount: Money; currency: string } {
  const start = chain.startCurrency ?? currency;
  let m = { amount: trace.convert(amount, currency, start, 'conversion'), currency: start };
  let ruleApplied = false;
  for (const step of chain.steps) {
    if (step.kind === 'fee' && chain.exactRule) {
      if (ruleApplied) continue;
      ruleApplied = true;
      const sale = steamSale(m.amount, chain.exactRule);
      if (sale === null) throw new ChainError(`${m.amount.toFixed()} ${m.currency} is not a price Steam accepts (whole cents, at least 0.03)`);
      trace.steps.push({
        purpose,
        kind: 'steam_market_fee',
        operator: null,
        value: sale.steamFee.plus(sale.gameFee),
        valueCurrencyCode: m.currency,
        amountBefore: m.amount,
        currencyBefore: m.currency,
        amount: sale.proceeds,
        currencyCode: m.currency,
        note: `Steam fee ${sale.steamFee.toFixed()} + game fee ${sale.gameFee.toFixed()}: each ${chain.exactRule.steamFeeRate.toFixed()} / ${chain.exactRule.gameFeeRate.toFixed()} of the proceeds rounded down to ${chain.exactRule.unit.toFixed()}, at least ${chain.exactRule.minimumFee.toFixed()}`,
      });
      m = { amount: sale.proceeds, currency: m.currency };
      continue;
    }
    m = applyStep(trace, ctx, purpose, step, m.amount, m.currency);
  }
  return m;
}

/**
 * The amount of `price` (in `currency`) after the fees of `path`, in `target` (default `currency`).
 * Never throws for a chain that cannot apply: the answer is unpriced with the reason. Throws ChainError
 * only when `target` has no official rate (callers check the currency first).
 */
export function afterFees(ctx: FeeContext, path: FeePathKind, price: Money, currency: string, target: string = currency): AfterFees {
  const trace = new Trace(ctx);
  const unpriced = (reason: string, unknownPurposes: Purpose[] = []): AfterFees => ({
    path,
    priced: false,
    amount: null,
    currencyCode: target,
    unknownPurposes,
    reason,
    steps: trace.steps,
    rates: trace.rates,
  });
  const purposes = PURPOSES[path];
  const unknown = purposes.filter((p) => ctx.fees[p] === null);
  if (unknown.length > 0) return unpriced(`The ${unknown.join(' and ')} fee of this market is not known: no amount is given (unknown is never free).`, unknown);
  try {
    let m = { amount: price, currency };
    if (path === 'deposit') {
      // The cash D with deposit(D) = price: the chain inverted through its affine form, then run forward from D.
      const chain = ctx.fees.deposit!;
      const cash = chain.startCurrency ?? currency;
      const d = chainAffine(chain, cash, ctx.rates);
      if (!d.a.gt(0)) throw new ChainError('the deposit chain cannot be inverted');
      const needed = price.times(officialRate(ctx.rates, currency, d.currency));
      const paid = needed.minus(d.b).div(d.a);
      runChain(trace, ctx, 'deposit', chain, paid, cash);
      m = { amount: paid, currency: cash };
    } else {
      for (const p of purposes) m = runChain(trace, ctx, p, ctx.fees[p]!, m.amount, m.currency);
    }
    const amount = trace.convert(m.amount, m.currency, target, 'conversion');
    return { path, priced: true, amount, currencyCode: target, unknownPurposes: [], reason: null, steps: trace.steps, rates: trace.rates };
  } catch (e) {
    if (e instanceof ChainError) return unpriced(e.message);
    throw e;
  }
}

/**
 * `amount` in `from` converted into `to` at official rates as an after-fees answer with no fee (one
 * `official_rate` step when the currencies differ): a route's buy leg paid from a balance. Never throws: a
 * currency without a rate gives an unpriced answer with the reason.
 */
export function withoutFees(ctx: FeeContext, amount: Money, from: string, to: string): Omit<AfterFees, 'path'> {
  const trace = new Trace(ctx);
  try {
    const out = trace.convert(amount, from, to, 'conversion');
    return { priced: true, amount: out, currencyCode: to, unknownPurposes: [], reason: null, steps: trace.steps, rates: trace.rates };
  } catch (e) {
    if (!(e instanceof ChainError)) throw e;
    return { priced: false, amount: null, currencyCode: to, unknownPurposes: [], reason: e.message, steps: [], rates: [] };
  }
}

/** An amount converted at official rates, with the rate and the rates' dates (GraphQL `converted`). */
export interface Converted {
  amount: Money;
  currencyCode: string;
  /** Units of `currencyCode` per unit of the source currency. */
  rate: Money;
  rates: RateUsed[];
}

/** `amount` in `from` converted into `to` at official rates. Throws ChainError when either has no rate. */
export function convertAmount(ctx: Pick<FeeContext, 'rates' | 'rateDates'>, amount: Money, from: string, to: string): Converted {
  const rate = officialRate(ctx.rates, from, to);
  const codes = from === to ? [from] : [from, to];
  return {
    amount: atOfficialRates(ctx.rates, amount, from, to),
    currencyCode: to,
    rate,
    rates: codes.filter((c) => ctx.rates.has(c)).map((c) => ({ currencyCode: c, usdRate: ctx.rates.get(c)!, rateDate: ctx.rateDates.get(c) ?? null })),
  };
}
