/** GraphQL types and root fields for liveness, public configuration and endpoint metadata (spec: /health, /config, /endpoints). */
import { builder, listComplexity } from '../builder.js';
import { sortedEndpoints, type EndpointInfo, type RateLimitSpec, type UnitPricingSpec } from '../../catalogue/endpoints.js';
import { HOME_CURRENCY } from '../../catalogue/import.js';
import { readStatus, type StatusData } from '../../status/status.js';
import { dependencyUnavailable } from '../../lib/errors.js';

const HealthRef = builder.objectRef<{ status: string }>('Health').implement({
  description: 'Liveness only: checks no dependency.',
  fields: (t) => ({ status: t.exposeString('status') }),
});

const ConfigRef = builder.objectRef<{ homeCurrency: string }>('Config').implement({
  fields: (t) => ({
    homeCurrency: t.exposeString('homeCurrency', { description: 'ISO 4217 code official chains convert results into.' }),
  }),
});

const RateLimitRef = builder.objectRef<RateLimitSpec>('RateLimitSpec').implement({
  fields: (t) => ({ maxRequests: t.exposeInt('maxRequests'), windowSeconds: t.exposeInt('windowSeconds') }),
});

const UnitPricingRef = builder.objectRef<UnitPricingSpec>('UnitPricingSpec').implement({
  fields: (t) => ({ unitSize: t.exposeInt('unitSize'), unitsBodyField: t.exposeString('unitsBodyField'), maxUnits: t.exposeInt('maxUnits') }),
});

const EndpointInfoRef = builder.objectRef<EndpointInfo>('EndpointInfo').implement({
  description: 'Access and cost metadata of one documented REST operation (REST: EndpointInfoOut).',
  fields: (t) => ({
    method: t.exposeString('method'),
    path: t.exposeString('path'),
    premium: t.exposeBoolean('premium'),
    creditCost: t.exposeInt('creditCost'),
    recommendedIntervalSeconds: t.exposeInt('recommendedIntervalSeconds', { nullable: true }),
    rateLimit: t.field({ type: RateLimitRef, nullable: true, resolve: (e) => e.rateLimit }),
    unitPricing: t.field({ type: UnitPricingRef, nullable: true, resolve: (e) => e.unitPricing }),
    roles: t.exposeStringList('roles'),
  }),
});

/** One scored hour of one area (StatusOut.summary): the score as a decimal string between 0 and 1. */
interface StatusScore {
  area: string;
  bucketStart: Date;
  score: string;
}
/** One 15-minute bucket of probes of one public component (StatusOut.service). */
interface ServiceBucket {
  component: string;
  bucketStart: Date;
  ok: number;
  total: number;
  availability: string;
  latencyMs: number;
}
/** Quote observations of one market in one bucket (StatusOut.datasource). */
interface DatasourceCount {
  marketCode: string;
  bucketStart: Date;
  observations: number;
}
/** One passed 5-minute health check of one backing component (StatusOut.infrastructure). */
interface InfrastructureBucket {
  component: string;
  bucketStart: Date;
  latencyMs: number;
}
/** Proxy nodes at one place (StatusOut.distribution). */
interface ProxyPlace {
  latitude: string;
  longitude: string;
  nodeCount: number;
  datacenterCount: number;
}

/** The status history as typed lists (the REST StatusOut keys its maps by name and bucket start in Unix seconds). */
interface StatusHistory {
  summary: StatusScore[];
  service: ServiceBucket[];
  datasourceRealtime: DatasourceCount[];
  datasourceHourly: DatasourceCount[];
  infrastructure: InfrastructureBucket[];
  distribution: ProxyPlace[];
}

const at = (unixSeconds: string) => new Date(Number(unixSeconds) * 1000);

/** StatusData (REST maps) as StatusHistory (typed lists), in the maps' key order. */
export function statusHistory(d: StatusData): StatusHistory {
  const flat = <V, R>(m: Record<string, Record<string, V>>, f: (name: string, bucket: string, v: V) => R) =>
    Object.entries(m).flatMap(([name, buckets]) => Object.entries(buckets).map(([bucket, v]) => f(name, bucket, v)));
  const counts = (m: Record<string, Record<string, number>>) => flat(m, (marketCode, b, observations) => ({ marketCode, bucketStart: at(b), observations }));
  return {
    summary: flat(d.summary, (area, b, score) => ({ area, bucketStart: at(b), score })),
    service: flat(d.service, (component, b, v) => ({ component, bucketStart: at(b), ok: v.ok, total: v.total, availability: v.availability, latencyMs: v.latency_ms })),
    datasourceRealtime: counts(d.datasource.realtime),
    datasourceHourly: counts(d.datasource.result),
    infrastructure: flat(d.infrastructure, (component, b, v) => ({ component, bucketStart: at(b), latencyMs: v.latency_ms })),
    distribution: Object.entries(d.distribution).map(([place, v]) => {
      const [latitude = '', longitude = ''] = place.split(',');
      return { latitude, longitude, nodeCount: v.node_count, datacenterCount: v.datacenter_count };
    }),
  };
}

