/**
 * Cross-market routes in GraphQL (issue: fees applied, point 3; src/fees/routes.ts): `Item.routes` on the
 * item traversal (billed with `item`, as GET /prices) and the `routes` root field, which is GET
 * /prices/routes (its own catalogue row, `getRoutes`: billed and rate limited like every row).
 */
import type { ArgBuilder } from '@pothos/core';
import { builder, listComplexity } from '../builder.js';

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
import * as v from '../../validation/params.js';
import { notFound, validationError } from '../../lib/errors.js';
import { tradeRoutes, type RouteLeg, type RouteOptions, type TradeRoute } from '../../fees/routes.js';
import { CS2_APP_ID } from '../../services/importers.js';
import type { MarketQuote } from '../../services/quotes.js';
import type { Context } from '../context.js';
import { AppliedFeeStepRef, RateUsedRef, ROUNDED } from './fees-applied.js';
import { roundToCurrency } from '../../lib/money.js';
import { ItemRef } from './quotes.js';
import { shapeFields } from '../shape-fields.js';
import { ItemRoutesOut, RouteLegOut, RouteOut } from '../../shapes/routes.js';

/** Bound of one item's route list for the cost limit (48 buy quotes x 48 sell quotes). */
const MAX_ROUTES = 48 * 48;

const FundingEnum = builder.enumType('RouteFunding', {
  description: "cash: the buyer pays the market's deposit fees to fund the purchase; balance: a balance already held on the market is spent.",
  values: ['cash', 'balance'] as const,
});
const PayoutEnum = builder.enumType('RoutePayout', {
  description: "cash: the seller pays the market's sale then withdraw fees; balance: the proceeds stay on the market (sale fees only).",
  values: ['cash', 'balance'] as const,
});
const LegPathEnum = builder.enumType('RouteLegPath', { values: ['deposit', 'balance', 'sale', 'sale_then_withdraw'] as const });
const RouteStatusEnum = builder.enumType('RouteStatus', {
  description: 'priced: both legs have known fees; unpriced: a fee on a leg is unknown (never ranked as profitable).',
  values: ['priced', 'unpriced'] as const,
});

const RouteLegRef = builder.objectRef<RouteLeg>('RouteLeg').implement({
  description: "One leg of a route: the quote it uses and its amount in the route's currency after its market's fees (REST: RouteLegOut).",
  fields: (t) => ({
    ...shapeFields(t, RouteLegOut, {
      read: {
        market_currency_code: (l) => l.currencyCode,
        market_price_amount: (l) => l.price,
        priced: (l) => l.fees.priced,
        amount: (l) => l.fees.amount,
        unknown_purposes: (l) => l.fees.unknownPurposes,
        reason: (l) => l.fees.reason,
        steps: (l) => l.fees.steps,
        rates: (l) => l.fees.rates,
      },
      refs: { side: { type: 'String' }, path: { type: LegPathEnum }, unknown_purposes: { type: ['String'] }, steps: { type: [AppliedFeeStepRef] }, rates: { type: [RateUsedRef] } },
      descriptions: {
        credibility: "2^(-age / 24 h): 1 for a quote observed at the request's moment.",
        amount: "Cost (buy leg) or proceeds (sell leg) in the route's currency, exact; null when a fee is unknown.",
      },
    }),
    amountRounded: t.field({
      type: 'Decimal',
      nullable: true,
      description: ROUNDED('amount', "the route's currency"),
      resolve: (l) => (l.fees.amount === null ? null : roundToCurrency(l.fees.amount, l.fees.currencyCode)),
    }),
  }),
});

const RouteRef = builder.objectRef<TradeRoute>('Route').implement({
  description: 'Buy on one market, sell on another: net and margin when both legs are priced (REST: RouteOut).',
  fields: (t) => ({
    ...shapeFields(t, RouteOut, {
      read: { status: (r) => (r.priced ? 'priced' : 'unpriced'), net_amount: (r) => r.net },
      refs: { buy: { type: RouteLegRef }, sell: { type: RouteLegRef }, status: { type: RouteStatusEnum } },
      descriptions: {
        net_amount: 'Proceeds minus cost, exact; null when unpriced.',
        margin: 'net / cost as a fraction (6 decimals); null when unpriced.',
        credibility: "The lower of the legs' credibilities.",
      },
    }),
    netAmountRounded: t.field({
      type: 'Decimal',
      nullable: true,
      description: ROUNDED('netAmount', "the route's currency"),
      resolve: (r) => (r.net === null ? null : roundToCurrency(r.net, r.sell.fees.currencyCode)),
    }),
  }),
});

