/** GET /status (spec): the recorded monitoring history. */
import { defineOperation } from './operation.js';
import * as ex from './examples.js';
import { free } from './docs.js';
import { StatusOut } from '../shapes/service.js';

export default defineOperation({
  id: 'getStatus',
  kind: 'query',
  path: ['status'],
  selection: '',
  params: [],
  rest: { envelope: true, headers: { 'Cache-Control': 'no-store' } },
  openapi: {
    payload: StatusOut,
    docs: {
      tag: 'Service',
      summary: 'Service health history',
      description:
        "Recorded monitoring data (a history view, not a live probe): hourly scores per area, 15-minute service probes, quotes received per market, infrastructure checks and where the collectors' proxies are. Components or buckets without data are empty or absent, never zero. 503 when the monitoring data cannot be read: partial results are never returned.",
      response: free(ex.STATUS),
    },
  },
});
