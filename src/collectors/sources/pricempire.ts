/**
 * Pricempire (pricempire.com), an aggregator, per item: BitSkins' lowest listing (ask) and its listing count for each
 * watched item, the only source of BITSKINS quotes (no recorded answer or documentation example of BitSkins' own API
 * was found; docs/collectors.md, "Markets without a source").
 *
 * - Endpoint (Pricempire's API documentation, `pricempire/developers` `openapi.js`, operation `getItemByName`):
 *   `GET https://api.pricempire.com/v2/items/{market_hash_name}?api_key=<key>&currency=USD`, one request per item of
 *   `ctx.watchlist`. 404 "Item not found" skips the item (no row).
 * - Auth: API key, `PRICEMPIRE_API_KEY`, in the `api_key` query parameter (the documented form; the runner replaces it
 *   by `[credential]` in any message it records). Without it the source is not configured and never calls Pricempire.
 * - Answer (the documented example, fixtures/pricempire): `{"status": true, "item": {"name", "liquidity",
 *   "steamVolume", "prices": {"<provider>": {"sourcePrice", "sourceCurrency", "price", "count", "createdAt"}}}}`; the
 *   schema beside it lists the same fields without the `item` wrapper, and both are read. `price` is an integer in
 *   cents of the asked currency (the documented examples only fit cents: `AK-47 | Fire Serpent (Field-Tested)` at
 *   65979 is 659.79 USD, `StatTrak™ USP-S | Cyrex (Field-Tested)` on BitSkins at 269 is 2.69 USD), scaled with
 *   decimal.js.
 * - Mapping: `prices.bitskins.price` / 100 -> BITSKINS ask in USD (BITSKINS' catalogue currency), `count` -> quantity.
 *   `bitskins_recent` (a recent sale, count 1 in the example) and the other providers are not read.
 * - Freshness: `createdAt` says when Pricempire last saw the price: it is the quote's observation time (`observed_at`,
 *   `fresh_at`; RawQuote.observedAt), not the run's. A price older than MAX_AGE_MS (2 days) gives no
 *   row, so a market that stopped trading (CS2Cap lists BitSkins among providers that shut down) is never served as
 *   fresh at this run; an item without a `bitskins` entry gives none either. Neither delists a quote: an aggregator's
 *   silence does not say the market has no listing.
 * - A 200 with `"status": false`, an HTML page, a truncated body, an `item` for another name, or a renamed field
 *   (`prices`, `price`, `count`, `createdAt`) fails the run (`format`).
 * - Limits: the documentation states none; a polite 30 requests a minute, one at a time.
 * - Not a complete listing (a watch list).
 */
import { formatDecimal, toMoney } from '../../lib/money.js';
import { UpstreamError, type CollectorSource, type RawQuote, type SourceContext } from '../source.js';
import { isObject, numberText, readJsonBody } from './keyed-json.js';

/** Oldest `createdAt` of a price turned into a quote, in ms before the run's clock. */
export const PRICEMPIRE_MAX_AGE_MS = 2 * 24 * 3600 * 1000;

/** Request path (as upstream) of one item, with the key. */
export function pricempireItemPath(name: string, key: string): string {
  return `/v2/items/${encodeURIComponent(name)}?api_key=${encodeURIComponent(key)}&currency=USD`;
}

/**
 * BitSkins' ask of `name` from one `getItemByName` answer: `{price, quantity, observedAt}` (USD decimal string, listing
 * count, when Pricempire saw it), or null when the answer has no current BitSkins price (none, or older than
 * PRICEMPIRE_MAX_AGE_MS before `now`). Throws UpstreamError('format') on `status: false`, an answer about another item,
 * or a renamed field.
 */
export function pricempireBitskinsAsk(doc: unknown, name: string, now: Date, what: string): { price: string; quantity: number; observedAt: Date } | null {
  if (!isObject(doc)) throw new UpstreamError('format', `${what}: not an object`);
  if ('status' in doc && doc.status !== true) throw new UpstreamError('format', `${what}: status ${JSON.stringify(doc.status)}`);
  const item = isObject(doc.item) ? doc.item : doc;
  if (typeof item.name === 'string' && item.name !== name) throw new UpstreamError('format', `${what}: answered ${JSON.stringify(item.name)}`);
  if (!isObject(item.prices)) throw new UpstreamError('format', `${what}: no \`prices\` object (renamed upstream?)`);
  const entry = item.prices.bitskins;
  if (entry === undefined || entry === null) return null;
  if (!isObject(entry)) throw new UpstreamError('format', `${what}: prices.bitskins is not an object`);
  const cents = numberText(entry.price);
  if (cents === null || !/^\d{1,15}$/.test(cents)) throw new UpstreamError('format', `${what}: prices.bitskins.price missing or not integer cents`);
  const count = numberText(entry.count);
  if (count === null || !/^\d{1,9}$/.test(count)) throw new UpstreamError('format', `${what}: prices.bitskins.count missing or not a count`);
  if (typeof entry.createdAt !== 'string' || Number.isNaN(Date.parse(entry.createdAt))) throw new UpstreamError('format', `${what}: prices.bitskins.createdAt missing or not a date`);
  const observedAt = new Date(entry.createdAt);
  if (now.getTime() - observedAt.getTime() > PRICEMPIRE_MAX_AGE_MS) return null;
  return { price: formatDecimal(toMoney(cents).dividedBy(100)), quantity: Number(count), observedAt };
}

async function* collect(ctx: SourceContext): AsyncIterable<RawQuote> {
  if (ctx.credential === null || ctx.credential === '') throw new UpstreamError('not_configured', 'PRICEMPIRE_API_KEY is not set');
  for (const name of ctx.watchlist) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('aborted');
    const what = `pricempire item ${JSON.stringify(name)}`;
    let res: Response;
    try {
      res = await ctx.fetch(pricempireItemPath(name, ctx.credential), { headers: { Accept: 'application/json' } });
    } catch (e) {
      if (e instanceof UpstreamError && e.kind === 'http' && e.status === 404) continue; // "Item not found"
      throw e;
    }
    const ask = pricempireBitskinsAsk(await readJsonBody(res, what, { lossless: true }), name, ctx.now, what);
    if (ask === null) continue;
    yield {
      marketHashName: name,
      marketCode: 'BITSKINS',
      side: 'ask',
      currencyCode: 'USD',
      price: ask.price,
      quantity: ask.quantity,
      isQuantityMinimum: false,
      isAllItemsSamePrice: null,
      observedAt: ask.observedAt,
    };
  }
}

/** BitSkins' lowest listings (USD) of the watched items, through Pricempire; API key in PRICEMPIRE_API_KEY. */
export const pricempireSource: CollectorSource = {
  id: 'pricempire',
  providerCode: 'PRICEMPIRE',
  markets: ['BITSKINS'],
  defaultBaseUrl: 'https://api.pricempire.com',
  intervalSeconds: 3600,
  limits: { requestsPerMinute: 30, concurrency: 1, timeoutMs: 15_000, retries: 2 },
  credentialEnv: 'PRICEMPIRE_API_KEY',
  completeListing: false,
  perItem: true,
  collect,
};
