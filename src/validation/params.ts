/**
 * Parameter rules shared by the REST facade and the GraphQL arguments (spec: GET /prices,
 * POST /prices/batch, Limits). Lengths count Unicode code points ("characters"). NUL is refused in
 * every string (PostgreSQL text cannot hold it). Market codes are 1-32 of [A-Z0-9_] in both faces
 * (the spec states 32 for the batch; GET uses the same bound, see README).
 */
import { z } from 'zod';
import { profileOf } from '../fees/profile.js';
import { decodeSearchCursor, MAX_QUERY_CHARS, queryProblem, searchWords } from '../search/query.js';

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

/** An If-None-Match value (REST: the header; GraphQL: `ifNoneMatch`), at most 4096 characters. */
export const ifNoneMatch = chars(0, 4096);
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
/** A route's liquidity floor (`min_quantity`): a whole number of items, 0-1,000,000. */
export const minQuantity = z
  .number({ message: 'must be a whole number from 0 to 1000000' })
  .int({ message: 'must be a whole number from 0 to 1000000' })
  .min(0, { message: 'must be a whole number from 0 to 1000000' })
  .max(1_000_000, { message: 'must be a whole number from 0 to 1000000' });
/** The text of a margin floor: a decimal fraction from -1 to 1000 with at most 6 decimals (the document states this pattern). */
export const MIN_MARGIN_PATTERN = /^(-1(\.0{1,6})?|-0(\.\d{1,6})?|\d{1,3}(\.\d{1,6})?|1000(\.0{1,6})?)$/;
/** A margin floor (`min_margin`): a decimal fraction from -1 to 1000 with at most 6 decimals (0.05 = 5 %). */
export const minMargin = z.string().regex(MIN_MARGIN_PATTERN, { message: 'must be a decimal from -1 to 1000 with at most 6 decimals (0.05 = 5 %)' });
/** Most routes of the market-wide scan (`limit`). */
export const MAX_TOP_LIMIT = 100;
/** The scan's `limit`: 1-100. */
export const topLimit = z
  .number({ message: `must be a whole number from 1 to ${MAX_TOP_LIMIT}` })
  .int({ message: `must be a whole number from 1 to ${MAX_TOP_LIMIT}` })
  .min(1, { message: `must be a whole number from 1 to ${MAX_TOP_LIMIT}` })
  .max(MAX_TOP_LIMIT, { message: `must be a whole number from 1 to ${MAX_TOP_LIMIT}` });
/** A caller fee profile (GraphQL `feeProfile`, REST `fee_profile`; src/fees/profile.ts): its rules, every problem listed. */
export const feeProfile = z
  .array(z.looseObject({ marketCode: z.string(), deposit: z.string().nullish(), sale: z.string().nullish(), withdraw: z.string().nullish() }))
  .superRefine((entries, ctx) => {
    const r = profileOf(entries);
    if ('problems' in r) for (const message of r.problems) ctx.addIssue({ code: 'custom', message });
  });
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
/** A change-feed cursor: a sequence number, 1-19 digits (quotes/changes.ts; beyond the current sequence is 422 there). */
export const changeCursor = z
  .string()
  .refine((s) => /^\d{1,19}$/.test(s) && BigInt(s) <= 9223372036854775807n, { message: 'must be a change sequence number: digits, at most 9223372036854775807 (as given by change_seq or next_cursor)' });
/** Most quotes one page of `Website.quotes` holds (`first` or `last`). */
export const MAX_QUOTES_PAGE = 100;
/** Quotes a page of `Website.quotes` holds when neither `first` nor `last` is given. */
export const DEFAULT_QUOTES_PAGE = 20;

/** A position in a market's quote list (item name, then side), as `Website.quotes` cursors carry it. */
export interface QuoteCursorPosition {
  marketHashName: string;
  side: 'ask' | 'bid';
}

/** The opaque cursor of a quote position: base64url of the JSON array [name, side]. */
export function encodeQuoteCursor(p: QuoteCursorPosition): string {
  return Buffer.from(JSON.stringify([p.marketHashName, p.side]), 'utf8').toString('base64url');
}

/** The position a cursor of `encodeQuoteCursor` names, or null when `cursor` is not one (never throws). */
export function decodeQuoteCursor(cursor: string): QuoteCursorPosition | null {
  if (!/^[A-Za-z0-9_-]{1,1400}$/.test(cursor)) return null;
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(v) || v.length !== 2 || (v[1] !== 'ask' && v[1] !== 'bid') || !marketHashName.safeParse(v[0]).success) return null;
  const p: QuoteCursorPosition = { marketHashName: v[0] as string, side: v[1] };
  return encodeQuoteCursor(p) === cursor ? p : null;
}

const pageSizeMessage = `must be a whole number from 1 to ${MAX_QUOTES_PAGE}`;
const pageSize = z.number({ message: pageSizeMessage }).int({ message: pageSizeMessage }).min(1, { message: pageSizeMessage }).max(MAX_QUOTES_PAGE, { message: pageSizeMessage });
const quoteCursor = z.string().refine((c) => decodeQuoteCursor(c) !== null, { message: 'must be a cursor given by this connection (an edge cursor, startCursor or endCursor)' });

/**
 * Arguments of `Website.quotes` (a Relay connection): `first` or `last` (not both) from 1 to MAX_QUOTES_PAGE,
 * `after` and `before` cursors of this connection, an app id.
 */
export const websiteQuotesArgs = z
  .looseObject({ first: pageSize.nullish(), last: pageSize.nullish(), after: quoteCursor.nullish(), before: quoteCursor.nullish(), appId })
  .refine((a) => a.first === null || a.first === undefined || a.last === null || a.last === undefined, { message: 'give first or last, not both', path: ['last'] });

/** The quotes one page of `Website.quotes` asks for (its billed units): `first`, else `last`, else the default; capped. */
export function quotesPageSize(args: { first?: unknown; last?: unknown }): number {
  const asked = typeof args.first === 'number' ? args.first : typeof args.last === 'number' ? args.last : DEFAULT_QUOTES_PAGE;
  return Math.min(Math.max(Math.trunc(asked), 1), MAX_QUOTES_PAGE);
}

/**
 * An item search's text (REST `q`, GraphQL `search`; src/search/query.ts): 1-255 characters without NUL, with at least
 * one letter or digit, at most 32 words once resolved.
 */
export const searchText = z
  .string()
  .superRefine((q, ctx) => {
    const problem = queryProblem(q);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({ minLength: 1, maxLength: MAX_QUERY_CHARS, pattern: '^[^\\u0000]*$' });
/**
 * Why `cursor` cannot continue the search of `q` in app `appId` (a 422 message), or null when it can (or when `q`
 * itself is refused: that problem is reported on `q`).
 */
export function searchCursorProblem(cursor: string, q: string, appId: string): string | null {
  if (queryProblem(q) !== null) return null;
  const at = decodeSearchCursor(cursor, appId, searchWords(q));
  return typeof at === 'string' ? at : null;
}
/** Delivery log page size (GET /alerts/{id}/deliveries `limit`, GraphQL alertDeliveries `limit`): default and bound. */
export const DEFAULT_DELIVERIES_PAGE = 20;
export const MAX_DELIVERIES_PAGE = 100;
/** A delivery-log cursor: the seq of the last row of the previous page, a decimal string. */
export const DELIVERY_CURSOR = /^\d{1,19}$/;