interface ItemRoutes {
  appId: string;
  marketHashName: string;
  currencyCode: string;
  fund: 'cash' | 'balance';
  payout: 'cash' | 'balance';
  routes: TradeRoute[];
}

const ItemRoutesRef = builder.objectRef<ItemRoutes>('ItemRoutes').implement({
  description: "An item's routes in one currency, ranked (REST: ItemRoutesOut).",
  fields: (t) => {
    const fields = shapeFields(t, ItemRoutesOut, { refs: { fund: { type: FundingEnum }, payout: { type: PayoutEnum }, routes: { type: [RouteRef] } } });
    // The route list is priced for the cost limit by its bound.
    return { ...fields, routes: t.field({ type: [RouteRef], extensions: listComplexity(MAX_ROUTES), resolve: (x) => x.routes }) };
  },
});

/** The ranked routes of `quotes` for the arguments; 422 when `currency` has no official rate. */
async function routesOf(ctx: Context, quotes: readonly MarketQuote[], args: Omit<RouteOptions, 'now'>): Promise<TradeRoute[]> {
  const book = await ctx.loaders.feeBook(ctx.now);
  if (!book.rates.has(args.currency)) {
    throw validationError([{ location: 'argument', field: 'currency', message: `is not an official currency (GET /currencies lists them): ${args.currency}` }]);
  }
  return tradeRoutes(quotes, book, { ...args, now: ctx.now });
}

/** The route arguments both fields share (`t.arg` of either field builder). */
const routeArgs = (arg: ArgBuilder<Types>) => ({
  currency: arg.string({ required: true, description: 'The currency of every amount (an official currency code).' }),
  buyOn: arg.stringList({ required: false, description: 'Markets to buy on (default: every market with an ask).' }),
  sellOn: arg.stringList({ required: false, description: 'Markets to sell on (default: every market with an ask or a bid).' }),
  fund: arg({ type: FundingEnum, required: true, defaultValue: 'cash' }),
  payout: arg({ type: PayoutEnum, required: true, defaultValue: 'cash' }),
  minCredibility: arg.float({ required: true, defaultValue: 0, description: 'Drop routes whose credibility is lower (0-1).' }),
});

builder.objectFields(ItemRef, (t) => ({
  routes: t.field({
    type: [RouteRef],
    description:
      "Buy-here-sell-there pairs between this item's quotes, each leg after its market's official fees, in `currency` at official rates, ranked by margin; a leg with an unknown fee makes its route unpriced.",
    extensions: listComplexity(MAX_ROUTES),
    args: routeArgs(t.arg),
    validate: v.itemRoutesArgs,
    resolve: (item, args, ctx) =>
      routesOf(ctx, item.quotes, { currency: args.currency, buyOn: args.buyOn ?? null, sellOn: args.sellOn ?? null, fund: args.fund, payout: args.payout, minCredibility: args.minCredibility }),
  }),
}));

builder.queryFields((t) => ({
  routes: t.field({
    type: ItemRoutesRef,
    description:
      'The routes of one item (REST: GET /prices/routes; needs an API key; billed and rate limited as its catalogue row). Error `not_found` when the item has no quotes.',
    args: {
      marketHashName: t.arg.string({ required: true }),
      appId: t.arg.string({ required: true, defaultValue: CS2_APP_ID }),
      ...routeArgs(t.arg),
    },
    // Arguments: the metering plugin's rule (validation/params.ts meteredFieldArgs), checked before the charge.
    resolve: async (_r, args, ctx) => {
      await ctx.requireUser('getRoutes');
      const quotes = await ctx.loaders.quotesOf(args.appId, args.marketHashName);
      if (!quotes) throw notFound(`No quotes for ${JSON.stringify(args.marketHashName)} (app ${args.appId}).`);
      const routes = await routesOf(ctx, quotes, { currency: args.currency, buyOn: args.buyOn ?? null, sellOn: args.sellOn ?? null, fund: args.fund, payout: args.payout, minCredibility: args.minCredibility });
      return { appId: args.appId, marketHashName: args.marketHashName, currencyCode: args.currency, fund: args.fund, payout: args.payout, routes };
    },
  }),
}));