const StatusScoreRef = builder.objectRef<StatusScore>('StatusScore').implement({
  description: 'The score of one area in one completed UTC hour (REST: StatusOut.summary).',
  fields: (t) => ({
    area: t.exposeString('area', { description: 'service, infrastructure or datasource.' }),
    bucketStart: t.field({ type: 'DateTime', resolve: (x) => x.bucketStart }),
    score: t.exposeString('score', { description: 'Between 0 and 1, as a decimal string.' }),
  }),
});
const ServiceBucketRef = builder.objectRef<ServiceBucket>('ServiceProbeBucket').implement({
  description: 'Probes of one public component in one 15-minute bucket (REST: StatusOut.service).',
  fields: (t) => ({
    component: t.exposeString('component'),
    bucketStart: t.field({ type: 'DateTime', resolve: (x) => x.bucketStart }),
    ok: t.exposeInt('ok'),
    total: t.exposeInt('total'),
    availability: t.exposeString('availability', { description: 'ok / total, as a decimal string.' }),
    latencyMs: t.exposeInt('latencyMs', { description: 'Mean latency of the successful probes, in milliseconds.' }),
  }),
});
const DatasourceCountRef = builder.objectRef<DatasourceCount>('DatasourceCount').implement({
  description: 'Quote observations ingested for one market in one bucket (REST: StatusOut.datasource).',
  fields: (t) => ({
    marketCode: t.exposeString('marketCode'),
    bucketStart: t.field({ type: 'DateTime', resolve: (x) => x.bucketStart }),
    observations: t.exposeInt('observations'),
  }),
});
const InfrastructureBucketRef = builder.objectRef<InfrastructureBucket>('InfrastructureCheckBucket').implement({
  description: 'A passed health check of one backing component in one 5-minute bucket (REST: StatusOut.infrastructure; a failed check has no entry).',
  fields: (t) => ({
    component: t.exposeString('component'),
    bucketStart: t.field({ type: 'DateTime', resolve: (x) => x.bucketStart }),
    latencyMs: t.exposeInt('latencyMs'),
  }),
});
const ProxyPlaceRef = builder.objectRef<ProxyPlace>('ProxyPlace').implement({
  description: 'Proxy nodes at one place (REST: StatusOut.distribution).',
  fields: (t) => ({
    latitude: t.exposeString('latitude'),
    longitude: t.exposeString('longitude'),
    nodeCount: t.exposeInt('nodeCount'),
    datacenterCount: t.exposeInt('datacenterCount'),
  }),
});
const StatusHistoryRef = builder.objectRef<StatusHistory>('StatusHistory').implement({
  description: 'The recorded status history of the last 24 hours as typed lists; the same data as `status` (REST: StatusOut).',
  fields: (t) => ({
    summary: t.field({ type: [StatusScoreRef], resolve: (x) => x.summary }),
    service: t.field({ type: [ServiceBucketRef], resolve: (x) => x.service }),
    datasourceRealtime: t.field({ type: [DatasourceCountRef], description: 'Per market and minute, the last 10 minutes.', resolve: (x) => x.datasourceRealtime }),
    datasourceHourly: t.field({ type: [DatasourceCountRef], description: 'Per market and hour, the last 24 hours.', resolve: (x) => x.datasourceHourly }),
    infrastructure: t.field({ type: [InfrastructureBucketRef], resolve: (x) => x.infrastructure }),
    distribution: t.field({ type: [ProxyPlaceRef], resolve: (x) => x.distribution }),
  }),
});

/** Reads the status history for a resolver; 503 `dependency_unavailable` when it cannot be read. */
async function statusOf(ctx: import('../context.js').Context): Promise<StatusData> {
  try {
    return await readStatus(ctx.db, ctx.status, ctx.now);
  } catch (e) {
    ctx.state.log?.warn({ err: e }, 'status history unreadable');
    throw dependencyUnavailable('The status history cannot be read right now; no partial result is returned.', 30);
  }
}

builder.queryFields((t) => ({
  health: t.field({ type: HealthRef, description: 'Always ok while the service runs.', resolve: () => ({ status: 'ok' }) }),
  status: t.field({
    type: 'JSONObject',
    deprecationReason: 'Untyped JSON: use `statusHistory`, the same history as typed lists. Kept for compatibility (GET /status answers the same object).',
    // GraphQL cost (src/plugins/safety.ts): a five-query transaction over 24 hours of recorded history, whose
    // answer grows with it; at most five `status` fields fit in one operation.
    extensions: { complexity: 240_000 },
    description:
      'Recorded service status history (REST: StatusOut): summary, service, datasource, infrastructure, distribution. ' +
      'Read from what the recorder jobs stored, never probed live; 503 dependency_unavailable when it cannot be read.',
    resolve: (_root, _args, ctx) => statusOf(ctx),
  }),
  statusHistory: t.field({
    type: StatusHistoryRef,
    // Priced like `status`: the same reads, an answer of the same size.
    extensions: { complexity: 240_000 },
    description: 'The same history as `status`, typed: one list entry per area or component and bucket (bucket starts as DateTime).',
    resolve: async (_root, _args, ctx) => statusHistory(await statusOf(ctx)),
  }),
  config: t.field({ type: ConfigRef, resolve: () => ({ homeCurrency: HOME_CURRENCY }) }),
  endpoints: t.field({ type: [EndpointInfoRef], extensions: listComplexity(16), description: 'Every documented operation, sorted by path then method.', resolve: () => sortedEndpoints() }),
}));
