/**
 * Cross-market routes in GraphQL (issue: fees applied, point 3; src/fees/routes.ts): `Item.routes` on the
 * item traversal (billed with `item`, as GET /prices) and the `routes` root field, which is GET
 * /prices/routes (its own catalogue row, `getRoutes`: billed and rate limited like every row).
 */
import { builder, listComplexity } from '../builder.js';
import { only, paramArgs } from '../args.js';
import { argsRule } from '../../operations/operation.js';
import getRoutesOp from '../../operations/get-routes.js';
import getTopRoutesOp from '../../operations/get-top-routes.js';
import { FundingEnum, PayoutEnum } from '../arg-types.js';

import * as v from '../../validation/params.js';
import { notFound, validationError } from '../../lib/errors.js';
import { rankedRoutes, tradeRoutes, type LeftOut, type RouteLeg, type RouteOptions, type TradeRoute } from '../../fees/routes.js';
import { profileOf, type CallerFee, type FeeProfile } from '../../fees/profile.js';
import { topLeftOutReason, topRoutes, type TopRoute } from '../../quotes/top-routes.js';
import { Money } from '../../lib/money.js';
import type { MarketQuote } from '../../quotes/quotes.js';
import type { Context } from '../context.js';
import { AppliedFeeStepRef, RateUsedRef, ROUNDED } from './fees-applied.js';
import { roundToCurrency } from '../../lib/money.js';
import { ItemRef } from './quotes.js';
import { shapeFields } from '../shape-fields.js';
import { ItemRoutesOut, RouteLegOut, RouteOut, TopRouteOut, TopRoutesOut } from '../../shapes/routes.js';

/** Bound of one item's route list for the cost limit (48 buy quotes x 48 sell quotes). */
const MAX_ROUTES = 48 * 48;



const LegPathEnum = builder.enumType('RouteLegPath', { values: ['deposit', 'balance', 'sale', 'sale_then_withdraw'] as const });
const RouteStatusEnum = builder.enumType('RouteStatus', {
  description: 'priced: both legs have known fees; unpriced: a fee on a leg is unknown (never ranked as profitable).',
  values: ['priced', 'unpriced'] as const,
});

