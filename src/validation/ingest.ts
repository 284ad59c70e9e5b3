/**
 * Rules for collector quote rows, shared by the GraphQL mutation `ingestQuotes` and `quotegate import`
 * of collector files (CSV / NDJSON). Shape rules here (zod); catalogue rules (the market exists, is not
 * deprecated, and the currency is the market's own: spec MarketQuoteOut.market_currency_code) in
 * `checkCatalogue`. Every problem is reported with its row (`quotes[17].price`, `line 18: price`).
 *
 * Prices are decimal strings only (a JSON number would already have passed through a float): up to 28
 * integer and 10 fraction digits (the stored precision), greater than 0, or null when the source reports
 * no price. `observed_at` is RFC 3339 with an offset, not before 2000, at most MAX_FUTURE_SECONDS ahead of the clock.
 */
import { z } from 'zod';
import type { ValidationDetail } from '../lib/errors.js';
import { toMoney, type Money } from '../lib/money.js';
import { appId, marketCode as marketCodeRule, marketHashName } from './params.js';

/** One sighting of a quote at a source. Prices are decimals in `currencyCode`; never floats. */
export interface QuoteObservation {
  appId: string;
  marketHashName: string;
  /** Marketplace code, e.g. `BUFF163`. */
  marketCode: string;
  /** Who reported it: equal to `marketCode` for direct data, else the aggregator (e.g. `CSGOTRADER`). */
  providerCode: string;
  side: 'ask' | 'bid';
  currencyCode: string;
  /** Best price on this side; null when the source reports none. Ignored for a delisting. */
  price: Money | null;
  quantity: number | null;
  isQuantityMinimum: boolean | null;
  isAllItemsSamePrice: boolean | null;
  observedAt: Date;
  /** True when the source reports the item no longer listed on this side. */
  delisted?: boolean;
}

/** Most rows in one `ingestQuotes` batch. */
export const MAX_BATCH_ROWS = 10_000;
/** Observations may be this far ahead of the server clock (collector clock skew), in seconds. */
export const MAX_FUTURE_SECONDS = 300;
/** The valuation's market code: never a collector's market. */
const RESERVED_MARKET = 'CSCP';

const price = z
  .string({ message: 'must be a decimal string such as "12.50" (never a JSON number)' })
  .regex(/^\d{1,28}(\.\d{1,10})?$/, { message: 'must be a decimal string with at most 28 integer and 10 fraction digits', abort: true })
  .refine((s) => toMoney(s).gt(0), { message: 'must be greater than 0' });

/** Observations before this are refused (CS:GO's market opened in 2013; also keeps dates PostgreSQL can store). */
export const EARLIEST_OBSERVATION = new Date('2000-01-01T00:00:00Z');

/** Why a collector timestamp is refused (too old, or more than MAX_FUTURE_SECONDS past `latest`), or null. */
export function timeProblem(t: Date, latestMs: number): string | null {
  if (Number.isNaN(t.getTime())) return 'must be an RFC 3339 timestamp';
  if (t.getTime() < EARLIEST_OBSERVATION.getTime()) return 'must not be before 2000-01-01';
  if (t.getTime() > latestMs) return `must not be more than ${MAX_FUTURE_SECONDS} s in the future`;
  return null;
}

/** One collector row (camelCase, as the GraphQL input names the fields). */
export const quoteRow = z.object({
  appId: appId.optional().nullable(),
  marketHashName,
  marketCode: marketCodeRule.refine((c) => c !== RESERVED_MARKET, { message: 'CSCP is the valuation, not a market' }),
  providerCode: marketCodeRule,
  side: z.enum(['ask', 'bid'], { message: 'must be ask or bid' }),
  currencyCode: z.string().regex(/^[A-Z0-9]{1,16}$/, { message: 'must be a currency code (1-16 uppercase letters or digits)' }),
  price: price.nullable().optional(),
  quantity: z.number().int({ message: 'must be a whole number' }).min(0, { message: 'must be 0 or more' }).max(2_147_483_647).nullable().optional(),
  isQuantityMinimum: z.boolean().nullable().optional(),
  isAllItemsSamePrice: z.boolean().nullable().optional(),
  observedAt: z.iso.datetime({ offset: true, message: 'must be an RFC 3339 timestamp' }),
  delisted: z.boolean().nullable().optional(),
});
export type QuoteRow = z.infer<typeof quoteRow>;

