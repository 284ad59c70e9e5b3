/** GraphQL types and root fields for liveness, public configuration and endpoint metadata (spec: /health, /config, /endpoints). */
import { builder, listComplexity } from '../builder.js';
import { sortedEndpoints, type EndpointInfo, type RateLimitSpec, type UnitPricingSpec } from '../../catalogue/endpoints.js';
import { HOME_CURRENCY } from '../../services/catalogue-import.js';

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
  config: t.field({ type: ConfigRef, resolve: () => ({ homeCurrency: HOME_CURRENCY }) }),
  endpoints: t.field({ type: [EndpointInfoRef], extensions: listComplexity(16), description: 'Every documented operation, sorted by path then method.', resolve: () => sortedEndpoints() }),
}));
