/** GET /prices/history (an extension; docs/history.md): an item's candles per market and its CSCP series. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { billed } from './docs.js';
import * as v from '../validation/params.js';
import { selectionOf } from '../shapes/catalogue.js';
import { ItemHistoryOut } from '../shapes/history.js';

export default defineOperation({
  id: 'getPriceHistory',
  kind: 'query',
  path: ['priceHistory'],
  selection: selectionOf(ItemHistoryOut),
  params: [
    p.marketHashName(),
    p.appId(),
    p.markets('Comma-separated market codes (default: every market with history).', 'Market codes to include (default: every market with history).'),
    p.side(
      'all',
      'ask: ask candles and the listing minimum; bid: bid candles; mid: only the CSCP series; all (default): everything, sales included.',
      'all',
      'ask: ask candles and the listing minimum; bid: bid candles; mid: only the CSCP series; all: everything, sales included.',
    ),
    p.day('from', 'from', 'First UTC day; default: the longest span the interval allows, ending at `to`.', '2026-07-10', 'First day (UTC); default: the longest span the interval allows, ending at `to`.'),
    p.day('to', 'to', 'Last UTC day; default today. `from` after `to` is 422.', '2026-07-17', 'Last day (UTC); default today.'),
    p.single({
      name: 'interval',
      arg: 'interval',
      openapi: v.historyInterval.optional().meta({
        description: 'day (default; range at most 366 days), week (ISO, Monday-dated; at most 1,830 days) or month (at most 3,660 days).',
      }),
      // The variable carries the GraphQL enum's name (DAY, WEEK, MONTH); the resolver receives its value (day, ...).
      absent: 'DAY',
      read: (raw, problems) => problems.check('query', 'interval', v.historyInterval, raw)?.toUpperCase(),
      graphql: {
        type: 'HistoryInterval',
        required: true,
        defaultValue: 'day',
        description: 'Candle width; the range may span at most 366 days (day), 1,830 (week), 3,660 (month).',
      },
    }),
  ],
  rest: { envelope: true },
  openapi: {
    payload: ItemHistoryOut,
    statuses: [404],
    docs: {
      tag: 'History',
      summary: 'Price history of one item',
      description:
        "An item's candles per market (open, high, low, close, observations, last quantity) and its CSCP valuation series with the band mid x e^(-u) to mid x e^(+u), per day, ISO week (dated by its Monday) or month (dated by its first day). Imported series are labelled: `listing_minimum` (Buff163 archive 2021-07 to 2024-02, a minimum listing price, never an ask) and `sales` (Steam daily sales, USD, with units sold in `volume`).\n\n" +
        'Range: `to` defaults to today, `from` to the longest span the interval allows (366 days by day, 1,830 by week, 3,660 by month). A bad date, a reversed or too long range is 422; an item never seen is 404. 1 credit per answer.',
      response: billed(ex.ITEM_HISTORY),
      parameters: {
        markets: { example: 'BUFF163,CSCP' },
        from: { example: '2026-07-10' },
        to: { example: '2026-07-17' },
        interval: { example: 'day' },
      },
    },
  },
});
