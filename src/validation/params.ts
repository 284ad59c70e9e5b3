/**
 * Parameter rules shared by the REST facade and the GraphQL arguments (spec: GET /prices,
 * POST /prices/batch, Limits). Lengths count Unicode code points ("characters"). NUL is refused in
 * every string (PostgreSQL text cannot hold it). Market codes are 1-32 of [A-Z0-9_] in both faces
 * (the spec states 32 for the batch; GET uses the same bound, see README).
 */
import { z } from 'zod';

/** Unicode code points in `s` (a lone surrogate counts as one, as string iteration does), without copying it. */
function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++, n++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
  }
  return n;
}

/**
 * A string of `min`-`max` characters without NUL. The metadata states the same rule in JSON Schema
 * for /openapi.json (whose minLength and maxLength count characters too).
 */
export function chars(min: number, max: number) {
  return z
    .string()
    .refine((s) => !s.includes('\u0000'), { message: 'must not contain NUL characters' })
    .refine((s) => s.length >= min && (s.length <= max || codePoints(s) <= max) && (min <= 1 || codePoints(s) >= min), { message: `must be ${min}-${max} characters long` })
    .meta({ minLength: min, maxLength: max, pattern: '^[^\\u0000]*$' });
}

/** Exact, case-sensitive market hash name, 1-255 characters. */
export const marketHashName = chars(1, 255);
/** Game application id, 1-16 characters (default `730`). */
export const appId = chars(1, 16);
/** A market code: 1-32 uppercase letters, digits or underscores. */
export const marketCode = z.string().regex(/^[A-Z0-9_]{1,32}$/, { message: 'must be 1-32 uppercase letters, digits or underscores' });
/** A `markets` filter: at least one code. */
export const marketList = z.array(marketCode).min(1, { message: 'must list at least one market code' });
/** The price endpoints' side filter. */
export const side = z.enum(['ask', 'bid', 'mid', 'all'], { message: 'must be one of ask, bid, mid, all' });
/** The export's file format (GET /prices/export `format`, an extension; docs/export.md). */
export const exportFormat = z.enum(['json', 'ndjson'], { message: 'must be json or ndjson' });
/** Most names in one batch (`market_hash_names`); the REST batch document's worst-case cost is checked at start with it. */
export const MAX_BATCH_NAMES = 1000;
/** Batch names: 1-1000 entries (duplicates allowed). */
export const marketHashNames = z
  .array(marketHashName)
  .min(1, { message: 'must list 1-1000 names' })
  .max(MAX_BATCH_NAMES, { message: 'must list 1-1000 names' });
/** A marketplace code in a path (any string of 1-64 characters; unknown codes answer 404). */
export const websiteCode = chars(1, 64);
/** A positive 32-bit currency id. */
export const currencyId = z
  .number()
  .int({ message: 'must be a whole number from 0 to 2147483647' })
  .min(0, { message: 'must be a whole number from 0 to 2147483647' })
  .max(2147483647, { message: 'must be a whole number from 0 to 2147483647' });
/** The `search` filter of GET /currencies. */
export const currencySearch = chars(0, 64);

/** POST /prices/batch body (spec: BatchPricesIn; no extra fields). */
export const batchBody = z
  .object({
    market_hash_names: marketHashNames,
    app_id: appId.optional(),
    markets: marketList.nullable().optional(),
    side: side.optional(),
  })
  .strict();

/** Arguments of the GraphQL `prices` field (REST: GET /prices). */
export const pricesArgs = z.looseObject({ marketHashName, appId, markets: marketList.nullish() });
/** Arguments of the GraphQL `batchPrices` field (REST: POST /prices/batch). */
export const batchPricesArgs = z.looseObject({ marketHashNames, appId, markets: marketList.nullish() });
/** An If-None-Match value (REST: the header; GraphQL: `ifNoneMatch`), at most 4096 characters. */
export const ifNoneMatch = chars(0, 4096);
/** Arguments of the GraphQL `priceExport` field (REST: GET /prices/export). */
export const exportArgs = z.looseObject({ appId, ifNoneMatch: ifNoneMatch.nullish() });
/** Arguments of the GraphQL `item` field (billed as GET /prices). */
export const itemArgs = z.looseObject({ marketHashName, appId });
/** Arguments of `Item.quotes` (the filters of GET /prices). */
export const quoteFilterArgs = z.looseObject({ markets: marketList.nullish() });
/** A currency code argument: 2-16 uppercase letters or digits (unknown codes are refused by the resolver, 422). */
export const currencyCode = z.string().regex(/^[A-Z0-9]{2,16}$/, { message: 'must be 2-16 uppercase letters or digits (a currency code)' });
/** Arguments of `MarketQuote.afterFees`. */
export const afterFeesArgs = z.looseObject({ currency: currencyCode.nullish() });
/** Arguments of `MarketQuote.converted`. */
export const convertedArgs = z.looseObject({ currency: currencyCode });
/** A route's credibility floor: 0-1 (a leg's credibility halves every 24 hours since its quote was observed). */
export const minCredibility = z
  .number({ message: 'must be a number from 0 to 1' })
  .min(0, { message: 'must be a number from 0 to 1' })
  .max(1, { message: 'must be a number from 0 to 1' });
