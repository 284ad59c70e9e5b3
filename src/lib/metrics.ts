/**
 * Prometheus metrics (prom-client), served at GET /metrics by every replica. One registry per
 * process; labels carry operation ids and statuses only (never account ids or keys).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The process's registry. */
export const registry = new Registry();

let defaults = false;
/** Adds Node's process metrics (CPU, memory, event loop lag) once per process; the server calls it. */
export function collectProcessMetrics(): void {
  if (defaults) return;
  defaults = true;
  collectDefaultMetrics({ register: registry, prefix: 'quotegate_' });
}

/** HTTP requests by catalogue operation (`graphql`, `metrics`, `unmatched` outside the catalogue), method and status. */
export const httpRequests = new Counter({
  name: 'quotegate_http_requests_total',
  help: 'HTTP requests answered, by operation, method and status.',
  labelNames: ['operation', 'method', 'status'] as const,
  registers: [registry],
});

/** Time to answer (headers ready; a streamed export body may take longer), in seconds. */
export const httpDuration = new Histogram({
  name: 'quotegate_http_request_duration_seconds',
  help: 'Time until the response headers were ready, by operation and status, in seconds.',
  labelNames: ['operation', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** Credits charged, by catalogue operation (comma-joined for GraphQL operations with several metered fields). */
export const creditsCharged = new Counter({
  name: 'quotegate_credits_charged_total',
  help: 'Credits charged to accounts, by operation.',
  labelNames: ['operation'] as const,
  registers: [registry],
});

/** Charges answered from a credit lease that was swept before they were recorded (accounts/credit-leases.ts). */
export const creditLeaseDropped = new Counter({
  name: 'quotegate_credit_lease_dropped_total',
  help: 'Charges answered from a lease that expired before they were recorded (served, not charged).',
  registers: [registry],
});

/** Times the live hub read the change sequence, by what woke it (live/live.ts). */
export const liveWakes = new Counter({
  name: 'quotegate_live_wakes_total',
  help: 'Reads of the change sequence by the live hub, by what woke it: postgres (NOTIFY), redis (pub/sub), poll, subscribe.',
  labelNames: ['source'] as const,
  registers: [registry],
});

/** Live subscriptions reading their backlog now (a `since` behind the hub, live/live.ts). */
export const liveReplays = new Gauge({
  name: 'quotegate_live_replays',
  help: 'Live subscriptions reading their backlog of changes now (started with a since behind the live position).',
  registers: [registry],
});

/** Rows of the change sequence read by live replays (bounded chunks, quotes/changes.ts scanChanges). */
export const liveReplayRows = new Counter({
  name: 'quotegate_live_replay_rows_total',
  help: 'Rows of the change sequence read by live subscriptions catching up on their backlog.',
  registers: [registry],
});

/** Open live subscriptions ended by a re-check of their entitlement (live/live-billing.ts), by error code. */
export const liveEntitlementEnds = new Counter({
  name: 'quotegate_live_entitlement_ends_total',
  help: 'Open live subscriptions ended because their key was revoked, their account disabled or a minute could not be paid, by error code.',
  labelNames: ['code'] as const,
  registers: [registry],
});

/** Requests refused with 429, by catalogue operation. */
export const rateLimitRejections = new Counter({
  name: 'quotegate_rate_limit_rejections_total',
  help: 'Requests refused by a rate limit (429), by operation.',
  labelNames: ['operation'] as const,
  registers: [registry],
});

/** Export snapshot build durations, by side and whether the build was published, in seconds. */
export const snapshotBuildSeconds = new Histogram({
  name: 'quotegate_export_build_duration_seconds',
  help: 'Export snapshot build time, by side, file format (json, ndjson) and outcome (published or unchanged), in seconds.',
  labelNames: ['side', 'format', 'outcome'] as const,
  buckets: [0.1, 0.5, 1, 5, 10, 30, 60, 120, 300],
  registers: [registry],
});

/** Quote observations through the ingestion service, by outcome. */
export const ingestedObservations = new Counter({
  name: 'quotegate_ingested_observations_total',
  help: 'Quote observations ingested, by outcome (inserted, updated, skipped as unchanged or stale).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});
