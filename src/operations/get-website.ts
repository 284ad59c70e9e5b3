/** GET /websites/{code} (spec): one marketplace. */
import { defineOperation } from './operation.js';
import * as p from './params.js';
import * as ex from './examples.js';
import { free } from './docs.js';
import { selectionOf, WebsiteOut } from '../shapes/catalogue.js';

export default defineOperation({
  id: 'getWebsite',
  kind: 'query',
  path: ['website'],
  selection: selectionOf(WebsiteOut),
  params: [p.websiteCode()],
  rest: { envelope: true },
  openapi: {
    payload: WebsiteOut,
    statuses: [404],
    docs: {
      tag: 'Catalogue',
      summary: 'One marketplace',
      description: 'The marketplace with this code, deprecated ones included. 404 when no marketplace has the code.',
      response: free(ex.WEBSITE),
    },
  },
});
