/**
 * The endpoint catalogue: one row per documented operation (spec: "Summary of access and cost",
 * Limits, EndpointInfoOut), kept as data in `data/endpoints.json`. `GET /endpoints`, the OpenAPI `x-quotegate` extension, billing and rate
 * limits all read these rows; GraphQL root fields doing the same work as a metered REST operation
 * name the row they share (`graphqlFields`), and so do the nested fields (`Type.field`) that reach its data.
 */

import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { byCodePoint } from '../lib/order.js';
import { projectRoot } from '../lib/paths.js';

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
  method: 'GET' | 'POST' | 'DELETE';
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
  /**
   * GraphQL fields that do this operation's work (charged and limited as this row): root fields by name, and metered
   * edges by schema coordinate `Type.field` (nested fields that reach the same priced data from anywhere, charged per
   * delivered instance; src/plugins/metering/plan.ts METERED_EDGES, docs/graphql.md).
   */
  graphqlFields: string[];
}

const rowSchema = z
  .object({
    operation_id: z.string().regex(/^[a-z][A-Za-z]+$/),
    method: z.enum(['GET', 'POST', 'DELETE']),
    path: z.string().startsWith('/'),
    roles: z.array(z.enum(['user', 'admin', 'machine'])),
    premium: z.boolean(),
    credit_cost: z.number().int().min(0),
    unit_pricing: z.object({ unit_size: z.number().int().positive(), units_body_field: z.string().min(1), max_units: z.number().int().positive() }).strict().nullable(),
    rate_limit: z.object({ max_requests: z.number().int().positive(), window_seconds: z.number().int().positive() }).strict().nullable(),
    recommended_interval_seconds: z.number().int().positive().nullable(),
    graphql_fields: z.array(z.string().regex(/^([A-Z][A-Za-z0-9]*\.)?[a-z][A-Za-z0-9]*$/, { message: 'a root field name or a Type.field coordinate' })),
  })
  .strict();

/** Where the catalogue lives: data, read once at start (our transcription of the spec's summary table and Limits). */
export const CATALOGUE_FILE = path.join(projectRoot, 'data', 'endpoints.json');

/**
 * Reads and validates the catalogue file. Throws at start-up when a row breaks the shape, an
 * operation id or method+path repeats, or a GraphQL field is tied to two rows.
 */
export function loadCatalogue(file = CATALOGUE_FILE): EndpointInfo[] {
  const rows = z.array(rowSchema).parse(JSON.parse(fs.readFileSync(file, 'utf8')));
  const seen = new Set<string>();
  for (const r of rows) {
    for (const k of [r.operation_id, `${r.method} ${r.path}`, ...r.graphql_fields.map((f) => `field ${f}`)]) {
      if (seen.has(k)) throw new Error(`${file}: ${k} appears twice`);
      seen.add(k);
    }
  }
  return rows.map((r) => ({
    operationId: r.operation_id,
    method: r.method,
    path: r.path,
    premium: r.premium,
    creditCost: r.credit_cost,
    recommendedIntervalSeconds: r.recommended_interval_seconds,
    rateLimit: r.rate_limit && { maxRequests: r.rate_limit.max_requests, windowSeconds: r.rate_limit.window_seconds },
    unitPricing: r.unit_pricing && { unitSize: r.unit_pricing.unit_size, unitsBodyField: r.unit_pricing.units_body_field, maxUnits: r.unit_pricing.max_units },
    roles: r.roles,
    graphqlFields: r.graphql_fields,
  }));
}

/** The documented operations: the spec's 13 and the extensions (data/endpoints.json). */
export const ENDPOINTS: readonly EndpointInfo[] = loadCatalogue();

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
