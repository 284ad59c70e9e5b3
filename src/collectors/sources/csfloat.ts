/**
 * CSFloat Market (csfloat.com), direct, per item: the lowest buy-now listing (ask) of each watched item.
 *
 * - Endpoint (docs.csfloat.com, "Get All Listings"): `GET /api/v1/listings?market_hash_name=<name>&type=buy_now
 *   &sort_by=lowest_price&limit=1`, one request per item of `ctx.watchlist`. CSFloat has no documented bulk price
 *   list; the listings endpoint filters by `market_hash_name` and sorts by `lowest_price`.
 * - Auth: API key, `CSFLOAT_API_KEY`, sent as the `Authorization` header (the documented form). Without it the source
 *   is not configured and never calls CSFloat.
 * - Answer: the documented example is a JSON array of listings; clients of the current API read `{"data":[...],
 *   "cursor":...}` (e.g. franzvrolijk/knifescoutapi `CsFloatResponse.kt`): both are accepted. Per listing: `price`
 *   (integer US cents, read as its source text and scaled with decimal.js), `type`, `item.market_hash_name`.
 * - Mapping: ask = first listing's `price` / 100, USD (CSFloat prices are USD cents; CSFLOAT's catalogue currency is
 *   USD). No listing count comes with `limit=1`: quantity null. An empty list reports the item delisted (price null).
 *   A listing of another item than asked (the filter ignored) or of type other than `buy_now` fails the run (`format`).
 * - Limits: CSFloat documents none; a polite 30 requests a minute, one at a time.
 * - Not a complete listing (a watch list).
 */
import { formatDecimal, toMoney } from '../../lib/money.js';
import { UpstreamError, type CollectorSource, type RawQuote, type SourceContext } from '../source.js';
import { isObject, numberText, readJsonBody } from './keyed-json.js';

/** Reads the listings of one answer (array, or object with `data`). Throws UpstreamError('format'). */
function listingsOf(doc: unknown, what: string): unknown[] {
  if (Array.isArray(doc)) return doc;
  if (isObject(doc) && Array.isArray(doc.data)) return doc.data;
  throw new UpstreamError('format', `${what}: neither a list of listings nor an object with a data list`);
}

/**
 * The ask of `name` from a CSFloat listings answer sorted by lowest price: a decimal USD string, or null when nothing
 * is listed. Throws UpstreamError('format') on a renamed field, a non-integer price, or a listing of another item.
 */
function csfloatAsk(doc: unknown, name: string, what: string): string | null {
  const listings = listingsOf(doc, what);
  if (listings.length === 0) return null;
  const first = listings[0];
  if (!isObject(first)) throw new UpstreamError('format', `${what}: listing is not an object`);
  const cents = numberText(first.price);
  if (cents === null || !/^\d{1,15}$/.test(cents)) throw new UpstreamError('format', `${what}: listing field price missing or not integer cents`);
  if (typeof first.type !== 'string') throw new UpstreamError('format', `${what}: listing field type missing`);
  if (first.type !== 'buy_now') throw new UpstreamError('format', `${what}: listing of type ${first.type}, asked buy_now`);
  const item = first.item;
  if (!isObject(item) || typeof item.market_hash_name !== 'string') throw new UpstreamError('format', `${what}: listing field item.market_hash_name missing`);
  if (item.market_hash_name !== name) throw new UpstreamError('format', `${what}: answered ${JSON.stringify(item.market_hash_name)} (filter ignored?)`);
  return formatDecimal(toMoney(cents).dividedBy(100));
}

async function* collect(ctx: SourceContext): AsyncIterable<RawQuote> {
  if (ctx.credential === null || ctx.credential === '') throw new UpstreamError('not_configured', 'CSFLOAT_API_KEY is not set');
  const headers = { Authorization: ctx.credential, Accept: 'application/json' };
  for (const name of ctx.watchlist) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('aborted');
    const path = `/api/v1/listings?market_hash_name=${encodeURIComponent(name)}&type=buy_now&sort_by=lowest_price&limit=1`;
    const what = `csfloat listings ${JSON.stringify(name)}`;
    const res = await ctx.fetch(path, { headers });
    const ask = csfloatAsk(await readJsonBody(res, what, { lossless: true }), name, what);
    const row: RawQuote = { marketHashName: name, marketCode: 'CSFLOAT', side: 'ask', currencyCode: 'USD', price: ask, quantity: null, isQuantityMinimum: null, isAllItemsSamePrice: null };
    if (ask === null) row.delisted = true;
    yield row;
  }
}

/** CSFloat lowest buy-now listings (USD) of the watched items; API key in CSFLOAT_API_KEY. */
export const csfloatSource: CollectorSource = {
  id: 'csfloat',
  providerCode: 'CSFLOAT',
  markets: ['CSFLOAT'],
  defaultBaseUrl: 'https://csfloat.com',
  intervalSeconds: 3600,
  limits: { requestsPerMinute: 30, concurrency: 1, timeoutMs: 15_000, retries: 2 },
  credentialEnv: 'CSFLOAT_API_KEY',
  completeListing: false,
  perItem: true,
  collect,
};
