/**
 * Fees applied on each quote (issue: fees applied, points 1, 2 and 5; docs/fees.md): `MarketQuote.afterFees`
 * (what buying or selling at the quote really costs or pays, step by step) and `MarketQuote.converted`
 * (the price in another currency at official rates). GraphQL only: REST quotes and fee schedules keep the
 * spec's shapes. Both ride on the quote's root field (`prices`, `item`, `batchPrices`) and its billing.
 */
import { builder } from '../builder.js';
import { shapeFields } from '../shape-fields.js';
import { AppliedFeeStepOut, RateUsedOut } from '../../shapes/routes.js';
import * as v from '../../validation/params.js';
import { validationError } from '../../lib/errors.js';
import { roundToCurrency } from '../../lib/money.js';
import { afterFees, convertAmount, type AfterFees, type AppliedStep, type Converted, type RateUsed } from '../../fees/applied.js';
import { MarketQuoteRef } from './quotes.js';
import type { FeeBook } from '../../valuation/daily.js';
import { VALUATION_MARKET } from '../../quotes/quotes.js';

/**
 * The description of a `<field>Rounded` sibling (docs/graphql.md, amounts): `field` at the precision of `currency`
 * (words: a field in backticks, or a phrase); the exact value stays in `field`.
 */
export const ROUNDED = (field: string, currency: string) =>
  `\`${field}\` rounded to the decimals of ${currency} (its ISO 4217 minor unit, 2 when ISO lists none; half to even). \`${field}\` keeps the exact value.`;

const FeePathEnum = builder.enumType('FeePath', {
  description:
    'DEPOSIT: cash a buyer pays so the market credits the price; SALE: proceeds of a sale at the price; WITHDRAW: cash out of a balance of the price; SALE_THEN_WITHDRAW: cash in hand after selling at the price.',
  values: {
    DEPOSIT: { value: 'deposit' },
    SALE: { value: 'sale' },
    WITHDRAW: { value: 'withdraw' },
    SALE_THEN_WITHDRAW: { value: 'sale_then_withdraw' },
  } as const,
});

export const RateUsedRef = builder.objectRef<RateUsed>('RateUsed').implement({
  description: 'An official USD rate an answer used, with the day its source published it (REST: RateUsedOut).',
  fields: (t) =>
    shapeFields(t, RateUsedOut, {
      read: { rate_date: (r) => (r.rateDate ? new Date(`${r.rateDate}T00:00:00Z`) : null) },
      descriptions: { usd_rate: 'USD per unit (REST: CurrencyOut.usd_rate).', rate_date: 'The day the rate was published; null when its source gives none.' },
    }),
});

export const AppliedFeeStepRef = builder.objectRef<AppliedStep>('AppliedFeeStep').implement({
  description: 'One step of a fee path as applied to the amount: its operand and the running amount before and after (REST: AppliedFeeStepOut).',
  fields: (t) => ({
    ...shapeFields(t, AppliedFeeStepOut, {
      refs: { purpose: { type: 'String' }, kind: { type: 'String' } },
      descriptions: {
        purpose: '`deposit`, `sale`, `withdraw`, or `conversion` (between chains and into the requested currency).',
        kind: "`fee`, `convert`, `convert_operator_group` (the chain's steps), `steam_market_fee` (Steam's exact rule in place of its chain's fee step), `official_rate`.",
        operator: 'Fee operator (add, sub, mul, div), convert mode (auto, fixed) or group rule (min, max, avg).',
        value: 'Fee value, conversion rate, or the total fee of an exact rule.',
        amount: 'The running amount after this step (rounded only where the marketplace rounds).',
      },
    }),
    amountRounded: t.field({ type: 'Decimal', description: ROUNDED('amount', '`currencyCode`'), resolve: (s) => roundToCurrency(s.amount, s.currencyCode) }),
    amountBeforeRounded: t.field({ type: 'Decimal', description: ROUNDED('amountBefore', '`currencyBefore`'), resolve: (s) => roundToCurrency(s.amountBefore, s.currencyBefore) }),
  }),
});

