/** GraphQL types and root fields for liveness, public configuration and endpoint metadata (spec: /health, /config, /endpoints). */
import { builder, listComplexity } from '../builder.js';
import { sortedEndpoints, type EndpointInfo, type RateLimitSpec, type UnitPricingSpec } from '../../catalogue/endpoints.js';
import { HOME_CURRENCY } from '../../services/catalogue-import.js';
import { readStatus } from '../../services/status.js';
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

builder.queryFields((t) => ({
  health: t.field({ type: HealthRef, description: 'Always ok while the service runs.', resolve: () => ({ status: 'ok' }) }),
  status: t.field({
    type: 'JSONObject',
    // GraphQL cost (src/plugins/safety.ts): a five-query transaction over 24 hours of recorded history, whose
    // answer grows with it; at most five `status` fields fit in one operation.
    extensions: { complexity: 240_000 },
    description:
      'Recorded service status history (REST: StatusOut): summary, service, datasource, infrastructure, distribution. ' +
      'Read from what the recorder jobs stored, never probed live; 503 dependency_unavailable when it cannot be read.',
    resolve: async (_root, _args, ctx) => {
      try {
        return await readStatus(ctx.db, ctx.status, ctx.now);
      } catch (e) {
        ctx.state.log?.warn({ err: e }, 'status history unreadable');
        throw dependencyUnavailable('The status history cannot be read right now; no partial result is returned.', 30);
      }
    },
  }),
  config: t.field({ type: ConfigRef, resolve: () => ({ homeCurrency: HOME_CURRENCY }) }),
  endpoints: t.field({ type: [EndpointInfoRef], extensions: listComplexity(16), description: 'Every documented operation, sorted by path then method.', resolve: () => sortedEndpoints() }),
}));
