/** POST /prices/batch (spec): the quotes of up to 1,000 items, from a JSON body (BatchPricesIn). */
import { defineOperation, jsonBody } from './operation.js';
import * as ex from './examples.js';
import { billed } from './docs.js';
import * as v from '../validation/params.js';
import { CS2_APP_ID } from '../collectors/importers.js';
import { LARGE_LOAD } from '../quotes/quote-cache.js';
import { BatchPricesOut } from '../shapes/quote.js';

export default defineOperation({
  id: 'batchPrices',
  kind: 'query',
  path: ['batchPrices'],
  selection: 'app_id: appId side items { market_hash_name: marketHashName markets: marketsJson }',
  params: [],
  body: jsonBody({
    schema: v.batchBody.meta({ id: 'BatchPricesIn' }),
    args: {
      marketHashNames: { type: 'String', list: true, required: true, rule: v.marketHashNames },
      appId: { type: 'String', required: true, defaultValue: CS2_APP_ID, rule: v.appId },
      markets: { type: 'String', list: true, required: false, rule: v.marketList },
      side: { type: 'SideFilter', required: true, defaultValue: 'all' },
    },
    variables: (body) => ({
      marketHashNames: body.market_hash_names,
      appId: body.app_id ?? CS2_APP_ID,
      markets: body.markets ?? null,
      side: body.side ?? 'all',
    }),
  }),
  rest: {
    envelope: true,
    heavy: (variables) => Array.isArray(variables.marketHashNames) && variables.marketHashNames.length >= LARGE_LOAD,
  },
  openapi: {
    payload: BatchPricesOut,
    statuses: [413],
    docs: {
      tag: 'Prices',
      summary: 'Quotes of up to 1,000 items',
      description:
        'The quotes of many items in one request: one `items` entry per requested name, in request order (duplicates keep their own entries), each with the same quotes GET /prices gives. An unknown name is not an error: its `markets` is empty (this operation never answers 404). `markets` and `side` filter every item alike.\n\n' +
        '1 credit per started block of 100 names, counted over the whole list; checked before the lookup (402 when the balance is too low) and charged only on success.',
      requestBody: ex.BATCH_REQUEST,
      response: billed(ex.BATCH_PRICES),
    },
  },
});
