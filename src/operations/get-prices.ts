/** GET /prices (spec): one item's quotes. Quotes are selected as `marketsJson`, the text `quoteJson` (quotes/quotes.ts) wrote once per cached quote. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { billed } from './docs.js';
import { ItemPricesOut } from '../shapes/quote.js';

export default defineOperation({
  id: 'getPrices',
  kind: 'query',
  path: ['prices'],
  selection: 'app_id: appId market_hash_name: marketHashName markets: marketsJson',
  params: [p.marketHashName(), p.appId(), p.markets(), p.side('all')],
  rest: { envelope: true },
  openapi: {
    payload: ItemPricesOut,
    statuses: [404],
    docs: {
      tag: 'Prices',
      summary: 'Quotes of one item',
      description:
        "The current quotes of one item on every marketplace: at most one per market and side, sorted by market code then side, each in the market's own currency. When several sources report a market, a listed quote wins over a delisted one, then data taken from the marketplace itself over an aggregator, then the most recently confirmed. An item with enough market data also has its CSCP valuation (market `CSCP`, side `mid`, CNY) with the `valuation` object.\n\n" +
        '1 credit per answer (`meta.credit`); 404 when the item has no quote at all for `app_id` (not charged); when `markets` or `side` exclude every quote, 200 with empty `markets`.',
      response: billed(ex.ITEM_PRICES),
    },
  },
});
