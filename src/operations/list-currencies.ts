/** GET /currencies (spec): the official currencies with USD rates. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { free } from './docs.js';
import { z } from 'zod';
import * as v from '../validation/params.js';
import { CurrencyOut, selectionOf } from '../shapes/catalogue.js';

export default defineOperation({
  id: 'listCurrencies',
  kind: 'query',
  path: ['currencies'],
  selection: selectionOf(CurrencyOut),
  params: [
    p.single({
      name: 'search',
      arg: 'search',
      openapi: v.currencySearch.optional(),
      absent: null,
      read: (raw, problems) => problems.check('query', 'search', v.currencySearch, raw),
      graphql: { type: 'String', required: false, rule: v.currencySearch },
    }),
  ],
  rest: { envelope: true },
  openapi: {
    payload: z.array(CurrencyOut),
    docs: {
      tag: 'Catalogue',
      summary: 'List official currencies',
      description:
        'The official currencies with their USD rates (`usd_rate`: US dollars per unit), ordered by code. `search` keeps the codes containing it, case-insensitively.',
      response: free(ex.CURRENCIES),
      parameters: {
        search: {
          example: 'CN',
          description: 'Case-insensitive substring of the currency code; omitted: every currency.',
        },
      },
    },
  },
});
