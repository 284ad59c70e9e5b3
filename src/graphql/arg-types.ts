/**
 * The enums and input types the operations' arguments use (src/operations/: `ArgSpec.type` names them), defined
 * apart from the object types so that the arguments can be built from the operation registry without an import
 * cycle (src/graphql/args.ts).
 */
import { builder } from './builder.js';
import { EXPORT_FORMATS } from '../exports/exports.js';

/** The side filter of the price operations (REST `side`). */
export const SideFilterEnum = builder.enumType('SideFilter', { values: ['ask', 'bid', 'mid', 'all'] as const });

/** The export's file formats (REST query parameter `format`; docs/export.md). */
export const ExportFormatEnum = builder.enumType('ExportFormat', {
  description: 'json: the ExportOut document (default); ndjson: one quote per line, {"market_hash_name":...,<the quote\'s fields>} (extension).',
  values: EXPORT_FORMATS,
});

/** Candle width of a history read (REST `interval`: day, week, month). */
export const HistoryIntervalEnum = builder.enumType('HistoryInterval', {
  description: 'Candle width: a UTC day, an ISO week (dated by its Monday) or a calendar month (dated by its first day).',
  values: { DAY: { value: 'day' }, WEEK: { value: 'week' }, MONTH: { value: 'month' } } as const,
});

/** How a route's buyer pays (REST `fund`). */
export const FundingEnum = builder.enumType('RouteFunding', {
  description: "cash: the buyer pays the market's deposit fees to fund the purchase; balance: a balance already held on the market is spent.",
  values: ['cash', 'balance'] as const,
});

/** Where a route's proceeds go (REST `payout`). */
export const PayoutEnum = builder.enumType('RoutePayout', {
  description: "cash: the seller pays the market's sale then withdraw fees; balance: the proceeds stay on the market (sale fees only).",
  values: ['cash', 'balance'] as const,
});

/** One market of a caller fee profile (REST `fee_profile`). */
export const CallerFeeInput = builder.inputType('CallerFeeInput', {
  description:
    "The caller's own fee rates for one market whose official fees are unknown (docs/fees.md, Caller fee profiles): fractions as decimal strings, 0 <= rate < 1 with at most 6 decimals (\"0.05\" = 5 %). A rate fills only a slot whose official fee is unknown.",
  fields: (t) => ({
    marketCode: t.string({ required: true }),
    deposit: t.string({ required: false, description: 'Deposit fee: buying a price P costs P / (1 - rate).' }),
    sale: t.string({ required: false, description: 'Sale fee: a sale at P pays P x (1 - rate).' }),
    withdraw: t.string({ required: false, description: 'Withdraw fee: withdrawing B pays B x (1 - rate).' }),
  }),
});

/** A webhook alert registration (REST: the POST /alerts body; GraphQL has no input unions, so both kinds' fields are here). */
export const CreateAlertInput = builder.inputType('CreateAlertInput', {
  description:
    'A registration (REST: the POST /alerts body, in snake_case). kind price: marketCode, side (ask|bid), direction (above|below), level (decimal string in the market\'s currency). kind route_margin: buyMarket, sellMarket, margin (decimal fraction string).',
  fields: (t) => ({
    kind: t.string({ required: true, description: 'price or route_margin.' }),
    marketHashName: t.string({ required: true }),
    appId: t.string({ required: false, description: 'Default 730.' }),
    marketCode: t.string({ required: false }),
    side: t.string({ required: false }),
    direction: t.string({ required: false }),
    level: t.string({ required: false }),
    buyMarket: t.string({ required: false }),
    sellMarket: t.string({ required: false }),
    margin: t.string({ required: false }),
    fund: t.string({ required: false, description: 'route_margin: cash (default) or balance.' }),
    payout: t.string({ required: false, description: 'route_margin: cash (default) or balance.' }),
    url: t.string({ required: true, description: 'The webhook URL (https; no credentials; at most 2,048 characters; a public host: no private, loopback or link-local address, no local name such as localhost).' }),
  }),
});
