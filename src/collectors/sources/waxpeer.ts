/**
 * Waxpeer: the public price list `GET https://api.waxpeer.com/v1/prices?game=csgo&minified=1` (no key), one
 * response for the whole CS2 market: every item name with its lowest listing (`min`) and listing count (`count`).
 *
 * Format (Waxpeer API docs, `GET /v1/prices`, as reproduced in the `skylight-ity/waxpeer` client's `getPrices`
 * example): `{"success": true, "items": [{"name", "count", "min", "img"?, "steam_price"?, "rarity_color"?, "type"?}]}`.
 * Prices are in thousandths of USD ("Price of the item 1$=1000", same client); `min` is scaled with decimal.js.
 * `highest_offer=1` would add a best buy order, but its field is not documented, so this source reports asks only.
 *
 * Limit: the `skylight-ity/waxpeer` client throttles `getPrices` to 60 requests per 60 s ("Ignoring this limit might
 * cause 429 error code or IP ban"); one run is one request.
 */
import type { CollectorSource, RawQuote, SourceContext } from '../source.js';
import { formatDecimal } from '../../lib/money.js';
import { countOf, decimalOf, jsonEntries, requireFields, scalarText, statusFieldChecks } from './json-stream.js';

/** Request path (as upstream) of the whole-market price list. */
export const WAXPEER_PRICES_PATH = '/v1/prices?game=csgo&minified=1';

/** Fields every item must have (a renamed one fails the run). */
const ITEM_FIELDS = ['name', 'min', 'count'];

/** Thousandths of USD (`"937999"`) to a USD decimal string (`"937.999"`); other text passes unchanged for the runner to reject. */
export function waxpeerPrice(min: string): string {
  const d = decimalOf(min);
  return d ? formatDecimal(d.div(1000)) : min;
}

async function* collect(ctx: SourceContext): AsyncGenerator<RawQuote> {
  const res = await ctx.fetch(WAXPEER_PRICES_PATH, { headers: { Accept: 'application/json' } });
  const what = 'Waxpeer /v1/prices';
  // A 200 with an error object: {"success":false,"msg":...} (Waxpeer) or {"success":false,"error":...}.
  const entries = jsonEntries(res, { what, list: 'array', listKey: 'items', fields: statusFieldChecks(what), signal: ctx.signal });
  for await (const { key, value } of entries) {
    const item = requireFields(value, ITEM_FIELDS, `${what}, item ${key}`);
    const count = countOf(item.count);
    yield {
      marketHashName: scalarText(item.name!),
      marketCode: 'WAXPEER',
      side: 'ask',
      currencyCode: 'USD',
      price: count === 0 || item.min === null ? null : waxpeerPrice(scalarText(item.min!)),
      quantity: count,
    };
  }
}

/** The Waxpeer whole-market price list (asks in USD, listing counts). */
export const waxpeer: CollectorSource = {
  id: 'waxpeer',
  providerCode: 'WAXPEER',
  markets: ['WAXPEER'],
  defaultBaseUrl: 'https://api.waxpeer.com',
  intervalSeconds: 300,
  limits: { requestsPerMinute: 60, concurrency: 1, timeoutMs: 60_000, retries: 3 },
  completeListing: true,
  collect,
};
