/**
 * The endpoint catalogue: one row per documented operation (spec: "Summary of access and cost",
 * Limits, EndpointInfoOut). `GET /endpoints`, the OpenAPI `x-quotegate` extension, billing and rate
 * limits all read these rows; GraphQL root fields doing the same work as a metered REST operation
 * name the row they share (`graphqlFields`).
 */

import { byCodePoint } from '../lib/order.js';

/** At most `maxRequests` per `windowSeconds`, per account (spec: RateLimitSpec). */
export interface RateLimitSpec {
  maxRequests: number;
  windowSeconds: number;
}

/** Cost = creditCost per started block of `unitSize` items of body list `unitsBodyField` (spec: UnitPricingSpec). */
export interface UnitPricingSpec {
  unitSize: number;
  unitsBodyField: string;
  maxUnits: number;
}

/** One catalogue row (spec: EndpointInfoOut), plus the GraphQL root fields tied to it. */
export interface EndpointInfo {
  /** Stable operation id, also the OpenAPI operationId. */
  operationId: string;
  method: 'GET' | 'POST';
  path: string;
  premium: boolean;
  /** Credits per request, or per block with unit pricing; 0 = free. */
  creditCost: number;
  /** Polling suggestion in seconds; null = on demand. */
  recommendedIntervalSeconds: number | null;
  rateLimit: RateLimitSpec | null;
  unitPricing: UnitPricingSpec | null;
  /** `user` = API key, `admin`, `machine` = service token; empty = public. */
  roles: string[];
  /** GraphQL root fields that do this operation's work (charged and limited as this row). */
  graphqlFields: string[];
}

const pub = { premium: false, creditCost: 0, rateLimit: null, unitPricing: null, roles: [] as string[], graphqlFields: [] as string[] };

/** The 13 documented operations, as the spec's summary table gives them. */
export const ENDPOINTS: readonly EndpointInfo[] = [
  { ...pub, operationId: 'listWebsites', method: 'GET', path: '/websites', recommendedIntervalSeconds: 300 },
  { ...pub, operationId: 'getWebsite', method: 'GET', path: '/websites/{code}', recommendedIntervalSeconds: 300 },
  { ...pub, operationId: 'getFeeSchedule', method: 'GET', path: '/websites/{code}/fee-schedule', recommendedIntervalSeconds: 300 },
  { ...pub, operationId: 'listCurrencies', method: 'GET', path: '/currencies', recommendedIntervalSeconds: 300 },
  { ...pub, operationId: 'getCurrency', method: 'GET', path: '/currencies/{currency_id}', recommendedIntervalSeconds: 300 },
  {
    operationId: 'getPrices', method: 'GET', path: '/prices', premium: false, creditCost: 1, recommendedIntervalSeconds: 60,
    rateLimit: { maxRequests: 120, windowSeconds: 60 }, unitPricing: null, roles: ['user'], graphqlFields: ['prices'],
  },
  {
    operationId: 'batchPrices', method: 'POST', path: '/prices/batch', premium: false, creditCost: 1, recommendedIntervalSeconds: 60,
    rateLimit: { maxRequests: 20, windowSeconds: 60 }, unitPricing: { unitSize: 100, unitsBodyField: 'market_hash_names', maxUnits: 1000 },
    roles: ['user'], graphqlFields: ['batchPrices'],
  },
  {
    operationId: 'exportPrices', method: 'GET', path: '/prices/export', premium: false, creditCost: 10, recommendedIntervalSeconds: 300,
    rateLimit: { maxRequests: 2, windowSeconds: 60 }, unitPricing: null, roles: ['user'], graphqlFields: [],
  },
  { ...pub, operationId: 'getMe', method: 'GET', path: '/me', recommendedIntervalSeconds: 60, roles: ['user'], graphqlFields: ['me'] },
  { ...pub, operationId: 'getStatus', method: 'GET', path: '/status', recommendedIntervalSeconds: 60 },
  { ...pub, operationId: 'getHealth', method: 'GET', path: '/health', recommendedIntervalSeconds: 30 },
  { ...pub, operationId: 'getConfig', method: 'GET', path: '/config', recommendedIntervalSeconds: 3600 },
  { ...pub, operationId: 'listEndpoints', method: 'GET', path: '/endpoints', recommendedIntervalSeconds: 3600 },
];

/** Catalogue rows sorted by path then method (spec: GET /endpoints ordering). */
export function sortedEndpoints(): EndpointInfo[] {
  return [...ENDPOINTS].sort((a, b) => byCodePoint(a.path, b.path) || byCodePoint(a.method, b.method));
}

/** The catalogue row with this operation id; throws for an unknown id (a programming error). */
export function endpoint(operationId: string): EndpointInfo {
  const row = ENDPOINTS.find((e) => e.operationId === operationId);
  if (!row) throw new Error(`no catalogue row ${operationId}`);
  return row;
}