const AfterFeesRef = builder.objectRef<AfterFees>('AfterFees').implement({
  description: 'A quote price after the fees of one path, in the requested currency; unpriced (no amount) when a fee on the path is unknown.',
  fields: (t) => ({
    path: t.field({ type: FeePathEnum, resolve: (a) => a.path }),
    priced: t.exposeBoolean('priced'),
    amount: t.field({ type: 'Decimal', nullable: true, description: 'Exact (rounded only where the marketplace rounds).', resolve: (a) => a.amount }),
    amountRounded: t.field({ type: 'Decimal', nullable: true, description: ROUNDED('amount', '`currencyCode`'), resolve: (a) => (a.amount === null ? null : roundToCurrency(a.amount, a.currencyCode)) }),
    currencyCode: t.exposeString('currencyCode'),
    unknownPurposes: t.exposeStringList('unknownPurposes', { description: 'Slots on the path whose fee is unknown (null in the schedule).' }),
    reason: t.exposeString('reason', { nullable: true }),
    steps: t.field({ type: [AppliedFeeStepRef], resolve: (a) => a.steps }),
    rates: t.field({ type: [RateUsedRef], resolve: (a) => a.rates }),
  }),
});

const ConvertedRef = builder.objectRef<Converted>('ConvertedAmount').implement({
  description: 'An amount converted at the official USD rates, with the rate and the rates\' dates.',
  fields: (t) => ({
    amount: t.field({ type: 'Decimal', description: 'Exact (the rates\' product, up to 40 significant digits).', resolve: (c) => c.amount }),
    amountRounded: t.field({ type: 'Decimal', description: ROUNDED('amount', '`currencyCode`'), resolve: (c) => roundToCurrency(c.amount, c.currencyCode) }),
    currencyCode: t.exposeString('currencyCode'),
    rate: t.field({ type: 'Decimal', description: 'Units of currencyCode per unit of the quote\'s currency.', resolve: (c) => c.rate }),
    rates: t.field({ type: [RateUsedRef], resolve: (c) => c.rates }),
  }),
});

/** The request's fee book, after checking that `currency` (when given) has an official rate: 422 otherwise. */
async function bookFor(loadBook: () => Promise<FeeBook>, currency: string | null | undefined): Promise<FeeBook> {
  const book = await loadBook();
  if (currency && !book.rates.has(currency)) {
    throw validationError([{ location: 'argument', field: 'currency', message: `is not an official currency (GET /currencies lists them): ${currency}` }]);
  }
  return book;
}

builder.objectFields(MarketQuoteRef, (t) => ({
  afterFees: t.field({
    type: AfterFeesRef,
    nullable: true,
    description:
      "The quote's price after the fees of `path` (this market's official schedule; Steam's sale by its exact per-component rule), in `currency` (default the market's) at official rates, with every step and rate. Unpriced when a fee on the path is unknown or the quote has no price; null for CSCP (no marketplace).",
    args: {
      path: t.arg({ type: FeePathEnum, required: true }),
      currency: t.arg.string({ required: false }),
    },
    validate: v.afterFeesArgs,
    resolve: async (q, args, ctx) => {
      if (q.marketCode === VALUATION_MARKET) return null;
      const book = await bookFor(() => ctx.loaders.feeBook(ctx.now), args.currency);
      const target = args.currency ?? q.currencyCode;
      const feeCtx = { fees: book.feesOf(q.marketCode), rates: book.rates, rateDates: book.rateDates };
      if (q.price === null) {
        return { path: args.path, priced: false, amount: null, currencyCode: target, unknownPurposes: [], reason: 'The quote has no price (delisted or never listed).', steps: [], rates: [] };
      }
      return afterFees(feeCtx, args.path, q.price, q.currencyCode, target);
    },
  }),
  converted: t.field({
    type: ConvertedRef,
    nullable: true,
    description: "The quote's price in `currency` at the official USD rates, with the rate used and its date (quotes themselves stay in the market's currency). Null when the quote has no price.",
    args: { currency: t.arg.string({ required: true }) },
    validate: v.convertedArgs,
    resolve: async (q, args, ctx) => {
      const book = await bookFor(() => ctx.loaders.feeBook(ctx.now), args.currency);
      if (q.price === null) return null;
      if (!book.rates.has(q.currencyCode)) throw new Error(`no official rate for the quote currency ${q.currencyCode}`);
      return convertAmount(book, q.price, q.currencyCode, args.currency);
    },
  }),
}));
