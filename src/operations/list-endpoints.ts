/** GET /endpoints (spec): access and cost of every operation (data/endpoints.json). */
import { defineOperation } from './operation.js';
import * as ex from './examples.js';
import { free } from './docs.js';
import { z } from 'zod';
import { EndpointInfoOut } from '../shapes/service.js';

export default defineOperation({
  id: 'listEndpoints',
  kind: 'query',
  path: ['endpoints'],
  selection: `method path premium credit_cost: creditCost recommended_interval_seconds: recommendedIntervalSeconds
    rate_limit: rateLimit { max_requests: maxRequests window_seconds: windowSeconds }
    unit_pricing: unitPricing { unit_size: unitSize units_body_field: unitsBodyField max_units: maxUnits }
    roles`,
  params: [],
  rest: { envelope: true },
  openapi: {
    payload: z.array(EndpointInfoOut),
    docs: {
      tag: 'Service',
      summary: 'Access and cost of every operation',
      description:
        "One entry per method and path of every documented operation, sorted by path then method: who may call it, what it costs in credits (per request or per block of units), its rate limit and the recommended polling interval. The same data is each operation's `x-quotegate` extension in this document.",
      response: free(ex.ENDPOINTS),
    },
  },
});