/** How a route's buyer pays (`cash`: through the market's deposit fees; `balance`: a balance held there). */
export const funding = z.enum(['cash', 'balance'], { message: 'must be cash or balance' });
/** Arguments of `Item.routes`. */
export const itemRoutesArgs = z.looseObject({ currency: currencyCode, buyOn: marketList.nullish(), sellOn: marketList.nullish(), minCredibility });
/** Arguments of the GraphQL `routes` root field (REST: GET /prices/routes). */
export const routesArgs = z.looseObject({ marketHashName, appId, currency: currencyCode, buyOn: marketList.nullish(), sellOn: marketList.nullish(), minCredibility });
/**
 * The days a date parameter may name, on every face (REST query parameters, GraphQL `Date` arguments, the pages'
 * `from`/`to`): 1970-01-01 to 9999-12-31, inclusive. Why these bounds: PostgreSQL has no year 0 (`0000-01-01` is
 * an error there, which answered 500 before: issue 41, point 7) and a range's defaults and buckets reach days
 * before the given ones (89 days before `to`, an ISO week's Monday), so a lower bound far from the calendar's
 * edge is needed; 1970-01-01 is the first day of the data model (the first version of every fee schedule is
 * valid from it) and no quote or candle can be older. A five-digit year is not a YYYY-MM-DD date.
 */
export const MIN_DAY = '1970-01-01';
/** The last day a date parameter may name (see MIN_DAY). */
export const MAX_DAY = '9999-12-31';
/**
 * The shape of a supported day for JSON Schema (/openapi.json `pattern`, beside `format: date`, which says the
 * day exists): YYYY-MM-DD with a year from 1970 to 9999.
 */
export const DAY_PATTERN = '^(19[7-9][0-9]|[2-9][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$';
/** The message of a date parameter outside its rule (REST `details`, GraphQL `extensions.details`, the pages). */
export const DAY_MESSAGE = `must be a date YYYY-MM-DD that exists, from ${MIN_DAY} to ${MAX_DAY}`;

/**
 * True for a YYYY-MM-DD day that exists (2026-02-30 does not; 29 February only in leap years) and lies in
 * MIN_DAY..MAX_DAY. Dates compare as text in this form.
 */
export function isSupportedDay(d: string): boolean {
  if (d.length !== 10 || !/^\d{4}-\d{2}-\d{2}$/.test(d) || d < MIN_DAY || d > MAX_DAY) return false;
  const t = new Date(`${d}T00:00:00Z`);
  return !Number.isNaN(t.getTime()) && t.toISOString().slice(0, 10) === d;
}

/** A UTC calendar day, YYYY-MM-DD, that exists (2026-02-30 does not), from MIN_DAY to MAX_DAY. */
export const day = z.string().refine(isSupportedDay, { message: DAY_MESSAGE });
/** Candle width of a history read (REST `interval`, GraphQL `HistoryInterval`). */
export const historyInterval = z.enum(['day', 'week', 'month'], { message: 'must be one of day, week, month' });
/** Arguments of `Item.history` (the range is checked against the interval by services/history.ts `historyRange`). */
export const itemHistoryArgs = z.looseObject({ markets: marketList.nullish(), from: day.nullish(), to: day.nullish() });
/** Arguments of the GraphQL `priceHistory` root field (REST: GET /prices/history). */
export const priceHistoryArgs = z.looseObject({ marketHashName, appId, markets: marketList.nullish(), from: day.nullish(), to: day.nullish() });
/** Arguments of the GraphQL `valuationAccuracy` root field (REST: GET /valuation/accuracy). */
export const accuracyArgs = z.looseObject({ from: day.nullish(), to: day.nullish() });
/** Arguments of `Website.feeSchedule` (REST: GET /websites/{code}/fee-schedule `as_of`). */
export const feeScheduleArgs = z.looseObject({ asOf: day.nullish() });
/** A change-feed cursor: a sequence number, 1-19 digits (services/changes.ts; beyond the current sequence is 422 there). */
export const changeCursor = z
  .string()
  .refine((s) => /^\d{1,19}$/.test(s) && BigInt(s) <= 9223372036854775807n, { message: 'must be a change sequence number: digits, at most 9223372036854775807 (as given by change_seq or next_cursor)' });
/** A change-feed page size: 1-1000. */
export const changeLimit = z.number({ message: 'must be a whole number from 1 to 1000' }).int({ message: 'must be a whole number from 1 to 1000' }).min(1, { message: 'must be a whole number from 1 to 1000' }).max(1000, { message: 'must be a whole number from 1 to 1000' });
/** Arguments of the GraphQL `priceChanges` root field (REST: GET /prices/changes). */
export const priceChangesArgs = z.looseObject({ appId, since: changeCursor.nullish(), markets: marketList.nullish(), limit: changeLimit });
/** Arguments of the GraphQL subscription `quoteChanged` (REST: GET /prices/changes/stream). */
export const quoteChangedArgs = z.looseObject({ appId, marketHashNames: marketHashNames.nullish(), markets: marketList.nullish(), since: changeCursor.nullish() });
/**
 * Argument rules of the metered GraphQL root fields, checked by the metering plugin before rate limits and billing
 * (a REST route checks the same rules on its parameters, and metering then trusts them). The only check of those
 * arguments: the fields carry no Pothos `validate` of their own, which could never refuse anything metering had let
 * through and, wrapping the resolver, cost about 5 % of a GET /prices's CPU (`npm run -s bench:compare`, both orders).
 * `test/unit/metered-args.test.ts` holds every metered root field to having a rule here.
 */
export const meteredFieldArgs: Record<string, z.ZodType> = { prices: pricesArgs, batchPrices: batchPricesArgs, priceExport: exportArgs, item: itemArgs, routes: routesArgs, priceHistory: priceHistoryArgs, priceChanges: priceChangesArgs, quoteChanged: quoteChangedArgs };