const FeeSourceEnum = builder.enumType('RouteFeeSource', {
  description: "official: every fee the route used is its market's official one; caller: a leg used the caller's rate (feeProfile) for a fee whose official value is unknown.",
  values: ['official', 'caller'] as const,
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
      refs: { side: { type: 'String' }, path: { type: LegPathEnum }, unknown_purposes: { type: ['String'] }, caller_fees: { type: ['String'] }, steps: { type: [AppliedFeeStepRef] }, rates: { type: [RateUsedRef] } },
      descriptions: {
        credibility: "2^(-age / 24 h): 1 for a quote observed at the request's moment.",
        quantity: 'Items listed (ask) or wanted (bid) at the price, as the source reports; null when it reports none.',
        caller_fees: "Purposes of this leg priced with the caller's rates (feeProfile) because the official fee is unknown.",
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
      read: { status: (r) => (r.priced ? 'priced' : 'unpriced'), net_amount: (r) => r.net, hold_days: (r) => r.hold.days, hold_source: (r) => r.hold.source, hold_note: (r) => r.hold.note },
      refs: { buy: { type: RouteLegRef }, sell: { type: RouteLegRef }, status: { type: RouteStatusEnum }, fee_source: { type: FeeSourceEnum } },
      descriptions: {
        hold_days:
          'Days an item bought on the buy market is locked before it can be traded to the sell market and sold there (data/trade-holds.json; Steam Trade Protection: 7 days since 2025-07-16); null when unknown.',
        hold_source: 'Where hold_days comes from; null when unknown.',
        hold_note: 'What the hold covers, or why it is unknown.',
        quantity_known: 'True when both legs report a quantity (only then did minQuantity check the route).',
        fee_source: "caller when a leg used the caller's rates (feeProfile), else official.",
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
  unpricedLeftOut: number;
  leftOutReason: string | null;
}

const ItemRoutesRef = builder.objectRef<ItemRoutes>('ItemRoutes').implement({
  description: "An item's routes in one currency, ranked (REST: ItemRoutesOut).",
  fields: (t) => {
    const fields = shapeFields(t, ItemRoutesOut, {
      refs: { fund: { type: FundingEnum }, payout: { type: PayoutEnum }, routes: { type: [RouteRef] } },
      descriptions: {
        unpriced_left_out: 'Routes left out because a fee on a leg is unknown (0 with includeUnpriced, which lists them after the priced ones).',
        left_out_reason: 'Which unknown fees left routes out, and how to price them (feeProfile); null when none was left out.',
      },
    });
    // The route list is priced for the cost limit by its bound.
    return { ...fields, routes: t.field({ type: [RouteRef], extensions: listComplexity(MAX_ROUTES), resolve: (x) => x.routes }) };
  },
});

/** The fee book of the request; 422 when `currency` has no official rate. */
async function bookFor(ctx: Context, currency: string) {
  const book = await ctx.loaders.feeBook(ctx.now);
  if (!book.rates.has(currency)) {
    throw validationError([{ location: 'argument', field: 'currency', message: `is not an official currency (GET /currencies lists them): ${currency}` }]);
  }
  return book;
}

const TopRouteRef = builder.objectRef<TopRoute>('TopRoute').implement({
  description: 'One route of the market-wide scan and the item it trades (REST: TopRouteOut).',
  fields: (t) => shapeFields(t, TopRouteOut, { refs: { route: { type: RouteRef } } }),
});

interface TopRoutesAnswer {
  appId: string;
  currencyCode: string;
  fund: 'cash' | 'balance';
  payout: 'cash' | 'balance';
  candidateItems: number;
  routes: TopRoute[];
  unpricedBuyMarkets: string[];
  unpricedSellMarkets: string[];
  leftOutReason: string | null;
}

const TopRoutesRef = builder.objectRef<TopRoutesAnswer>('TopRoutes').implement({
  description: 'The best priced route of each item across the catalogue, ranked by margin (REST: TopRoutesOut).',
  fields: (t) => {
    const fields = shapeFields(t, TopRoutesOut, {
      refs: { fund: { type: FundingEnum }, payout: { type: PayoutEnum }, routes: { type: [TopRouteRef] }, unpriced_buy_markets: { type: ['String'] }, unpriced_sell_markets: { type: ['String'] } },
      descriptions: {
        candidate_items: "Items whose routes were priced exactly: the SQL pre-selection's candidates (docs/fees.md).",
        unpriced_buy_markets: 'Markets left out as a place to buy: a fee buying needs (deposit, with fund cash) is unknown (feeProfile prices it).',
        unpriced_sell_markets: 'Markets left out as a place to sell: a fee selling needs (sale; withdraw with payout cash) is unknown.',
        left_out_reason: 'Which unknown fees left markets out, and how to bring them in; null when none was.',
      },
    });
    return { ...fields, routes: t.field({ type: [TopRouteRef], extensions: listComplexity(v.MAX_TOP_LIMIT), resolve: (x) => x.routes }) };
  },
});

/** The ranked routes of `quotes` for the arguments (unpriced ones counted, listed only with `includeUnpriced`); 422 when `currency` has no official rate. */
async function routesOf(ctx: Context, quotes: readonly MarketQuote[], args: Omit<RouteOptions, 'now'>, includeUnpriced: boolean): Promise<{ routes: TradeRoute[]; leftOut: LeftOut }> {
  const book = await bookFor(ctx, args.currency);
  return rankedRoutes(tradeRoutes(quotes, book, { ...args, now: ctx.now }), includeUnpriced);
}

/** The profile of a `feeProfile` argument (already checked by the argument rules; 422 if not). */
function profileArg(entries: readonly CallerFee[] | null | undefined): FeeProfile | null {
  if (!entries) return null;
  const r = profileOf(entries);
  if ('problems' in r) throw validationError(r.problems.map((message) => ({ location: 'argument' as const, field: 'feeProfile', message })));
  return r.profile;
}

/** The route options of the shared arguments. */
function optionsOf(args: {
  currency: string;
  buyOn?: string[] | null;
  sellOn?: string[] | null;
  fund: 'cash' | 'balance';
  payout: 'cash' | 'balance';
  minCredibility: number;
  minQuantity?: number | null;
  feeProfile?: readonly CallerFee[] | null;
}): Omit<RouteOptions, 'now'> {
  return {
    currency: args.currency,
    buyOn: args.buyOn ?? null,
    sellOn: args.sellOn ?? null,
    fund: args.fund,
    payout: args.payout,
    minCredibility: args.minCredibility,
    minQuantity: args.minQuantity ?? null,
    feeProfile: profileArg(args.feeProfile),
  };
}

/** The arguments `Item.routes` shares with GET /prices/routes (declared once, src/operations/get-routes.ts). */
const ITEM_ROUTE_PARAMS = only(getRoutesOp.params, 'currency', 'buyOn', 'sellOn', 'fund', 'payout', 'minCredibility', 'minQuantity', 'feeProfile', 'includeUnpriced');

builder.objectFields(ItemRef, (t) => ({
  routes: t.field({
    type: [RouteRef],
    description:
      "Buy-here-sell-there pairs between this item's quotes, each leg after its market's official fees (or your feeProfile's where unknown), in `currency` at official rates, ranked by margin; a route with an unknown fee is unpriced and left out unless includeUnpriced (the root field `routes` counts them).",
    extensions: listComplexity(MAX_ROUTES),
    args: paramArgs(t.arg, ITEM_ROUTE_PARAMS),
    validate: argsRule(ITEM_ROUTE_PARAMS),
    resolve: async (item, args, ctx) => (await routesOf(ctx, item.quotes, optionsOf(args), args.includeUnpriced)).routes,
  }),
}));

builder.queryFields((t) => ({
  routes: t.field({
    type: ItemRoutesRef,
    description:
      'The routes of one item (REST: GET /prices/routes; needs an API key; billed and rate limited as its catalogue row). Error `not_found` when the item has no quotes.',
    args: paramArgs(t.arg, getRoutesOp.params),
    // Arguments: the metering plugin's rule (meteredFieldArgs, from its operation's parameters), checked before the charge.
    resolve: async (_r, args, ctx) => {
      await ctx.requireUser('getRoutes');
      const quotes = await ctx.loaders.quotesOf(args.appId, args.marketHashName);
      if (!quotes) throw notFound(`No quotes for ${JSON.stringify(args.marketHashName)} (app ${args.appId}).`);
      const { routes, leftOut } = await routesOf(ctx, quotes, optionsOf(args), args.includeUnpriced);
      return {
        appId: args.appId,
        marketHashName: args.marketHashName,
        currencyCode: args.currency,
        fund: args.fund,
        payout: args.payout,
        routes,
        unpricedLeftOut: leftOut.unpriced,
        leftOutReason: leftOut.reason,
      };
    },
  }),
  topRoutes: t.field({
    type: TopRoutesRef,
    description:
      'The best priced route of each item across the catalogue, ranked by margin (REST: GET /prices/routes/top; needs an API key; billed and rate limited as its catalogue row). Candidates are pre-selected in SQL by an estimate of each item\'s margin, then priced exactly (docs/fees.md, The market-wide scan).',
    args: paramArgs(t.arg, getTopRoutesOp.params),
    // Arguments: the metering plugin's rule (meteredFieldArgs, from its operation's parameters), checked before the charge.
    resolve: async (_r, args, ctx) => {
      await ctx.requireUser('getTopRoutes');
      const book = await bookFor(ctx, args.currency);
      const markets = (await ctx.db.query<{ code: string }>('SELECT code FROM website WHERE NOT is_deprecated ORDER BY code')).map((r) => r.code);
      const opts = { ...optionsOf(args), now: ctx.now, appId: args.appId, minMargin: args.minMargin ? new Money(args.minMargin) : null, limit: args.limit };
      const found = await topRoutes(ctx.db, book, markets, (app, names) => ctx.loaders.quotesNow(app, names), opts);
      return {
        appId: args.appId, currencyCode: args.currency, fund: args.fund, payout: args.payout, candidateItems: found.candidateItems, routes: found.routes,
        unpricedBuyMarkets: found.unpricedBuyMarkets, unpricedSellMarkets: found.unpricedSellMarkets, leftOutReason: topLeftOutReason(found, args.fund, args.payout),
      };
    },
  }),
}));
