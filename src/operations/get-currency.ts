/** GET /currencies/{currency_id} (spec): one official currency. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { free } from './docs.js';
import * as v from '../validation/params.js';
import { CurrencyOut, selectionOf } from '../shapes/catalogue.js';

export default defineOperation({
  id: 'getCurrency',
  kind: 'query',
  path: ['currency'],
  selection: selectionOf(CurrencyOut),
  params: [
    p.single({
      in: 'path',
      name: 'currency_id',
      arg: 'id',
      openapi: v.currencyId,
      absent: p.REQUIRED,
      // An integer in decimal digits (leading zeros allowed); its range is the shared rule.
      read: (raw, problems) => {
        if (/^\d+$/.test(raw)) return problems.check('path', 'currency_id', v.currencyId, Number(raw));
        problems.add('path', 'currency_id', 'must be a whole number from 0 to 2147483647');
        return undefined;
      },
      graphql: { type: 'Int', required: true, rule: v.currencyId },
    }),
  ],
  rest: { envelope: true },
  openapi: {
    payload: CurrencyOut,
    statuses: [404],
    docs: {
      tag: 'Catalogue',
      summary: 'One currency',
      description:
        'The currency with this id (the `id` field GET /currencies gives). 404 when the id does not exist, was deleted or is not an official currency.',
      response: free(ex.CURRENCY),
      parameters: {
        currency_id: {
          example: ex.CURRENCY.id,
          description: "The currency's `id`, a whole number.",
        },
      },
    },
  },
});
