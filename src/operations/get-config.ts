/** GET /config (spec): the public configuration. */
import { defineOperation } from './operation.js';
import * as ex from './examples.js';
import { free } from './docs.js';
import { ConfigOut } from '../shapes/service.js';

export default defineOperation({
  id: 'getConfig',
  kind: 'query',
  path: ['config'],
  selection: 'home_currency: homeCurrency',
  params: [],
  rest: { envelope: true, headers: { 'Cache-Control': 'no-store' } },
  openapi: {
    payload: ConfigOut,
    docs: {
      tag: 'Service',
      summary: 'Public configuration',
      description:
        "The service's public settings: the home currency. The caller's own base currency is an account setting (GET /me). Sent with `Cache-Control: no-store`.",
      response: free(ex.CONFIG),
    },
  },
});
