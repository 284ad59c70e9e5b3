/**
 * The quote shape, defined once (spec: MarketQuoteOut, ValuationOut): the OpenAPI document serves these
 * schemas, the one JSON writer of a quote (`quoteJson` in quotes/quotes.ts) is typed by them, and the
 * tests take their key lists from them.
 */
import { z } from 'zod';

/** A decimal number as a string in plain notation (money, rates). */
export const decimal = z.string().regex(/^-?\d+(\.\d+)?$/).meta({ description: 'Decimal number as a string, plain notation.' });
/** An RFC 3339 timestamp in UTC with milliseconds. */
export const timestamp = z.string().meta({ description: 'RFC 3339 timestamp, UTC.', format: 'date-time' });
/** A UTC calendar date, YYYY-MM-DD. */
export const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/).meta({ description: 'A UTC calendar date, YYYY-MM-DD.' });

/** The CSCP valuation of a quote (spec: ValuationOut); amounts in CNY. */
export const ValuationOut = z
  .strictObject({
    valuation_date: day,
    credibility: z.number().min(0).max(1),
    uncertainty: z.number().min(0),
    is_two_sided: z.boolean(),
    ask_amount: decimal,
    bid_amount: decimal.nullable(),
    ask_quote_count: z.int(),
    bid_quote_count: z.int(),
  })
  .meta({ id: 'ValuationOut' });
/** One published quote (spec: MarketQuoteOut); the price in the market's own currency. */
export const MarketQuoteOut = z
  .strictObject({
    market_code: z.string(),
    provider_code: z.string(),
    side: z.enum(['ask', 'bid', 'mid']),
    market_currency_code: z.string(),
    market_price_amount: decimal.nullable(),
    quantity: z.int().nullable(),
    is_quantity_minimum: z.boolean().nullable(),
    is_all_items_same_price: z.boolean().nullable(),
    changed_at: timestamp,
    observed_at: timestamp.nullable(),
    delisted_at: timestamp.nullable(),
    fresh_at: timestamp,
    valuation: ValuationOut.nullable(),
  })
  .meta({ id: 'MarketQuoteOut' });

/** A quote as JSON (MarketQuoteOut). */
export type MarketQuoteJson = z.infer<typeof MarketQuoteOut>;

/** One item of a batch or export answer (spec: BatchItemOut). */
export const BatchItemOut = z.strictObject({ market_hash_name: z.string(), markets: z.array(MarketQuoteOut) }).meta({ id: 'BatchItemOut' });
/** The side filter as answers echo it. */
const sideEnum = z.enum(['ask', 'bid', 'mid', 'all']);
/** GET /prices (spec: ItemPricesOut). */
export const ItemPricesOut = z.strictObject({ app_id: z.string(), market_hash_name: z.string(), markets: z.array(MarketQuoteOut) }).meta({ id: 'ItemPricesOut' });
/** POST /prices/batch (spec: BatchPricesOut). */
export const BatchPricesOut = z.strictObject({ app_id: z.string(), side: sideEnum, items: z.array(BatchItemOut) }).meta({ id: 'BatchPricesOut' });
/** GET /prices/export, format json (spec: ExportOut; `change_seq` an extension). */
export const ExportOut = z
  .strictObject({
    app_id: z.string(),
    side: sideEnum,
    generated_at: timestamp,
    change_seq: z.string().regex(/^\d+$/).meta({ description: 'Extension: the change sequence the snapshot was built at (also header X-Change-Sequence); follow GET /prices/changes?since=<it>.' }),
    items: z.array(BatchItemOut),
  })
  .meta({ id: 'ExportOut', description: 'Sent gzip-compressed (Content-Encoding: gzip).' });
/** One line of the `format=ndjson` export (an extension, docs/export.md): the item's name and one of its quotes' fields. */
export const ExportQuoteLine = MarketQuoteOut.extend({ market_hash_name: z.string() }).meta({
  id: 'ExportQuoteLine',
  description:
    'format=ndjson (extension): the file is one such object per line (UTF-8, each line ended by a line feed), one per quote of the JSON export, in its order (items by market hash name, then their markets); sent gzip-compressed (Content-Encoding: gzip).',
});
