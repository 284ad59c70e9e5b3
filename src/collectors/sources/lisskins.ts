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
import { UpstreamError } from '../source.js';
import { Money, formatDecimal } from '../../lib/money.js';
import { isRecord, readJsonListing } from './bulk-json.js';

/** Request path (as upstream) of the full CS2 export. */
export const LISSKINS_FULL_PATH = '/market_export_json/api_csgo_full.json';

const DECIMAL = /^\d{1,20}(\.\d{1,20})?$/;

interface Best {
  min: InstanceType<typeof Money>;
  count: number;
}

/** True when a listing with this `unlock_at` can be delivered at `now` (null, or a date not after now). */
export function lisskinsUnlocked(unlockAt: unknown, now: Date): boolean {
  if (unlockAt === null) return true;
  if (typeof unlockAt !== 'string') return false;
  const t = Date.parse(unlockAt);
  return Number.isFinite(t) && t <= now.getTime();
}

async function* collect(ctx: SourceContext): AsyncGenerator<RawQuote> {
  const label = 'Lis-skins api_csgo_full.json';
  const res = await ctx.fetch(LISSKINS_FULL_PATH, { headers: { Accept: 'application/json' } });
  const best = new Map<string, Best>();
  for await (const ev of readJsonListing(res, { label, listKey: 'items', fields: ['status', 'success', 'error'] }, ctx.signal)) {
    if (ev.kind === 'field') {
      if (ev.key === 'status' && ev.value !== 'success') throw new UpstreamError('format', `${label}: status=${JSON.stringify(ev.value)}`);
      if (ev.key === 'success' && ev.value !== true) throw new UpstreamError('format', `${label}: success=${JSON.stringify(ev.value)}`);
      if (ev.key === 'error' && ev.value) throw new UpstreamError('format', `${label}: error ${JSON.stringify(ev.value)}`);
      continue;
    }
    for (const { value } of ev.items) {
      if (!isRecord(value) || !('name' in value) || !('price' in value) || !('unlock_at' in value)) {
        throw new UpstreamError('format', `${label}: a listing without name, price and unlock_at (fields renamed?)`);
      }
      const name = typeof value.name === 'string' ? value.name : String(value.name);
      if (!lisskinsUnlocked(value.unlock_at, ctx.now)) continue;
      const text = value.price === null ? '' : String(value.price);
      const price = DECIMAL.test(text) ? new Money(text) : null;
      if (!price || price.isZero()) {
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
