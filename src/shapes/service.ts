/** The service's own answers (spec: GET /status, /endpoints, /health, /config), as /openapi.json states them. */
import { z } from 'zod';

const unixKey = z.string().regex(/^\d+$/).meta({ description: 'Bucket start, Unix seconds.' });
const score = z.string().regex(/^(100\.00|\d{1,2}\.\d{2})$/);
/** StatusOut (spec: Status): the five areas; inner shapes are Quotegate's (README, Status). */
export const StatusOut = z
  .strictObject({
    summary: z.record(z.string(), z.record(unixKey, score)).meta({ description: 'Area -> completed UTC hour start -> score 0.00-100.00. Hours without data are absent.' }),
    service: z
      .record(z.string(), z.record(unixKey, z.strictObject({ ok: z.int().min(0), total: z.int().min(1), availability: score, latency_ms: z.int().min(0) })))
      .meta({ description: 'Component (web, api, api_cn, monitor) -> 15-minute bucket -> probes that succeeded, probes, availability, mean latency. Empty when no URL is configured.' }),
    datasource: z
      .strictObject({
        realtime: z.record(z.string(), z.record(unixKey, z.int().min(0))).meta({ description: 'Market -> minute -> quotes received (last 10 minutes).' }),
        result: z.record(z.string(), z.record(unixKey, z.int().min(0))).meta({ description: 'Market -> hour -> quotes received (last 24 hours).' }),
      }),
    infrastructure: z
      .record(z.string(), z.record(unixKey, z.strictObject({ latency_ms: z.int().min(0) })))
      .meta({ description: 'Component -> 5-minute bucket whose check passed -> check latency. A missing bucket: the check failed or did not run.' }),
    distribution: z
      .record(z.string().regex(/^-?\d+(\.\d+)?,-?\d+(\.\d+)?$/), z.strictObject({ node_count: z.int().min(0), datacenter_count: z.int().min(0) }))
      .meta({ description: '"latitude,longitude" -> proxy nodes and datacenters there. Empty when none is configured.' }),
  })
  .meta({ id: 'StatusOut' });

/** GET /endpoints entries (spec: EndpointInfo). */
export const EndpointInfoOut = z
  .strictObject({
    method: z.string(),
    path: z.string(),
    premium: z.boolean(),
    credit_cost: z.int().min(0).meta({ description: 'Credits per request (with unit_pricing: per block of units); 0 = free.' }),
    recommended_interval_seconds: z.int().nullable(),
    rate_limit: z.strictObject({ max_requests: z.int().positive(), window_seconds: z.int().positive() }).nullable(),
    unit_pricing: z.strictObject({ unit_size: z.int().positive(), units_body_field: z.string(), max_units: z.int().positive() }).nullable(),
    roles: z.array(z.string()),
  })
  .meta({ id: 'EndpointInfoOut' });


/** GET /health (spec: a bare object, no envelope). */
export const HealthOut = z.strictObject({ status: z.literal('ok') }).meta({ id: 'HealthOut' });
/** GET /config (spec). */
export const ConfigOut = z.strictObject({ home_currency: z.string() }).meta({ id: 'ConfigOut' });
