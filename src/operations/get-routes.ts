/** GET /prices/routes (an extension, README: Extensions; docs/fees.md): an item's cross-market routes after fees. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { billed } from './docs.js';
import { selectionOf } from '../shapes/catalogue.js';
import { ItemRoutesOut } from '../shapes/routes.js';

export default defineOperation({
  id: 'getRoutes',
  kind: 'query',
  path: ['routes'],
  selection: selectionOf(ItemRoutesOut),
  params: [
    p.marketHashName(),
    p.appId(),
    ...p.routeOptions('every market with an ask'),
    p.flag(
      'include_unpriced',
      'includeUnpriced',
      false,
      'true: list routes with an unknown fee (unpriced) after the priced ones; false (default): leave them out and count them in `unpriced_left_out`.',
      'List routes with an unknown fee (unpriced) after the priced ones; by default they are left out and counted.',
    ),
  ],
  rest: { envelope: true },
  openapi: {
    payload: ItemRoutesOut,
    statuses: [404],
    docs: {
      tag: 'Trade routes',
      summary: 'Buy-here-sell-there routes of one item',
      description:
        "Every pair of a market to buy on (its ask) and a market to sell on (its ask or bid) for one item, with what the purchase costs and the sale pays after each market's official fees, every amount converted at official rates into `currency`. Each leg lists its fee steps with the running amount and the rates it used. Routes are ranked by margin; a route with an unknown fee is `unpriced` (an unknown fee is never free): it is left out and counted in `unpriced_left_out` unless `include_unpriced=true`, and `fee_profile` prices it with your own rates (`fee_source: caller`). Each route gives its trade hold (`hold_days`, days before the item bought can be sold on the sell market, with its source); `min_quantity` drops routes whose quotes report fewer items.\n\n" +
        "`fund` and `payout` say whether money moves through the markets' deposit and withdrawal fees (cash) or stays on a balance there. 1 credit per answer; 404 when the item has no quotes.",
      response: billed(ex.ITEM_ROUTES),
      parameters: {
        currency: { example: 'CNY' },
        buy_on: { example: 'YOUPIN,CSFLOAT' },
        sell_on: { example: 'BUFF163' },
        fund: { example: 'balance' },
        payout: { example: 'balance' },
        min_credibility: { example: '0.25' },
        min_quantity: { example: '2' },
        fee_profile: {
          example: 'C5GAME:sale=0.025,withdraw=0.01;YOUPIN:sale=0.01',
        },
        include_unpriced: { example: 'false' },
      },
    },
  },
});
