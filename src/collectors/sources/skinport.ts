/**
 * Skinport's public item list (issue 42, bulk sources): `GET https://api.skinport.com/v1/items?app_id=730&currency=EUR`,
 * one JSON array with an entry per item Skinport knows for CS2 (docs.skinport.com, "Items"): `market_hash_name,
 * currency, suggested_price, item_page, market_page, min_price, max_price, mean_price, median_price, quantity,
 * created_at, updated_at` (newer answers also carry `version`). No credential needed; Skinport asks for
 * `Accept-Encoding: br` on this endpoint, serves it from a 5-minute cache, and limits it to 8 requests per
 * 5 minutes (docs.skinport.com, "Items": rate limit and cache). Provider code `SKINPORT` (direct data).
 *
 * Each entry becomes the SKINPORT ask: `min_price` (the lowest listing) with `quantity` (listings, an exact
 * count: `isQuantityMinimum` false), in the entry's `currency` (EUR as asked: Skinport's native currency; the
 * runner converts any other it reports). `isAllItemsSamePrice` is true when `min_price` equals `max_price`,
 * false when they differ, null when `max_price` is missing. An entry with `quantity` 0 or `min_price` null is
 * no longer listed: a delisting row (price null, quantity 0, `delisted` true). `suggested_price` and the
 * mean/median are not offers and are not collected. The list is the whole market (an item Skinport has never
 * listed is absent; one sold out stays with quantity 0), so `completeListing` is true: a successful run completes
 * the SKINPORT scan and delists what it did not see.
 *
 * Format checks (UpstreamError('format'); the market keeps its quotes): an entry that is not an object or lacks
 * `market_hash_name`, `currency`, `min_price` or `quantity` (a renamed field), a `quantity` or price of the
 * wrong JSON type; plus the body checks of json-stream.ts (HTML, truncated, a 200 with an error object such as
 * `{"errors": [...]}`). Unknown extra fields are ignored.
 */
import { Money } from '../../lib/money.js';
import type { CollectorSource, RawQuote, SourceContext, SourceLimits } from '../source.js';
import { UpstreamError } from '../source.js';
import { JsonNumber, jsonEntries, priceText, requireFields, type JsonValue } from './json-stream.js';

/** Skinport's API host (no trailing slash); `COLLECTOR_SKINPORT_URL` overrides it. */
const SKINPORT_BASE_URL = 'https://api.skinport.com';
/** The request: CS2's app id, prices in EUR (Skinport's own currency, the catalogue's for SKINPORT). */
export const SKINPORT_ITEMS_PATH = '/v1/items?app_id=730&currency=EUR';
/** Seconds between runs: the endpoint's own cache period (docs.skinport.com: cached for 5 minutes). */
export const SKINPORT_INTERVAL_SECONDS = 300;
/**
 * Limits: docs.skinport.com allows 8 requests per 5 minutes on /v1/items (1.6 a minute): 1 a minute leaves
 * room for retries within the budget; one at a time; 2 minutes for a body of several megabytes; 2 retries.
 */
const SKINPORT_LIMITS: SourceLimits = { requestsPerMinute: 1, concurrency: 1, timeoutMs: 120_000, retries: 2 };

const REQUIRED = ['market_hash_name', 'currency', 'min_price', 'quantity'] as const;

/** The SKINPORT ask of one /v1/items entry (see the module doc); throws UpstreamError('format') when its shape changed. */
function skinportRow(entry: JsonValue, index: number): RawQuote {
  const where = `skinport /v1/items, entry ${index}`;
  const item = requireFields(entry, REQUIRED, where);
  const name = item.market_hash_name;
  const currency = item.currency;
  if (typeof name !== 'string') throw new UpstreamError('format', `${where}: \`market_hash_name\` is not a string`);
  if (typeof currency !== 'string') throw new UpstreamError('format', `${where} (${name}): \`currency\` is not a string`);
  const q = item.quantity;
  if (!(q instanceof JsonNumber)) throw new UpstreamError('format', `${where} (${name}): \`quantity\` is not a number`);
  // A listing count: its source text as a JS number (an integer, not money). A fractional or negative count is
  // handed on as is and refused by the runner's row checks.
  const quantity = Number(q.text);
  const min = priceText(item.min_price, `${where} (${name}), min_price`);
  const base = { marketHashName: name, marketCode: 'SKINPORT', side: 'ask' as const, currencyCode: currency, isQuantityMinimum: false };
  if (min === null || quantity === 0) return { ...base, price: null, quantity: 0, isAllItemsSamePrice: null, delisted: true };
  const max = priceText(item.max_price, `${where} (${name}), max_price`);
  let same: boolean | null = null;
  if (max !== null) {
    try {
      same = new Money(min).eq(new Money(max));
    } catch {
      same = null; // not decimals: the runner refuses the price itself
    }
  }
  return { ...base, price: min, quantity, isAllItemsSamePrice: same };
}

/** The Skinport source (id `skinport`). */
export const skinportSource: CollectorSource = {
  id: 'skinport',
  providerCode: 'SKINPORT',
  markets: ['SKINPORT'],
  defaultBaseUrl: SKINPORT_BASE_URL,
  intervalSeconds: SKINPORT_INTERVAL_SECONDS,
  limits: SKINPORT_LIMITS,
  completeListing: true,
  async *collect(ctx: SourceContext) {
    const res = await ctx.fetch(SKINPORT_ITEMS_PATH, { headers: { 'Accept-Encoding': 'br', Accept: 'application/json' } });
    for await (const { key, value } of jsonEntries(res, { what: 'skinport /v1/items', list: 'array', signal: ctx.signal })) {
      yield skinportRow(value, key as number);
    }
  },
};
