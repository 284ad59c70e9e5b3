/** GET /prices/routes/top (an extension; docs/fees.md, The market-wide scan): the best routes across the catalogue. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { billed } from './docs.js';
import { z } from 'zod';
import * as v from '../validation/params.js';
import { selectionOf } from '../shapes/catalogue.js';
import { TopRoutesOut } from '../shapes/routes.js';

export default defineOperation({
  id: 'getTopRoutes',
  kind: 'query',
  path: ['topRoutes'],
  selection: selectionOf(TopRoutesOut),
  params: [
    p.appId(),
    ...p.routeOptions('every market'),
    p.single({
      name: 'min_margin',
      arg: 'minMargin',
      openapi: z.string().regex(v.MIN_MARGIN_PATTERN).optional().meta({
        description: 'Keep routes whose margin (net / cost) is at least this fraction, -1 to 1000 (0.05 = 5 %); default: any priced route.',
      }),
      absent: null,
      read: (raw, problems) => problems.check('query', 'min_margin', v.minMargin, raw) ?? null,
      graphql: { type: 'String', required: false, description: 'Keep routes whose margin (net / cost) is at least this decimal fraction (-1 to 1000; "0.05" = 5 %).', rule: v.minMargin },
    }),
    p.single({
      name: 'limit',
      arg: 'limit',
      openapi: z
        .string()
        .regex(/^\d{1,4}$/)
        .optional()
        .meta({
          description: `Routes answered, 1-${v.MAX_TOP_LIMIT} (default 20).`,
        }),
      absent: 20,
      read: (raw, problems) => problems.check('query', 'limit', v.topLimit, /^\d{1,4}$/.test(raw) ? Number(raw) : NaN),
      graphql: { type: 'Int', required: true, defaultValue: 20, description: `Routes answered, 1-${v.MAX_TOP_LIMIT}.`, rule: v.topLimit },
    }),
  ],
  rest: { envelope: true },
  openapi: {
    payload: TopRoutesOut,
    docs: {
      tag: 'Trade routes',
      summary: 'The best routes across the catalogue',
      description:
        "The best priced route of each item, across every item of the app, ranked by margin (then net), at most `limit` (1-100). The options are those of GET /prices/routes plus `min_margin`; only priced routes are ranked (give `fee_profile` to price markets whose official fees are unknown). Method (docs/fees.md, The market-wide scan): PostgreSQL pre-selects the candidate items by an estimate of their margin (cheapest ask and best sale in USD, each market's fees as a factor), then the candidates' routes are priced exactly; `candidate_items` says how many. 5 credits per answer; 422 for each bad parameter (never billed).",
      response: billed(ex.TOP_ROUTES),
      parameters: {
        currency: { example: 'CNY' },
        fund: { example: 'balance' },
        payout: { example: 'balance' },
        min_credibility: { example: '0.25' },
        buy_on: { example: 'YOUPIN,CSFLOAT' },
        sell_on: { example: 'BUFF163' },
        min_margin: { example: '0.02' },
        min_quantity: { example: '2' },
        limit: { example: '20' },
        fee_profile: { example: 'C5GAME:sale=0.025,withdraw=0.01' },
      },
    },
  },
});
