/**
 * market.csgo: the public class/instance price list `GET https://market.csgo.com/api/v2/prices/class_instance/USD.json`
 * (no key), one response for the whole CS2 market with both sides: per Steam class/instance, the lowest sell price
 * (`price`) and the best buy order (`buy_order`).
 *
 * Format (market.csgo's API v2 documentation example, fixtures/marketcsgo/PROVENANCE.md): `{"success": true, "time",
 * "currency": "RUB"|"USD"|"EUR", "items": {"<classid>_<instanceid>": {"price", "buy_order", "avg_price",
 * "popularity_7d", "market_hash_name", ...}}}`, prices as decimal strings in `currency` (`"0.50"`), `buy_order` null
 * when there is none (the `centrual/market-csgo` client types it `null|string`).
 *
 * Quotes: several class/instances share one market hash name (e.g. different instances of the same skin), so rows are
 * aggregated per name: the ask is the lowest `price`, the bid the highest `buy_order` (decimal.js comparisons on the
 * source text); both in the response's own `currency` (the runner converts). A `price` or `buy_order` that is not a
 * positive decimal is passed through on its own row with its text for the runner to count and skip.
 * Quantity is null on both sides: the list has no listing or order counts (`popularity_7d` counts sales, not offers).
 * `completeListing` is false: the documentation does not say whether names without sell offers are listed, so a run
 * never delists what it did not see.
 *
 * Limit: "If you send more than 5 requests per second to our server, your key will be deleted"
 * (market.csgo.com/en/api/content/start); this keyless file is requested once per run, every 600 s.
 */
import type { CollectorSource, RawQuote, SourceContext } from '../source.js';
import { UpstreamError } from '../source.js';
import { formatDecimal, type Money } from '../../lib/money.js';
import { jsonEntries, positiveDecimal, requireFields, scalarText, statusFieldChecks, type JsonValue } from './json-stream.js';

/** Request path (as upstream) of the class/instance price list in USD. */
export const MARKETCSGO_CLASS_INSTANCE_PATH = '/api/v2/prices/class_instance/USD.json';

const CURRENCY = /^[A-Z]{3}$/;
/** Fields every class/instance must have (a renamed one fails the run). */
const ITEM_FIELDS = ['market_hash_name', 'price', 'buy_order'];

async function* collect(ctx: SourceContext): AsyncGenerator<RawQuote> {
  const what = 'market.csgo prices/class_instance';
  const res = await ctx.fetch(MARKETCSGO_CLASS_INSTANCE_PATH, { headers: { Accept: 'application/json' } });
  let currency: string | null = null;
  const asks = new Map<string, Money>();
  const bids = new Map<string, Money>();
  const rejected: { name: string; side: 'ask' | 'bid'; text: string }[] = [];
  const names: string[] = []; // first-seen order
  const seen = new Set<string>();
  const fields = {
    // A 200 with an error object: {"success": false, "error": "..."} (centrual/market-csgo's error response type).
    ...statusFieldChecks(what),
    currency: (v: JsonValue) => {
      if (typeof v !== 'string' || !CURRENCY.test(v)) throw new UpstreamError('format', `${what}: currency=${scalarText(v)}, not an ISO 4217 code`);
      currency = v;
    },
  };
  for await (const { key, value } of jsonEntries(res, { what, list: 'object', listKey: 'items', fields, signal: ctx.signal })) {
    const item = requireFields(value, ITEM_FIELDS, `${what}, item ${JSON.stringify(key)}`);
    const name = scalarText(item.market_hash_name!);
    if (!seen.has(name)) {
      seen.add(name);
      names.push(name);
    }
    for (const [side, raw, best, better] of [
      ['ask', item.price, asks, (a: Money, b: Money) => a.lt(b)],
      ['bid', item.buy_order, bids, (a: Money, b: Money) => a.gt(b)],
    ] as const) {
      if (raw === null || raw === undefined) continue;
      const text = scalarText(raw);
      const d = positiveDecimal(text);
      if (!d) {
        rejected.push({ name, side, text });
        continue;
      }
      const cur = best.get(name);
      if (!cur || better(d, cur)) best.set(name, d);
    }
  }
  if (currency === null) throw new UpstreamError('format', `${what}: no "currency" in the response (renamed or missing)`);
  const row = (name: string, side: 'ask' | 'bid', price: string): RawQuote => ({
    marketHashName: name,
    marketCode: 'MARKETCSGO',
    side,
    currencyCode: currency!,
    price,
    quantity: null,
  });
  for (const r of rejected) yield row(r.name, r.side, r.text);
  for (const name of names) {
    const ask = asks.get(name);
    if (ask) yield row(name, 'ask', formatDecimal(ask));
    const bid = bids.get(name);
    if (bid) yield row(name, 'bid', formatDecimal(bid));
  }
}

/** market.csgo's class/instance price list aggregated per name (ask and bid in the response's currency, no counts). */
export const marketcsgo: CollectorSource = {
  id: 'marketcsgo',
  providerCode: 'MARKETCSGO',
  markets: ['MARKETCSGO'],
  defaultBaseUrl: 'https://market.csgo.com',
  intervalSeconds: 600,
  limits: { requestsPerMinute: 6, concurrency: 1, timeoutMs: 120_000, retries: 3 },
  completeListing: false,
  collect,
};
