/**
 * Lis-skins: the public full export `GET https://lis-skins.com/market_export_json/api_csgo_full.json` (no key), one
 * response for the whole CS2 market, as individual listings: `{"status": "success", "items": [{"id", "name", "price",
 * "unlock_at", "item_class_id", "created_at", "item_float", "stickers", ...}]}` (about 170 MB and 2.3M listings; it
 * is read as a stream and never held whole). `price` is USD.
 *
 * Quotes: one ask per item name, the lowest listing price (decimal.js comparison on the source text) and the number
 * of listings, counting only listings that can be delivered now: `unlock_at` null or not after the run's clock (a
 * trade-locked listing is a different product: it cannot be received before its date). A listing whose price is not
 * a positive decimal is passed through on its own row with its text as the price, for the runner to count and skip.
 *
 * Limit: Lis-skins publishes no rate limit for the export files (their API docs at lis-skins-ru.stoplight.io cover the
 * keyed API); the file is regenerated periodically, so one request per run every 10 minutes is the polite default.
 */
import type { CollectorSource, RawQuote, SourceContext } from '../source.js';
import { formatDecimal, type Money } from '../../lib/money.js';
import { JsonNumber, jsonEntries, positiveDecimal, requireFields, scalarText, statusFieldChecks, type JsonValue } from './json-stream.js';

/** Request path (as upstream) of the full CS2 export. */
export const LISSKINS_FULL_PATH = '/market_export_json/api_csgo_full.json';

/** Fields every listing must have (a renamed one fails the run). */
const LISTING_FIELDS = ['name', 'price', 'unlock_at'];

interface Best {
  min: Money;
  count: number;
}

/** True when a listing with this `unlock_at` can be delivered at `now` (null, or a date not after now). */
function lisskinsUnlocked(unlockAt: JsonValue | undefined, now: Date): boolean {
  if (unlockAt === null) return true;
  const text = unlockAt instanceof JsonNumber ? unlockAt.text : unlockAt;
  if (typeof text !== 'string') return false;
  const t = Date.parse(text);
  return Number.isFinite(t) && t <= now.getTime();
}

async function* collect(ctx: SourceContext): AsyncGenerator<RawQuote> {
  const what = 'Lis-skins api_csgo_full.json';
  const res = await ctx.fetch(LISSKINS_FULL_PATH, { headers: { Accept: 'application/json' } });
  const best = new Map<string, Best>();
  const fields = statusFieldChecks(what, { status: 'success' });
  for await (const { key, value } of jsonEntries(res, { what, list: 'array', listKey: 'items', fields, signal: ctx.signal })) {
    const listing = requireFields(value, LISTING_FIELDS, `${what}, listing ${key}`);
    const name = scalarText(listing.name!);
    if (!lisskinsUnlocked(listing.unlock_at, ctx.now)) continue;
    const text = listing.price === null ? '' : scalarText(listing.price!);
    const price = positiveDecimal(text);
    if (!price) {
      yield { marketHashName: name, marketCode: 'LISSKINS', side: 'ask', currencyCode: 'USD', price: text, quantity: null };
      continue;
    }
    const b = best.get(name);
    if (!b) best.set(name, { min: price, count: 1 });
    else {
      b.count += 1;
      if (price.lt(b.min)) b.min = price;
    }
  }
  for (const [name, b] of best) {
    yield {
      marketHashName: name,
      marketCode: 'LISSKINS',
      side: 'ask',
      currencyCode: 'USD',
      price: formatDecimal(b.min),
      quantity: b.count,
    };
  }
}

/** The Lis-skins full export aggregated per item (asks in USD, listing counts). */
export const lisskins: CollectorSource = {
  id: 'lisskins',
  providerCode: 'LISSKINS',
  markets: ['LISSKINS'],
  defaultBaseUrl: 'https://lis-skins.com',
  intervalSeconds: 600,
  limits: { requestsPerMinute: 1, concurrency: 1, timeoutMs: 300_000, retries: 2 },
  completeListing: true,
  collect,
};