/** Names a row's field in a detail: `quotes[17].price` (mutation) or `line 18: price` (files). */
export type RowLabel = (index: number, field: string) => string;
export const mutationLabel: RowLabel = (i, field) => `quotes[${i}]${field ? `.${field}` : ''}`;

/** Result of checking rows: the observations when every row is valid, else the details. */
export interface RowCheck {
  observations: QuoteObservation[];
  details: ValidationDetail[];
}

/**
 * Checks the shape of each row and turns valid ones into observations. `now` bounds `observedAt`.
 * Stops collecting details after `maxDetails` (the answer stays small for a badly broken batch).
 */
export function parseQuoteRows(rows: readonly unknown[], label: RowLabel, location: ValidationDetail['location'], now: Date, maxDetails = 100): RowCheck {
  const observations: QuoteObservation[] = [];
  const details: ValidationDetail[] = [];
  const latest = now.getTime() + MAX_FUTURE_SECONDS * 1000;
  for (let i = 0; i < rows.length; i++) {
    const r = quoteRow.safeParse(rows[i]);
    if (!r.success) {
      for (const issue of r.error.issues) {
        if (details.length < maxDetails) details.push({ location, field: label(i, issue.path.map(String).join('.')), message: issue.message });
      }
      continue;
    }
    const q = r.data;
    const observedAt = new Date(q.observedAt);
    const when = timeProblem(observedAt, latest);
    if (when) {
      if (details.length < maxDetails) details.push({ location, field: label(i, 'observedAt'), message: when });
      continue;
    }
    observations.push({
      appId: q.appId ?? '730',
      marketHashName: q.marketHashName,
      marketCode: q.marketCode,
      providerCode: q.providerCode,
      side: q.side,
      currencyCode: q.currencyCode,
      price: q.price === null || q.price === undefined ? null : toMoney(q.price),
      quantity: q.quantity ?? null,
      isQuantityMinimum: q.isQuantityMinimum ?? null,
      isAllItemsSamePrice: q.isAllItemsSamePrice ?? null,
      observedAt,
      delisted: q.delisted === true,
    });
  }
  return { observations: details.length === 0 ? observations : [], details };
}

/** The catalogue facts rows are checked against: market code -> its currency and deprecation. */
export type MarketCatalogue = ReadonlyMap<string, { currencyCode: string; isDeprecated: boolean }>;

/**
 * Catalogue rules per row: the market is in the catalogue and not deprecated, and the quote is in the
 * market's own currency. `observations[i]` is row i (parseQuoteRows keeps the order).
 */
export function checkCatalogue(
  observations: readonly QuoteObservation[],
  markets: MarketCatalogue,
  label: RowLabel,
  location: ValidationDetail['location'],
  maxDetails = 100,
): ValidationDetail[] {
  const details: ValidationDetail[] = [];
  for (let i = 0; i < observations.length && details.length < maxDetails; i++) {
    const o = observations[i]!;
    const m = markets.get(o.marketCode);
    if (!m) details.push({ location, field: label(i, 'marketCode'), message: `unknown market ${o.marketCode} (see GET /websites)` });
    else if (m.isDeprecated) details.push({ location, field: label(i, 'marketCode'), message: `market ${o.marketCode} is deprecated` });
    else if (m.currencyCode !== o.currencyCode) {
      details.push({ location, field: label(i, 'currencyCode'), message: `must be ${m.currencyCode}, the currency ${o.marketCode} quotes in` });
    }
  }
  return details;
}

/** Column names of collector files (snake_case) mapped to the row fields. */
export const FILE_COLUMNS: Record<string, keyof QuoteRow> = {
  app_id: 'appId',
  market_hash_name: 'marketHashName',
  market_code: 'marketCode',
  provider_code: 'providerCode',
  side: 'side',
  currency_code: 'currencyCode',
  price: 'price',
  quantity: 'quantity',
  is_quantity_minimum: 'isQuantityMinimum',
  is_all_items_same_price: 'isAllItemsSamePrice',
  observed_at: 'observedAt',
  delisted: 'delisted',
};

const COLUMN_OF = new Map(Object.entries(FILE_COLUMNS).map(([col, field]) => [field as string, col]));

/** Label for rows of a file: `line 18: price` with the file's column name; `lineOf(i)` = line of row i. */
export const fileLabel =
  (lineOf: (index: number) => number): RowLabel =>
  (i, field) =>
    `line ${lineOf(i)}${field ? `: ${COLUMN_OF.get(field) ?? field}` : ''}`;
