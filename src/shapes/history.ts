/**
 * The price-history shapes (issue: price history, points 3-4), defined once: the OpenAPI document serves them,
 * the REST document of GET /prices/history selects its fields from them (`selectionOf`), the GraphQL types take
 * their fields from them (src/graphql/types/history.ts) and the tests take their key lists from them. Amounts
 * are decimal strings in the series' currency (CSCP: CNY).
 */
import { z } from 'zod';
import { day, decimal } from './quote.js';

/** One candle: a day, an ISO week (dated by its Monday) or a month (dated by its first day). */
export const CandleOut = z
  .strictObject({
    date: day,
    open: decimal.nullable(),
    high: decimal.nullable(),
    low: decimal.nullable(),
    close: decimal.nullable(),
    observations: z.int().min(0),
    quantity: z.int().min(0).nullable(),
    volume: z.int().min(0).nullable(),
    delisted: z.boolean(),
    days: z.int().min(1),
  })
  .meta({ id: 'CandleOut' });

/** One market's series: live quote candles (ask, bid) or an imported kind (listing_minimum, sales). */
export const HistorySeriesOut = z
  .strictObject({
    market_code: z.string(),
    series: z.enum(['ask', 'bid', 'listing_minimum', 'sales']),
    side: z.enum(['ask', 'bid']).nullable(),
    currency_code: z.string(),
    candles: z.array(CandleOut),
  })
  .meta({ id: 'HistorySeriesOut' });

/** One CSCP valuation in the range (the last of its candle's days), CNY, with its band mid x e^(-/+u). */
export const CscpPointOut = z
  .strictObject({
    date: day,
    mid: decimal,
    ask_amount: decimal,
    bid_amount: decimal.nullable(),
    uncertainty: z.number().min(0),
    band_low: decimal,
    band_high: decimal,
    is_two_sided: z.boolean(),
  })
  .meta({ id: 'CscpPointOut' });

/** GET /prices/history: an item's candles per market and its CSCP series over a range. */
export const ItemHistoryOut = z
  .strictObject({
    app_id: z.string(),
    market_hash_name: z.string(),
    from: day,
    to: day,
    interval: z.enum(['day', 'week', 'month']),
    series: z.array(HistorySeriesOut),
    cscp: z.array(CscpPointOut),
  })
  .meta({ id: 'ItemHistoryOut' });
