/**
 * The trade-route shapes (issue: fees applied, point 3), defined once: the OpenAPI document serves them,
 * the REST document of GET /prices/routes selects its fields from them (`selectionOf`), and the tests take
 * their key lists from them. Amounts are decimal strings in the route's currency.
 */
import { z } from 'zod';
import { day, decimal, timestamp } from './quote.js';

/** One official rate a leg used, with its publication day. */
export const RateUsedOut = z.strictObject({ currency_code: z.string(), usd_rate: decimal, rate_date: day.nullable() }).meta({ id: 'RateUsedOut' });

/** One step of a leg's fees as applied: its operand and the running amount before and after. */
export const AppliedFeeStepOut = z
  .strictObject({
    purpose: z.enum(['deposit', 'sale', 'withdraw', 'conversion']),
    kind: z.enum(['fee', 'convert', 'convert_operator_group', 'steam_market_fee', 'official_rate']),
    operator: z.string().nullable(),
    value: decimal.nullable(),
    value_currency_code: z.string().nullable(),
    amount_before: decimal,
    currency_before: z.string(),
    amount: decimal,
    currency_code: z.string(),
    note: z.string().nullable(),
  })
  .meta({ id: 'AppliedFeeStepOut' });

/** One leg of a route: the quote it uses and what it costs or pays after its market's fees. */
export const RouteLegOut = z
  .strictObject({
    market_code: z.string(),
    side: z.enum(['ask', 'bid']),
    market_currency_code: z.string(),
    market_price_amount: decimal,
    observed_at: timestamp.nullable(),
    fresh_at: timestamp,
    age_seconds: z.int().min(0),
    credibility: z.number().min(0).max(1),
    path: z.enum(['deposit', 'balance', 'sale', 'sale_then_withdraw']),
    priced: z.boolean(),
    amount: decimal.nullable(),
    unknown_purposes: z.array(z.enum(['deposit', 'sale', 'withdraw'])),
    reason: z.string().nullable(),
    steps: z.array(AppliedFeeStepOut),
    rates: z.array(RateUsedOut),
    quantity: z.int().min(0).nullable(),
    caller_fees: z.array(z.enum(['deposit', 'sale', 'withdraw'])),
  })
  .meta({ id: 'RouteLegOut' });

/** A buy-here-sell-there pair: net and margin when both legs are priced. */
export const RouteOut = z
  .strictObject({
    buy: RouteLegOut,
    sell: RouteLegOut,
    status: z.enum(['priced', 'unpriced']),
    net_amount: decimal.nullable(),
    margin: decimal.nullable(),
    credibility: z.number().min(0).max(1),
    fee_source: z.enum(['official', 'caller']),
    hold_days: z.int().min(0).nullable(),
    hold_source: z.string().nullable(),
    hold_note: z.string(),
    quantity_known: z.boolean(),
  })
  .meta({ id: 'RouteOut' });

/** GET /prices/routes: an item's routes in one currency, ranked. */
export const ItemRoutesOut = z
  .strictObject({
    app_id: z.string(),
    market_hash_name: z.string(),
    currency_code: z.string(),
    fund: z.enum(['cash', 'balance']),
    payout: z.enum(['cash', 'balance']),
    routes: z.array(RouteOut),
    unpriced_left_out: z.int().min(0),
    left_out_reason: z.string().nullable(),
  })
  .meta({ id: 'ItemRoutesOut' });

/** One route of the market-wide scan: the item it trades and the route. */
export const TopRouteOut = z.strictObject({ app_id: z.string(), market_hash_name: z.string(), route: RouteOut }).meta({ id: 'TopRouteOut' });

/** GET /prices/routes/top: the best priced routes across the catalogue, ranked by margin. */
export const TopRoutesOut = z
  .strictObject({
    app_id: z.string(),
    currency_code: z.string(),
    fund: z.enum(['cash', 'balance']),
    payout: z.enum(['cash', 'balance']),
    /** Items whose exact routes were computed (the SQL pre-selection's candidates). */
    candidate_items: z.int().min(0),
    routes: z.array(TopRouteOut),
    /** Markets left out as a place to buy: a fee buying needs (deposit, with fund cash) is unknown. Code order. */
    unpriced_buy_markets: z.array(z.string()),
    /** Markets left out as a place to sell: a fee selling needs (sale; withdraw with payout cash) is unknown. */
    unpriced_sell_markets: z.array(z.string()),
    /** Which unknown fees left markets out and how to bring them in; null when none was. */
    left_out_reason: z.string().nullable(),
  })
  .meta({ id: 'TopRoutesOut' });
