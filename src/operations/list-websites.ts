/** GET /websites (spec): the marketplace catalogue. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { free } from './docs.js';
import { z } from 'zod';
import { selectionOf, WebsiteOut } from '../shapes/catalogue.js';

export default defineOperation({
  id: 'listWebsites',
  kind: 'query',
  path: ['websites'],
  selection: selectionOf(WebsiteOut),
  params: [p.flag('include_deprecated', 'includeDeprecated', false, 'true: deprecated marketplaces too. Default false.')],
  rest: { envelope: true },
  openapi: {
    payload: z.array(WebsiteOut),
    docs: {
      tag: 'Catalogue',
      summary: 'List marketplaces',
      description:
        'Every supported marketplace, ordered by code. Deprecated marketplaces are hidden unless `include_deprecated=true`; then they appear with `is_deprecated: true`.',
      response: free(ex.WEBSITES),
      parameters: {
        include_deprecated: {
          example: 'false',
          description: 'true: deprecated marketplaces too. Default false.',
        },
      },
    },
  },
});
